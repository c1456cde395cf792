variable "name" {
  description = "Deployment name; roles are called \"<name>-read\", \"<name>-ingest\", \"<name>-control\" and \"<name>-task-execution\"."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "table_arn" {
  description = "ARN of the control table."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:dynamodb:", var.table_arn))
    error_message = "table_arn must be a DynamoDB table ARN."
  }
}

variable "table_index_arns" {
  description = "ARNs (or an ARN pattern) of the control table's indexes."
  type        = list(string)
}

variable "api_key_pepper_secret_arn" {
  description = "ARN of the API-key pepper secret."
  type        = string
}

variable "admin_key_secret_arn" {
  description = "ARN of the admin key secret."
  type        = string
}

variable "store_auth_token_secret_arn" {
  description = "ARN of the store AUTH token secret."
  type        = string
}

variable "alpaca_credentials_secret_arn" {
  description = "ARN of the Alpaca key pool secret (KEY_ID:SECRET,...); empty: none."
  type        = string
  default     = ""
}

variable "read_log_group_arn" {
  description = "ARN of the read function's log group."
  type        = string
}

variable "service_log_group_arns" {
  description = "ARNs of the ECS services' log groups (written by the task execution role)."
  type        = list(string)
}

variable "ecr_repository_arns" {
  description = "ECR repositories the tasks may pull from; empty when the image lives in a public registry."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.ecr_repository_arns : can(regex("^arn:aws[a-z-]*:ecr:", arn))])
    error_message = "ecr_repository_arns must hold ECR repository ARNs."
  }
}

variable "metric_namespace" {
  description = "CloudWatch namespace ingest nodes may publish custom metrics to."
  type        = string
  default     = "Ladder"
}

variable "tags" {
  description = "Tags added to every role."
  type        = map(string)
  default     = {}
}
