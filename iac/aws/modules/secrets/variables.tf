variable "name" {
  description = "Deployment name; secrets are called \"<name>/api-key-pepper\", \"<name>/admin-key\" and \"<name>/store-auth-token\"."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "api_key_pepper" {
  description = "Server-side pepper for API-key HMACs: at least 32 characters of high-entropy text."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.api_key_pepper) >= 32
    error_message = "api_key_pepper must be at least 32 characters."
  }
}

variable "admin_key" {
  description = "Bootstrap operator key (LADDER_ADMIN_KEY): at least 32 characters."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.admin_key) >= 32
    error_message = "admin_key must be at least 32 characters."
  }
}

variable "store_auth_token" {
  description = "Valkey AUTH token: 16-128 printable ASCII characters without spaces, '\"', '/' or '@' (ElastiCache's rule)."
  type        = string
  sensitive   = true

  validation {
    condition     = can(regex("^[!#-.0-?A-~]{16,128}$", var.store_auth_token))
    error_message = "store_auth_token must be 16-128 printable ASCII characters other than space, '\"', '/' and '@'."
  }
}

variable "recovery_window_in_days" {
  description = "Days a deleted secret stays recoverable: 0 (delete at once) or 7-30."
  type        = number
  default     = 7

  validation {
    condition     = var.recovery_window_in_days == 0 || (var.recovery_window_in_days >= 7 && var.recovery_window_in_days <= 30)
    error_message = "recovery_window_in_days must be 0 or between 7 and 30."
  }
}

variable "tags" {
  description = "Tags added to every secret."
  type        = map(string)
  default     = {}
}
