output "log_group_names" {
  description = "Log group names keyed by process kind (read, ingest, control)."
  value       = { for k, g in aws_cloudwatch_log_group.this : k => g.name }
}

output "log_group_arns" {
  description = "Log group ARNs keyed by process kind (read, ingest, control)."
  value       = { for k, g in aws_cloudwatch_log_group.this : k => g.arn }
}

output "alarm_topic_arn" {
  description = "ARN of the created SNS topic, or null."
  value       = one(aws_sns_topic.alarms[*].arn)
}

output "alarm_names" {
  description = "Names of the alarms."
  value = [
    aws_cloudwatch_metric_alarm.read_errors.alarm_name,
    aws_cloudwatch_metric_alarm.read_throttles.alarm_name,
    aws_cloudwatch_metric_alarm.read_5xx.alarm_name,
    aws_cloudwatch_metric_alarm.book_age.alarm_name,
  ]
}
