variable "name" {
  description = "Deployment name, used in log group and alarm names."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "read_function_name" {
  description = "Name of the read Lambda function (its log group is /aws/lambda/<name>)."
  type        = string
}

variable "api_type" {
  description = "How the read function is exposed: \"function_url\" or \"http_api\"; picks the 5xx metric."
  type        = string
  default     = "function_url"

  validation {
    condition     = contains(["function_url", "http_api"], var.api_type)
    error_message = "api_type must be \"function_url\" or \"http_api\"."
  }
}

variable "http_api_id" {
  description = "ID of the HTTP API when api_type is \"http_api\"."
  type        = string
  default     = null
}

variable "log_retention_days" {
  description = "Days CloudWatch keeps log events (one of the values CloudWatch accepts)."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch accepts (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."
  }
}

variable "create_alarm_topic" {
  description = "Create an SNS topic that every alarm notifies."
  type        = bool
  default     = false
}

variable "alarm_emails" {
  description = "Email addresses subscribed to the created topic (each must confirm)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for e in var.alarm_emails : can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", e))])
    error_message = "alarm_emails must hold email addresses."
  }
}

variable "alarm_topic_arns" {
  description = "Existing SNS topics the alarms also notify."
  type        = list(string)
  default     = []
}

variable "alarm_evaluation_periods" {
  description = "Consecutive one-minute periods that must breach before an alarm fires."
  type        = number
  default     = 3

  validation {
    condition     = var.alarm_evaluation_periods >= 1 && var.alarm_evaluation_periods <= 60
    error_message = "alarm_evaluation_periods must be between 1 and 60."
  }
}

variable "read_errors_threshold" {
  description = "Read function errors per minute above which the errors alarm fires."
  type        = number
  default     = 0

  validation {
    condition     = var.read_errors_threshold >= 0
    error_message = "read_errors_threshold must not be negative."
  }
}

variable "read_throttles_threshold" {
  description = "Throttled invocations per minute above which the throttles alarm fires."
  type        = number
  default     = 0

  validation {
    condition     = var.read_throttles_threshold >= 0
    error_message = "read_throttles_threshold must not be negative."
  }
}

variable "read_5xx_threshold" {
  description = "5xx answers per minute above which the 5xx alarm fires."
  type        = number
  default     = 10

  validation {
    condition     = var.read_5xx_threshold >= 0
    error_message = "read_5xx_threshold must not be negative."
  }
}

variable "book_age_metric_namespace" {
  description = "CloudWatch namespace of the book age metric published by ingest nodes."
  type        = string
  default     = "Ladder"
}

variable "book_age_metric_name" {
  description = "Name of the book age metric (milliseconds since the newest snapshot was published)."
  type        = string
  default     = "BookAgeMs"
}

variable "book_age_metric_dimensions" {
  description = "Dimensions the book age alarm selects; empty watches the dimensionless aggregate."
  type        = map(string)
  default     = {}
}

variable "book_age_threshold_ms" {
  description = "Book age in milliseconds above which the book age alarm fires."
  type        = number
  default     = 5000

  validation {
    condition     = var.book_age_threshold_ms > 0
    error_message = "book_age_threshold_ms must be positive."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
