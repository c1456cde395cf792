# A test root for tests/iac: the modules an AWS emulator (moto) can create and destroy, wired as
# the real root wires them. The test copies iac/aws to a temporary directory, adds a
# `*_override.tf` that points the provider at a local moto server with fake credentials, then
# applies, inspects and destroys. It is not meant to be applied to a real account.

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.80"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "Region the emulator pretends to be."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Deployment name of the test stack."
  type        = string
  default     = "ladder-moto"
}

locals {
  read_function_name = "${var.name}-read"
}

module "control_tables" {
  source = "../../modules/control_tables"

  name                = var.name
  deletion_protection = false
}

module "secrets" {
  source = "../../modules/secrets"

  name                    = var.name
  api_key_pepper          = "test-pepper-0123456789abcdef0123456789abcdef"
  admin_key               = "test-admin-0123456789abcdef0123456789abcdef"
  store_auth_token        = "test-token-0123456789abcdef"
  recovery_window_in_days = 0
}

module "observability" {
  source = "../../modules/observability"

  name               = var.name
  read_function_name = local.read_function_name
  api_type           = "function_url"
  log_retention_days = 7
  create_alarm_topic = true
}

module "iam" {
  source = "../../modules/iam"

  name                        = var.name
  table_arn                   = module.control_tables.table_arn
  table_index_arns            = module.control_tables.index_arns
  api_key_pepper_secret_arn   = module.secrets.api_key_pepper_arn
  admin_key_secret_arn        = module.secrets.admin_key_arn
  store_auth_token_secret_arn = module.secrets.store_auth_token_arn
  read_log_group_arn          = module.observability.log_group_arns["read"]
  service_log_group_arns      = [module.observability.log_group_arns["ingest"], module.observability.log_group_arns["control"]]
}

output "table_name" {
  description = "Name of the control table."
  value       = module.control_tables.table_name
}

output "table_arn" {
  description = "ARN of the control table."
  value       = module.control_tables.table_arn
}

output "secret_arns" {
  description = "Secret ARNs keyed by purpose."
  value = {
    api_key_pepper   = module.secrets.api_key_pepper_arn
    admin_key        = module.secrets.admin_key_arn
    store_auth_token = module.secrets.store_auth_token_arn
  }
}

output "role_names" {
  description = "IAM role names keyed by process kind."
  value       = module.iam.role_names
}

output "log_group_names" {
  description = "Log group names keyed by process kind."
  value       = module.observability.log_group_names
}

output "alarm_names" {
  description = "Names of the CloudWatch alarms."
  value       = module.observability.alarm_names
}

output "alarm_topic_arn" {
  description = "ARN of the alarm topic."
  value       = module.observability.alarm_topic_arn
}
