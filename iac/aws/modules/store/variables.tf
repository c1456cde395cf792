variable "name" {
  description = "Deployment name; the replication group is called \"<name>-store\"."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "subnet_ids" {
  description = "Private subnets (two zones) the store's nodes are placed in."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2
    error_message = "subnet_ids must list at least two subnets, in different zones, for multi-AZ failover."
  }
}

variable "security_group_id" {
  description = "Security group of the store (admits the store port from the Ladder tiers only)."
  type        = string
}

variable "auth_token_secret_arn" {
  description = "ARN of the Secrets Manager secret holding the AUTH token."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:secretsmanager:", var.auth_token_secret_arn))
    error_message = "auth_token_secret_arn must be a Secrets Manager secret ARN."
  }
}

variable "engine_version" {
  description = "Valkey engine version, e.g. \"8.0\" or \"7.2\"; its major version picks the default parameter group."
  type        = string
  default     = "8.0"

  validation {
    condition     = can(regex("^[78]\\.[0-9]+$", var.engine_version))
    error_message = "engine_version must be a Valkey 7.x or 8.x version such as \"8.0\"."
  }
}

variable "node_type" {
  description = "Cache node type, e.g. cache.t4g.small for trials, cache.r7g.large for production."
  type        = string
  default     = "cache.t4g.small"

  validation {
    condition     = can(regex("^cache\\.[a-z0-9]+\\.[a-z0-9]+$", var.node_type))
    error_message = "node_type must look like cache.<family>.<size>."
  }
}

variable "port" {
  description = "TCP port the store listens on."
  type        = number
  default     = 6379

  validation {
    condition     = var.port >= 1024 && var.port <= 65535
    error_message = "port must be between 1024 and 65535."
  }
}

variable "cluster_mode_enabled" {
  description = "Shard books over several node groups (clients must then speak the cluster protocol)."
  type        = bool
  default     = false
}

variable "shards" {
  description = "Number of node groups when cluster mode is enabled (ignored otherwise)."
  type        = number
  default     = 2

  validation {
    condition     = var.shards >= 1 && var.shards <= 90 && floor(var.shards) == var.shards
    error_message = "shards must be a whole number between 1 and 90."
  }
}

variable "replicas_per_shard" {
  description = "Read replicas per shard (0-5). Any replica turns on automatic failover and multi-AZ."
  type        = number
  default     = 1

  validation {
    condition     = var.replicas_per_shard >= 0 && var.replicas_per_shard <= 5 && floor(var.replicas_per_shard) == var.replicas_per_shard
    error_message = "replicas_per_shard must be a whole number between 0 and 5."
  }
}

variable "snapshot_retention_days" {
  description = "Days of automatic daily snapshots to keep (0 turns them off; books rebuild from the venue anyway)."
  type        = number
  default     = 0

  validation {
    condition     = var.snapshot_retention_days >= 0 && var.snapshot_retention_days <= 35
    error_message = "snapshot_retention_days must be between 0 and 35."
  }
}

variable "maintenance_window" {
  description = "Weekly maintenance window in UTC, ddd:hh24:mi-ddd:hh24:mi."
  type        = string
  default     = "sun:04:00-sun:05:00"

  validation {
    condition     = can(regex("^(mon|tue|wed|thu|fri|sat|sun):[0-2][0-9]:[0-5][0-9]-(mon|tue|wed|thu|fri|sat|sun):[0-2][0-9]:[0-5][0-9]$", var.maintenance_window))
    error_message = "maintenance_window must look like sun:04:00-sun:05:00."
  }
}

variable "apply_immediately" {
  description = "Apply modifications now instead of in the next maintenance window."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
