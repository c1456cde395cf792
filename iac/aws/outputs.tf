output "api_url" {
  description = "Base URL of the Ladder HTTP API (custom domain, HTTP API endpoint or function URL)."
  value       = module.read_functions.api_url
}

output "control_table_name" {
  description = "DynamoDB control table (LADDER_DYNAMODB_TABLE)."
  value       = module.control_tables.table_name
}

output "control_table_arn" {
  description = "ARN of the DynamoDB control table."
  value       = module.control_tables.table_arn
}

output "store_url" {
  description = "rediss:// URL of the Valkey store, without credentials."
  value       = module.store.redis_url
}

output "store_cluster_mode_enabled" {
  description = "Whether clients must speak the cluster protocol to the store."
  value       = module.store.cluster_mode_enabled
}

output "secret_arns" {
  description = "ARNs of the pepper, admin key and store AUTH token secrets."
  value = {
    api_key_pepper   = module.secrets.api_key_pepper_arn
    admin_key        = module.secrets.admin_key_arn
    store_auth_token = module.secrets.store_auth_token_arn
  }
}

output "read_function_name" {
  description = "Name of the read Lambda function."
  value       = module.read_functions.function_name
}

output "ecs_cluster_name" {
  description = "Name of the ECS cluster running the ingest nodes and the control plane."
  value       = module.services.cluster_name
}

output "ecs_service_names" {
  description = "ECS service names (ingest, control)."
  value = {
    ingest  = module.services.ingest_service_name
    control = module.services.control_service_name
  }
}

output "log_group_names" {
  description = "CloudWatch log groups keyed by process kind."
  value       = module.observability.log_group_names
}

output "alarm_topic_arn" {
  description = "SNS topic the alarms notify, when one was created."
  value       = module.observability.alarm_topic_arn
}

output "vpc_id" {
  description = "ID of the VPC."
  value       = module.network.vpc_id
}
