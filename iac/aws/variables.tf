# --- deployment -------------------------------------------------------------------------------

variable "name" {
  description = "Deployment name, the prefix of every resource name (table \"<name>-control\", function \"<name>-read\", ...)."
  type        = string
  default     = "ladder"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "region" {
  description = "AWS region to deploy into, e.g. ap-northeast-1 (near the Binance matching engines)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as eu-west-1."
  }
}

variable "tags" {
  description = "Tags added to every resource, besides Project and Deployment."
  type        = map(string)
  default     = {}
}

# --- network ----------------------------------------------------------------------------------

variable "vpc_cidr" {
  description = "IPv4 CIDR of the VPC (/22 or shorter)."
  type        = string
  default     = "10.40.0.0/16"

  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0))
    error_message = "vpc_cidr must be an IPv4 CIDR block."
  }
}

variable "availability_zones" {
  description = "The two availability zones to use; empty picks the region's first two."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.availability_zones) == 0 || length(var.availability_zones) == 2
    error_message = "availability_zones must be empty or list exactly two zones."
  }
}

variable "single_nat_gateway" {
  description = "One NAT gateway for both zones (cheaper) instead of one per zone (zone-outage proof)."
  type        = bool
  default     = true
}

# --- secrets ----------------------------------------------------------------------------------

variable "alpaca_credentials_secret_arn" {
  description = "ARN of an existing secret holding the Alpaca key pool, KEY_ID:SECRET,... (alpaca-crypto in LADDER_EXCHANGES); empty: no Alpaca."
  type        = string
  default     = ""
}

variable "api_key_pepper" {
  description = "Pepper for API-key HMACs (>= 32 characters). Changing it invalidates every issued key."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.api_key_pepper) >= 32
    error_message = "api_key_pepper must be at least 32 characters."
  }
}

variable "admin_key" {
  description = "Bootstrap operator key for /v1/admin (>= 32 characters)."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.admin_key) >= 32
    error_message = "admin_key must be at least 32 characters."
  }
}

variable "store_auth_token" {
  description = "Valkey AUTH token: 16-128 printable ASCII characters other than space, '\"', '/' and '@'."
  type        = string
  sensitive   = true

  validation {
    condition     = can(regex("^[!#-.0-?A-~]{16,128}$", var.store_auth_token))
    error_message = "store_auth_token must be 16-128 printable ASCII characters other than space, '\"', '/' and '@'."
  }
}

variable "secret_recovery_window_days" {
  description = "Days a deleted secret stays recoverable: 0 or 7-30."
  type        = number
  default     = 7

  validation {
    condition     = var.secret_recovery_window_days == 0 || (var.secret_recovery_window_days >= 7 && var.secret_recovery_window_days <= 30)
    error_message = "secret_recovery_window_days must be 0 or between 7 and 30."
  }
}

# --- control table ----------------------------------------------------------------------------

variable "control_table_deletion_protection" {
  description = "Protect the control table (tenants, keys, subscriptions) from deletion."
  type        = bool
  default     = true
}

# --- book store -------------------------------------------------------------------------------

variable "store_engine_version" {
  description = "Valkey engine version (7.x or 8.x)."
  type        = string
  default     = "8.0"

  validation {
    condition     = can(regex("^[78]\\.[0-9]+$", var.store_engine_version))
    error_message = "store_engine_version must be a Valkey 7.x or 8.x version such as \"8.0\"."
  }
}

variable "store_node_type" {
  description = "ElastiCache node type of the store."
  type        = string
  default     = "cache.t4g.small"

  validation {
    condition     = can(regex("^cache\\.[a-z0-9]+\\.[a-z0-9]+$", var.store_node_type))
    error_message = "store_node_type must look like cache.<family>.<size>."
  }
}

variable "store_cluster_mode_enabled" {
  description = "Shard the store (Valkey cluster mode); the processes then use the cluster protocol."
  type        = bool
  default     = false
}

variable "store_shards" {
  description = "Shards (node groups, each a primary with its replicas) when cluster mode is enabled; books spread over them by hash slot."
  type        = number
  default     = 2

  validation {
    condition     = var.store_shards >= 1 && var.store_shards <= 90 && floor(var.store_shards) == var.store_shards
    error_message = "store_shards must be a whole number between 1 and 90."
  }
}

variable "store_replicas_per_shard" {
  description = "Replicas per shard (0-5); any replica turns on automatic failover and multi-AZ."
  type        = number
  default     = 1

  validation {
    condition     = var.store_replicas_per_shard >= 0 && var.store_replicas_per_shard <= 5 && floor(var.store_replicas_per_shard) == var.store_replicas_per_shard
    error_message = "store_replicas_per_shard must be a whole number between 0 and 5."
  }
}

variable "store_snapshot_retention_days" {
  description = "Days of store snapshots to keep (0: none; books are rebuilt from the venues)."
  type        = number
  default     = 0

  validation {
    condition     = var.store_snapshot_retention_days >= 0 && var.store_snapshot_retention_days <= 35
    error_message = "store_snapshot_retention_days must be between 0 and 35."
  }
}

# --- read function ----------------------------------------------------------------------------

variable "lambda_package_path" {
  description = "Path of the zip built by `ladder package lambda` (a relative path is taken from this directory)."
  type        = string

  validation {
    condition     = endswith(var.lambda_package_path, ".zip")
    error_message = "lambda_package_path must point at a .zip file."
  }
}

variable "lambda_runtime" {
  description = "Python runtime the zip was built for: python3.11 or python3.12."
  type        = string
  default     = "python3.11"

  validation {
    condition     = contains(["python3.11", "python3.12"], var.lambda_runtime)
    error_message = "lambda_runtime must be python3.11 or python3.12."
  }
}

variable "lambda_architecture" {
  description = "Architecture the zip's native wheels were built for: x86_64 or arm64."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64"], var.lambda_architecture)
    error_message = "lambda_architecture must be x86_64 or arm64."
  }
}

variable "lambda_memory_mb" {
  description = "Memory of the read function in MB."
  type        = number
  default     = 512

  validation {
    condition     = var.lambda_memory_mb >= 128 && var.lambda_memory_mb <= 10240
    error_message = "lambda_memory_mb must be between 128 and 10240."
  }
}

variable "lambda_timeout_seconds" {
  description = "Timeout of the read function in seconds."
  type        = number
  default     = 10

  validation {
    condition     = var.lambda_timeout_seconds >= 1 && var.lambda_timeout_seconds <= 900
    error_message = "lambda_timeout_seconds must be between 1 and 900."
  }
}

variable "lambda_reserved_concurrency" {
  description = "Concurrency reserved for and capping the read function; -1 leaves it unreserved."
  type        = number
  default     = 100

  validation {
    condition     = var.lambda_reserved_concurrency == -1 || var.lambda_reserved_concurrency >= 1
    error_message = "lambda_reserved_concurrency must be -1 or at least 1."
  }
}

variable "lambda_provisioned_concurrency" {
  description = "Pre-warmed executions of the read function (0: none)."
  type        = number
  default     = 0

  validation {
    condition     = var.lambda_provisioned_concurrency >= 0
    error_message = "lambda_provisioned_concurrency must not be negative."
  }
}

variable "api_type" {
  description = "\"http_api\" (API Gateway HTTP API; throttling, custom domain) or \"function_url\" (Lambda function URL)."
  type        = string
  default     = "http_api"

  validation {
    condition     = contains(["function_url", "http_api"], var.api_type)
    error_message = "api_type must be \"function_url\" or \"http_api\"."
  }
}

variable "api_throttling_rate_limit" {
  description = "HTTP API steady request rate limit (requests/s)."
  type        = number
  default     = 1000

  validation {
    condition     = var.api_throttling_rate_limit > 0
    error_message = "api_throttling_rate_limit must be positive."
  }
}

variable "api_throttling_burst_limit" {
  description = "HTTP API burst limit (requests)."
  type        = number
  default     = 2000

  validation {
    condition     = var.api_throttling_burst_limit > 0
    error_message = "api_throttling_burst_limit must be positive."
  }
}

variable "cors_allowed_origins" {
  description = "Browser origins allowed to call the API; empty: no CORS."
  type        = list(string)
  default     = []
}

variable "custom_domain_name" {
  description = "Custom domain of the API (http_api only), e.g. books.example.com; null for none."
  type        = string
  default     = null
}

variable "route53_zone_id" {
  description = "Route 53 zone of custom_domain_name (certificate validation and alias record)."
  type        = string
  default     = null
}

# --- ECS services -----------------------------------------------------------------------------

variable "image" {
  description = "Container image with the `ladder` command, pinned to a tag or digest."
  type        = string

  validation {
    condition     = length(var.image) > 0 && !endswith(var.image, ":latest")
    error_message = "image must be set and pinned to a tag or digest other than :latest."
  }
}

variable "ecr_repository_arns" {
  description = "ECR repositories the tasks pull from (empty for a public image)."
  type        = list(string)
  default     = []
}

variable "ecs_cpu_architecture" {
  description = "CPU architecture of the image: X86_64 or ARM64."
  type        = string
  default     = "X86_64"

  validation {
    condition     = contains(["X86_64", "ARM64"], var.ecs_cpu_architecture)
    error_message = "ecs_cpu_architecture must be X86_64 or ARM64."
  }
}

variable "ingest_cpu" {
  description = "Fargate CPU units per ingest task (1024 = 1 vCPU)."
  type        = number
  default     = 1024
}

variable "ingest_memory_mb" {
  description = "Memory per ingest task in MiB."
  type        = number
  default     = 2048
}

variable "control_cpu" {
  description = "Fargate CPU units of the control plane task."
  type        = number
  default     = 256
}

variable "control_memory_mb" {
  description = "Memory of the control plane task in MiB."
  type        = number
  default     = 512
}

variable "ingest_min_count" {
  description = "Fewest ingest tasks."
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
    condition     = var.ingest_max_count >= 1
    error_message = "ingest_max_count must be at least 1."
  }
}

variable "ingest_cpu_target_percent" {
  description = "Average ingest CPU (percent) that autoscaling holds."
  type        = number
  default     = 60

  validation {
    condition     = var.ingest_cpu_target_percent >= 10 && var.ingest_cpu_target_percent <= 90
    error_message = "ingest_cpu_target_percent must be between 10 and 90."
  }
}

variable "ingest_stop_timeout_seconds" {
  description = "Seconds an ingest task gets between SIGTERM and SIGKILL to drain (30-120)."
  type        = number
  default     = 120

  validation {
    condition     = var.ingest_stop_timeout_seconds >= 30 && var.ingest_stop_timeout_seconds <= 120
    error_message = "ingest_stop_timeout_seconds must be between 30 and 120."
  }
}

variable "container_insights" {
  description = "Turn on ECS Container Insights."
  type        = bool
  default     = false
}

variable "extra_environment" {
  description = "Further LADDER_* and OTEL_* settings for every process (venue URLs, OTEL_EXPORTER_OTLP_ENDPOINT, ...); infrastructure settings always win."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k in keys(var.extra_environment) : can(regex("^(LADDER|OTEL)_[A-Z0-9_]+$", k))])
    error_message = "extra_environment keys must be LADDER_* or OTEL_* settings."
  }
}

# --- observability ----------------------------------------------------------------------------

variable "log_retention_days" {
  description = "Days CloudWatch keeps the logs of every process."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch accepts (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."
  }
}

variable "create_alarm_topic" {
  description = "Create an SNS topic for the alarms."
  type        = bool
  default     = false
}

variable "alarm_emails" {
  description = "Email addresses subscribed to the created alarm topic."
  type        = list(string)
  default     = []
}

variable "alarm_topic_arns" {
  description = "Existing SNS topics the alarms notify."
  type        = list(string)
  default     = []
}

variable "book_age_threshold_ms" {
  description = "Alarm when the Ladder/BookAgeMs metric exceeds this many milliseconds."
  type        = number
  default     = 5000

  validation {
    condition     = var.book_age_threshold_ms > 0
    error_message = "book_age_threshold_ms must be positive."
  }
}

variable "book_age_metric_dimensions" {
  description = "Dimensions of the Ladder/BookAgeMs series the alarm watches (empty: the dimensionless aggregate)."
  type        = map(string)
  default     = {}
}

variable "ops_port" {
  description = "Port of the ingest and control processes' loopback ops server (/metrics, /livez, /readyz); ECS health checks probe /livez on it."
  type        = number
  default     = 9464
}
