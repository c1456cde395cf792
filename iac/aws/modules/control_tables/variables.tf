variable "name" {
  description = "Deployment name; the table is called \"<name>-control\"."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "deletion_protection" {
  description = "Refuse DeleteTable while true. Keep it on in production; tests turn it off to destroy."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to the table."
  type        = map(string)
  default     = {}
}
