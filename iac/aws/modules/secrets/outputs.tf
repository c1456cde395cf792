# The ARNs are taken from the secret *versions*, so anything that reads a value (the store's AUTH
# token data source) waits until the value exists, not just the empty secret.

output "api_key_pepper_arn" {
  description = "ARN of the API-key pepper secret."
  value       = aws_secretsmanager_secret_version.this["api_key_pepper"].arn
}

output "admin_key_arn" {
  description = "ARN of the admin key secret."
  value       = aws_secretsmanager_secret_version.this["admin_key"].arn
}

output "store_auth_token_arn" {
  description = "ARN of the store AUTH token secret."
  value       = aws_secretsmanager_secret_version.this["store_auth_token"].arn
}
