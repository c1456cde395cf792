# Ladder on AWS: the composition of the modules under modules/. Reading order follows the data
# flow: a network, the secrets, the control table and the book store, then the processes that use
# them (the read function on Lambda, ingest nodes and the control plane on ECS), their IAM roles
# and their log groups and alarms. See README.md for the picture and the steps.

locals {
  # Fixed here because the log group (observability) must exist before the function does.
  read_function_name = "${var.name}-read"
}

module "network" {
  source = "./modules/network"

  name               = var.name
  vpc_cidr           = var.vpc_cidr
  availability_zones = var.availability_zones
  single_nat_gateway = var.single_nat_gateway
}

module "secrets" {
  source = "./modules/secrets"

  name                    = var.name
  api_key_pepper          = var.api_key_pepper
  admin_key               = var.admin_key
  store_auth_token        = var.store_auth_token
  recovery_window_in_days = var.secret_recovery_window_days
}

module "control_tables" {
  source = "./modules/control_tables"

  name                = var.name
  deletion_protection = var.control_table_deletion_protection
}

module "store" {
  source = "./modules/store"

  name                    = var.name
  subnet_ids              = module.network.private_subnet_ids
  security_group_id       = module.network.store_security_group_id
  auth_token_secret_arn   = module.secrets.store_auth_token_arn
  engine_version          = var.store_engine_version
  node_type               = var.store_node_type
  cluster_mode_enabled    = var.store_cluster_mode_enabled
  shards                  = var.store_shards
  replicas_per_shard      = var.store_replicas_per_shard
  snapshot_retention_days = var.store_snapshot_retention_days
}

module "observability" {
  source = "./modules/observability"

  name                       = var.name
  read_function_name         = local.read_function_name
  api_type                   = var.api_type
  http_api_id                = module.read_functions.http_api_id
  log_retention_days         = var.log_retention_days
  create_alarm_topic         = var.create_alarm_topic
  alarm_emails               = var.alarm_emails
  alarm_topic_arns           = var.alarm_topic_arns
  book_age_threshold_ms      = var.book_age_threshold_ms
  book_age_metric_dimensions = var.book_age_metric_dimensions
}

module "iam" {
  source = "./modules/iam"

  name                          = var.name
  table_arn                     = module.control_tables.table_arn
  table_index_arns              = module.control_tables.index_arns
  api_key_pepper_secret_arn     = module.secrets.api_key_pepper_arn
  admin_key_secret_arn          = module.secrets.admin_key_arn
  store_auth_token_secret_arn   = module.secrets.store_auth_token_arn
  alpaca_credentials_secret_arn = var.alpaca_credentials_secret_arn
  read_log_group_arn            = module.observability.log_group_arns["read"]
  service_log_group_arns        = [module.observability.log_group_arns["ingest"], module.observability.log_group_arns["control"]]
  ecr_repository_arns           = var.ecr_repository_arns
}

module "read_functions" {
  source = "./modules/read_functions"

  function_name               = local.read_function_name
  package_path                = var.lambda_package_path
  runtime                     = var.lambda_runtime
  architecture                = var.lambda_architecture
  memory_mb                   = var.lambda_memory_mb
  timeout_seconds             = var.lambda_timeout_seconds
  reserved_concurrency        = var.lambda_reserved_concurrency
  provisioned_concurrency     = var.lambda_provisioned_concurrency
  role_arn                    = module.iam.read_role_arn
  subnet_ids                  = module.network.private_subnet_ids
  security_group_id           = module.network.read_security_group_id
  log_group_name              = module.observability.log_group_names["read"]
  redis_url                   = module.store.redis_url
  redis_cluster               = module.store.cluster_mode_enabled
  table_name                  = module.control_tables.table_name
  api_key_pepper_secret_arn   = module.secrets.api_key_pepper_arn
  admin_key_secret_arn        = module.secrets.admin_key_arn
  store_auth_token_secret_arn = module.secrets.store_auth_token_arn
  extra_environment           = var.extra_environment
  api_type                    = var.api_type
  api_throttling_rate_limit   = var.api_throttling_rate_limit
  api_throttling_burst_limit  = var.api_throttling_burst_limit
  cors_allowed_origins        = var.cors_allowed_origins
  custom_domain_name          = var.custom_domain_name
  route53_zone_id             = var.route53_zone_id
}

module "services" {
  source = "./modules/services"

  name                          = var.name
  image                         = var.image
  cpu_architecture              = var.ecs_cpu_architecture
  ingest_cpu                    = var.ingest_cpu
  ingest_memory_mb              = var.ingest_memory_mb
  control_cpu                   = var.control_cpu
  control_memory_mb             = var.control_memory_mb
  ingest_min_count              = var.ingest_min_count
  ingest_max_count              = var.ingest_max_count
  ingest_cpu_target_percent     = var.ingest_cpu_target_percent
  ingest_stop_timeout_seconds   = var.ingest_stop_timeout_seconds
  ops_port                      = var.ops_port
  container_insights            = var.container_insights
  subnet_ids                    = module.network.private_subnet_ids
  ingest_security_group_id      = module.network.ingest_security_group_id
  control_security_group_id     = module.network.control_security_group_id
  execution_role_arn            = module.iam.task_execution_role_arn
  ingest_task_role_arn          = module.iam.ingest_task_role_arn
  control_task_role_arn         = module.iam.control_task_role_arn
  ingest_log_group_name         = module.observability.log_group_names["ingest"]
  control_log_group_name        = module.observability.log_group_names["control"]
  redis_url                     = module.store.redis_url
  redis_cluster                 = module.store.cluster_mode_enabled
  table_name                    = module.control_tables.table_name
  api_key_pepper_secret_arn     = module.secrets.api_key_pepper_arn
  admin_key_secret_arn          = module.secrets.admin_key_arn
  store_auth_token_secret_arn   = module.secrets.store_auth_token_arn
  alpaca_credentials_secret_arn = var.alpaca_credentials_secret_arn
  extra_environment             = var.extra_environment
}
