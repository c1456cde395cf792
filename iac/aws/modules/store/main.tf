# The book store: an ElastiCache Valkey replication group in the private subnets. TLS in transit is
# always on (clients use rediss://), AUTH is required and its token is read from Secrets Manager,
# so the token is never typed into a tfvars file. With replicas, a primary failure promotes a
# replica in another zone automatically. Cluster mode shards books across node groups; Ladder's
# keys carry a hash tag per book so one book's replicas always share a slot.

data "aws_secretsmanager_secret_version" "auth_token" {
  secret_id = var.auth_token_secret_arn
}

locals {
  engine_major    = split(".", var.engine_version)[0]
  parameter_group = var.cluster_mode_enabled ? "default.valkey${local.engine_major}.cluster.on" : "default.valkey${local.engine_major}"
  has_replicas    = var.replicas_per_shard > 0
  endpoint = (var.cluster_mode_enabled
    ? aws_elasticache_replication_group.this.configuration_endpoint_address
  : aws_elasticache_replication_group.this.primary_endpoint_address)
}

resource "aws_elasticache_subnet_group" "this" {
  name        = "${var.name}-store"
  description = "Private subnets of the ${var.name} store"
  subnet_ids  = var.subnet_ids
  tags        = var.tags
}

resource "aws_elasticache_replication_group" "this" {
  replication_group_id = "${var.name}-store"
  description          = "Ladder book store (${var.name})"

  engine               = "valkey"
  engine_version       = var.engine_version
  node_type            = var.node_type
  port                 = var.port
  parameter_group_name = local.parameter_group

  cluster_mode = var.cluster_mode_enabled ? "enabled" : "disabled"
  # Cluster mode sizes by shards x replicas; a single-shard group sizes by its node count.
  num_node_groups         = var.cluster_mode_enabled ? var.shards : null
  replicas_per_node_group = var.cluster_mode_enabled ? var.replicas_per_shard : null
  num_cache_clusters      = var.cluster_mode_enabled ? null : 1 + var.replicas_per_shard

  # Cluster mode requires failover; without a replica there is nothing to fail over to.
  automatic_failover_enabled = var.cluster_mode_enabled || local.has_replicas
  multi_az_enabled           = local.has_replicas

  subnet_group_name  = aws_elasticache_subnet_group.this.name
  security_group_ids = [var.security_group_id]

  transit_encryption_enabled = true
  at_rest_encryption_enabled = true
  auth_token                 = data.aws_secretsmanager_secret_version.auth_token.secret_string

  snapshot_retention_limit = var.snapshot_retention_days
  maintenance_window       = var.maintenance_window
  apply_immediately        = var.apply_immediately

  tags = var.tags
}
