# Log groups for every process (created here, before the processes, so retention applies from the
# first line) and the alarms an operator needs: the read path failing (5xx, errors), the read path
# refusing work (throttles), and books going stale (the ingest nodes' Ladder/BookAgeMs metric). A
# book-age alarm with no data is breaching: silence means no node is publishing.

locals {
  log_groups = {
    read    = "/aws/lambda/${var.read_function_name}"
    ingest  = "/ecs/${var.name}/ingest"
    control = "/ecs/${var.name}/control"
  }
  alarm_actions = compact(concat(var.alarm_topic_arns, aws_sns_topic.alarms[*].arn))
}

resource "aws_cloudwatch_log_group" "this" {
  for_each = local.log_groups

  name              = each.value
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_sns_topic" "alarms" {
  count = var.create_alarm_topic ? 1 : 0

  name = "${var.name}-alarms"
  tags = var.tags
}

resource "aws_sns_topic_subscription" "email" {
  for_each = var.create_alarm_topic ? toset(var.alarm_emails) : toset([])

  topic_arn = aws_sns_topic.alarms[0].arn
  protocol  = "email"
  endpoint  = each.value
}

resource "aws_cloudwatch_metric_alarm" "read_errors" {
  alarm_name          = "${var.name}-read-errors"
  alarm_description   = "The read function raised errors (unhandled exceptions or timeouts)."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = var.read_function_name }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.alarm_evaluation_periods
  threshold           = var.read_errors_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "read_throttles" {
  alarm_name          = "${var.name}-read-throttles"
  alarm_description   = "Invocations of the read function were throttled (raise reserved concurrency)."
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = var.read_function_name }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.alarm_evaluation_periods
  threshold           = var.read_throttles_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

# The 5xx count lives where the requests enter: the function URL's own metric, or the HTTP API's.
resource "aws_cloudwatch_metric_alarm" "read_5xx" {
  alarm_name          = "${var.name}-read-5xx"
  alarm_description   = "The read API answered 5xx (503 for unsynced books counts too)."
  namespace           = var.api_type == "http_api" ? "AWS/ApiGateway" : "AWS/Lambda"
  metric_name         = var.api_type == "http_api" ? "5xx" : "Url5xxCount"
  dimensions          = var.api_type == "http_api" ? { ApiId = var.http_api_id } : { FunctionName = var.read_function_name }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.alarm_evaluation_periods
  threshold           = var.read_5xx_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags

  lifecycle {
    precondition {
      condition     = var.api_type != "http_api" || var.http_api_id != null
      error_message = "http_api_id is required when api_type is \"http_api\"."
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "book_age" {
  alarm_name          = "${var.name}-book-age"
  alarm_description   = "The oldest published book is older than ${var.book_age_threshold_ms} ms, or no node publishes."
  namespace           = var.book_age_metric_namespace
  metric_name         = var.book_age_metric_name
  dimensions          = var.book_age_metric_dimensions
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = var.alarm_evaluation_periods
  threshold           = var.book_age_threshold_ms
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
