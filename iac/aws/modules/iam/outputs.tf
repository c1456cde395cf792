# Role ARNs wait for their policies: a consumer started before its policy is attached fails
# (Lambda checks the VPC rights when the function is created; tasks would crash-loop).

output "read_role_arn" {
  description = "Execution role of the read function."
  value       = aws_iam_role.read.arn
  depends_on  = [aws_iam_role_policy.read]
}

output "task_execution_role_arn" {
  description = "ECS task execution role (image pull and log delivery)."
  value       = aws_iam_role.execution.arn
  depends_on  = [aws_iam_role_policy.execution]
}

output "ingest_task_role_arn" {
  description = "Task role of the ingest nodes."
  value       = aws_iam_role.ingest.arn
  depends_on  = [aws_iam_role_policy.ingest]
}

output "control_task_role_arn" {
  description = "Task role of the control plane."
  value       = aws_iam_role.control.arn
  depends_on  = [aws_iam_role_policy.control]
}

output "role_names" {
  description = "Names of every role, keyed by process kind."
  value = {
    read      = aws_iam_role.read.name
    ingest    = aws_iam_role.ingest.name
    control   = aws_iam_role.control.name
    execution = aws_iam_role.execution.name
  }
}
