output "cluster_name" {
  description = "Name of the ECS cluster."
  value       = aws_ecs_cluster.this.name
}

output "ingest_service_name" {
  description = "Name of the ingest service."
  value       = aws_ecs_service.ingest.name
}

output "control_service_name" {
  description = "Name of the control plane service."
  value       = aws_ecs_service.control.name
}

output "task_definition_arns" {
  description = "Task definition ARNs keyed by process kind (ingest, control)."
  value       = { for k, t in aws_ecs_task_definition.this : k => t.arn }
}
