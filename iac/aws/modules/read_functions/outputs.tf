output "api_url" {
  description = "Base URL of the read API, without a trailing slash."
  value = (local.custom_domain ? "https://${var.custom_domain_name}"
    : local.use_http_api ? aws_apigatewayv2_api.http[0].api_endpoint
  : trimsuffix(aws_lambda_function_url.live[0].function_url, "/"))
}

output "function_name" {
  description = "Name of the read function."
  value       = aws_lambda_function.read.function_name
}

output "function_arn" {
  description = "ARN of the read function."
  value       = aws_lambda_function.read.arn
}

output "alias_arn" {
  description = "ARN of the live alias the API invokes."
  value       = aws_lambda_alias.live.arn
}

output "http_api_id" {
  description = "ID of the HTTP API, or null with a function URL."
  value       = one(aws_apigatewayv2_api.http[*].id)
}
