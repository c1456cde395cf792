output "table_name" {
  description = "Name of the control table (LADDER_DYNAMODB_TABLE)."
  value       = aws_dynamodb_table.control.name
}

output "table_arn" {
  description = "ARN of the control table, for IAM policies."
  value       = aws_dynamodb_table.control.arn
}

output "index_arns" {
  description = "ARNs of the table's indexes (Query on gsi1 needs its own grant)."
  value       = ["${aws_dynamodb_table.control.arn}/index/*"]
}
