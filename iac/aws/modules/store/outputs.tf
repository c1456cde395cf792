output "endpoint_address" {
  description = "Address clients connect to: the configuration endpoint in cluster mode, else the primary endpoint."
  value       = local.endpoint
}

output "reader_endpoint_address" {
  description = "Reader endpoint (cluster mode disabled only; null otherwise)."
  value       = var.cluster_mode_enabled ? null : aws_elasticache_replication_group.this.reader_endpoint_address
}

output "port" {
  description = "Port of the store."
  value       = aws_elasticache_replication_group.this.port
}

output "redis_url" {
  description = "TLS URL of the store without credentials (LADDER_REDIS_URL); the AUTH token comes from its secret."
  value       = "rediss://${local.endpoint}:${aws_elasticache_replication_group.this.port}"
}

output "cluster_mode_enabled" {
  description = "Whether clients must use the cluster protocol."
  value       = var.cluster_mode_enabled
}

output "replication_group_id" {
  description = "ID of the replication group."
  value       = aws_elasticache_replication_group.this.id
}
