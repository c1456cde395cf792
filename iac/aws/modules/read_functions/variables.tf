variable "function_name" {
  description = "Name of the read function (its log group must be /aws/lambda/<function_name>)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.function_name))
    error_message = "function_name must be 1-64 letters, digits, hyphens or underscores."
  }
}

variable "package_path" {
  description = "Path of the deployment zip built by `ladder package lambda`."
  type        = string

  validation {
    condition     = endswith(var.package_path, ".zip")
    error_message = "package_path must point at the .zip built by `ladder package lambda`."
  }
}

variable "runtime" {
  description = "Python runtime the zip was built for: python3.11 or python3.12."
  type        = string
  default     = "python3.11"

  validation {
    condition     = contains(["python3.11", "python3.12"], var.runtime)
    error_message = "runtime must be python3.11 or python3.12."
  }
}

variable "architecture" {
  description = "CPU architecture the zip's native wheels were built for: x86_64 or arm64."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "architecture must be x86_64 or arm64."
  }
}

variable "memory_mb" {
  description = "Memory of the function in MB (CPU share grows with it)."
  type        = number
  default     = 512

  validation {
    condition     = var.memory_mb >= 128 && var.memory_mb <= 10240
    error_message = "memory_mb must be between 128 and 10240."
  }
}

variable "timeout_seconds" {
  description = "Function timeout in seconds; an HTTP API cuts requests at 30 s whatever this says."
  type        = number
  default     = 10

  validation {
    condition     = var.timeout_seconds >= 1 && var.timeout_seconds <= 900
    error_message = "timeout_seconds must be between 1 and 900."
  }
}

variable "reserved_concurrency" {
  description = "Concurrent executions reserved for (and capping) the function; -1 leaves it unreserved."
  type        = number
  default     = 100

  validation {
    condition     = var.reserved_concurrency == -1 || var.reserved_concurrency >= 1
    error_message = "reserved_concurrency must be -1 (unreserved) or at least 1 (0 would stop the function)."
  }
}

variable "provisioned_concurrency" {
  description = "Pre-initialised executions on the live alias (0 for none); removes cold starts at a steady cost."
  type        = number
  default     = 0

  validation {
    condition     = var.provisioned_concurrency >= 0
    error_message = "provisioned_concurrency must not be negative."
  }
}

variable "role_arn" {
  description = "Execution role of the function."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets the function attaches to."
  type        = list(string)
}

variable "security_group_id" {
  description = "Security group of the read tier."
  type        = string
}

variable "log_group_name" {
  description = "CloudWatch log group the function writes to (created beforehand, with its retention)."
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
  description = "ARN of the API-key pepper secret (LADDER_PEPPER_SECRET_ARN)."
  type        = string
}

variable "admin_key_secret_arn" {
  description = "ARN of the admin key secret (LADDER_ADMIN_KEY_SECRET_ARN)."
  type        = string
}

variable "store_auth_token_secret_arn" {
  description = "ARN of the store AUTH token secret (LADDER_REDIS_PASSWORD_SECRET_ARN)."
  type        = string
}

variable "extra_environment" {
  description = "Further LADDER_* settings for the function; the store, table and secret settings always win."
  type        = map(string)
  default     = {}
}

variable "api_type" {
  description = "\"http_api\" (API Gateway HTTP API, custom domain possible) or \"function_url\" (no extra service, no custom domain)."
  type        = string
  default     = "http_api"

  validation {
    condition     = contains(["function_url", "http_api"], var.api_type)
    error_message = "api_type must be \"function_url\" or \"http_api\"."
  }
}

variable "api_throttling_rate_limit" {
  description = "HTTP API steady-state request rate limit (requests/s) in front of the function."
  type        = number
  default     = 1000

  validation {
    condition     = var.api_throttling_rate_limit > 0
    error_message = "api_throttling_rate_limit must be positive."
  }
}

variable "api_throttling_burst_limit" {
  description = "HTTP API burst limit (requests) in front of the function."
  type        = number
  default     = 2000

  validation {
    condition     = var.api_throttling_burst_limit > 0
    error_message = "api_throttling_burst_limit must be positive."
  }
}

variable "cors_allowed_origins" {
  description = "Browser origins allowed by CORS; empty disables CORS handling."
  type        = list(string)
  default     = []
}

variable "custom_domain_name" {
  description = "Custom domain for the HTTP API (e.g. api.example.com); null for none."
  type        = string
  default     = null

  validation {
    condition     = var.custom_domain_name == null || can(regex("^([a-z0-9]([a-z0-9-]*[a-z0-9])?\\.)+[a-z]{2,}$", var.custom_domain_name))
    error_message = "custom_domain_name must be a lowercase DNS name such as api.example.com."
  }
}

variable "route53_zone_id" {
  description = "Route 53 hosted zone of custom_domain_name, for certificate validation and the alias record."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
