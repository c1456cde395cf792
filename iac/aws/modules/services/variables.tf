variable "name" {
  description = "Deployment name; the cluster is called <name>, the services <name>-ingest and <name>-control."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "image" {
  description = "Container image holding the `ladder` command, e.g. <account>.dkr.ecr.<region>.amazonaws.com/ladder:1.2.3."
  type        = string

  validation {
    condition     = length(var.image) > 0 && !endswith(var.image, ":latest")
    error_message = "image must be set and pinned to a tag or digest other than :latest (tasks of one service must run the same code)."
  }
}

variable "cpu_architecture" {
  description = "CPU architecture of the image: X86_64 or ARM64."
  type        = string
  default     = "X86_64"

  validation {
    condition     = contains(["X86_64", "ARM64"], var.cpu_architecture)
    error_message = "cpu_architecture must be X86_64 or ARM64."
  }
}

variable "ingest_command" {
  description = "Arguments of the ingest containers' `ladder` (the image's entrypoint, see the Dockerfile)."
  type        = list(string)
  default     = ["ingest"]
}

variable "control_command" {
  description = "Arguments of the control plane container's `ladder` (the image's entrypoint)."
  type        = list(string)
  default     = ["control"]
}

variable "ingest_cpu" {
  description = "Fargate CPU units per ingest task (1024 = one vCPU)."
  type        = number
  default     = 1024

  validation {
    condition     = contains([256, 512, 1024, 2048, 4096, 8192, 16384], var.ingest_cpu)
    error_message = "ingest_cpu must be a Fargate CPU size: 256, 512, 1024, 2048, 4096, 8192 or 16384."
  }
}

variable "ingest_memory_mb" {
  description = "Memory per ingest task in MiB (must be a valid Fargate pairing with ingest_cpu)."
  type        = number
  default     = 2048

  validation {
    condition     = var.ingest_memory_mb >= 512 && var.ingest_memory_mb <= 122880
    error_message = "ingest_memory_mb must be between 512 and 122880."
  }
}

variable "control_cpu" {
  description = "Fargate CPU units of the control plane task."
  type        = number
  default     = 256

  validation {
    condition     = contains([256, 512, 1024, 2048, 4096, 8192, 16384], var.control_cpu)
    error_message = "control_cpu must be a Fargate CPU size: 256, 512, 1024, 2048, 4096, 8192 or 16384."
  }
}

variable "control_memory_mb" {
  description = "Memory of the control plane task in MiB."
  type        = number
  default     = 512

  validation {
    condition     = var.control_memory_mb >= 512 && var.control_memory_mb <= 122880
    error_message = "control_memory_mb must be between 512 and 122880."
  }
}

variable "ingest_min_count" {
  description = "Fewest ingest tasks (also the count at creation). Two keeps books alive through a task loss."
  type        = number
  default     = 2

  validation {
    condition     = var.ingest_min_count >= 1
    error_message = "ingest_min_count must be at least 1."
  }
}

variable "ingest_max_count" {
  description = "Most ingest tasks autoscaling may run."
  type        = number
  default     = 10

  validation {
    condition     = var.ingest_max_count >= 1 && var.ingest_max_count <= 1000
    error_message = "ingest_max_count must be between 1 and 1000."
  }
}

variable "ingest_cpu_target_percent" {
  description = "Average CPU of the ingest service that autoscaling holds (percent)."
  type        = number
  default     = 60

  validation {
    condition     = var.ingest_cpu_target_percent >= 10 && var.ingest_cpu_target_percent <= 90
    error_message = "ingest_cpu_target_percent must be between 10 and 90."
  }
}

variable "ingest_stop_timeout_seconds" {
  description = "Seconds between SIGTERM and SIGKILL for an ingest task: time to drain its books (Fargate caps it at 120)."
  type        = number
  default     = 120

  validation {
    condition     = var.ingest_stop_timeout_seconds >= 30 && var.ingest_stop_timeout_seconds <= 120
    error_message = "ingest_stop_timeout_seconds must be between 30 (enough to drain) and 120 (the Fargate maximum)."
  }
}

variable "control_stop_timeout_seconds" {
  description = "Seconds between SIGTERM and SIGKILL for the control plane task."
  type        = number
  default     = 30

  validation {
    condition     = var.control_stop_timeout_seconds >= 2 && var.control_stop_timeout_seconds <= 120
    error_message = "control_stop_timeout_seconds must be between 2 and 120."
  }
}

variable "container_insights" {
  description = "Turn on CloudWatch Container Insights for the cluster (extra per-task metrics, extra cost)."
  type        = bool
  default     = false
}

variable "subnet_ids" {
  description = "Private subnets the tasks run in."
  type        = list(string)
}

variable "ingest_security_group_id" {
  description = "Security group of the ingest tasks."
  type        = string
}

variable "control_security_group_id" {
  description = "Security group of the control plane task."
  type        = string
}

variable "execution_role_arn" {
  description = "Task execution role (image pull, log delivery)."
  type        = string
}

variable "ingest_task_role_arn" {
  description = "Task role of the ingest nodes."
  type        = string
}

variable "control_task_role_arn" {
  description = "Task role of the control plane."
  type        = string
}

variable "ingest_log_group_name" {
  description = "Log group of the ingest tasks."
  type        = string
}

variable "control_log_group_name" {
  description = "Log group of the control plane task."
  type        = string
}

variable "redis_url" {
  description = "rediss:// URL of the store, without credentials (LADDER_REDIS_URL)."
  type        = string

  validation {
    condition     = startswith(var.redis_url, "rediss://")
    error_message = "redis_url must use TLS (rediss://)."
  }
}

variable "redis_cluster" {
  description = "Whether the store runs in cluster mode (LADDER_REDIS_CLUSTER)."
  type        = bool
  default     = false
}

variable "table_name" {
  description = "Name of the control table (LADDER_DYNAMODB_TABLE)."
  type        = string
}

variable "api_key_pepper_secret_arn" {
  description = "ARN of the API-key pepper secret, injected as LADDER_PEPPER (control plane only)."
  type        = string
}

variable "admin_key_secret_arn" {
  description = "ARN of the admin key secret, injected as LADDER_ADMIN_KEY (control plane only)."
  type        = string
}

variable "store_auth_token_secret_arn" {
  description = "ARN of the store AUTH token secret, injected as LADDER_REDIS_PASSWORD."
  type        = string
}

variable "alpaca_credentials_secret_arn" {
  description = "ARN of the Alpaca key pool secret, injected as LADDER_ALPACA_CREDENTIALS (ingest and control); empty: none."
  type        = string
  default     = ""
}

variable "extra_environment" {
  description = "Further LADDER_* settings for both services (venue URLs, depth, ...); the store, table and secret settings always win."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

variable "ops_port" {
  description = "Port of each process's loopback ops server (/metrics, /livez, /readyz): LADDER_METRICS_PORT."
  type        = number
  default     = 9464

  validation {
    condition     = var.ops_port >= 1024 && var.ops_port <= 65535
    error_message = "ops_port must be between 1024 and 65535 (the image runs as an unprivileged user)."
  }
}

variable "health_check_interval_seconds" {
  description = "Seconds between two container health checks (/livez)."
  type        = number
  default     = 15

  validation {
    condition     = var.health_check_interval_seconds >= 5 && var.health_check_interval_seconds <= 300
    error_message = "health_check_interval_seconds must be between 5 and 300 (ECS's range)."
  }
}

variable "health_check_timeout_seconds" {
  description = "Seconds ECS waits for one health check before counting it failed."
  type        = number
  default     = 5

  validation {
    condition     = var.health_check_timeout_seconds >= 2 && var.health_check_timeout_seconds <= 60
    error_message = "health_check_timeout_seconds must be between 2 and 60 (ECS's range; the probe itself gives up a second earlier)."
  }
}

variable "health_check_retries" {
  description = "Failed health checks in a row before ECS replaces the task."
  type        = number
  default     = 3

  validation {
    condition     = var.health_check_retries >= 1 && var.health_check_retries <= 10
    error_message = "health_check_retries must be between 1 and 10 (ECS's range)."
  }
}

variable "health_check_start_period_seconds" {
  description = "Seconds after start during which failed health checks do not count."
  type        = number
  default     = 30

  validation {
    condition     = var.health_check_start_period_seconds >= 0 && var.health_check_start_period_seconds <= 300
    error_message = "health_check_start_period_seconds must be between 0 and 300 (ECS's range)."
  }
}
