# The three secrets the services read at start-up. The values come in as sensitive variables, so
# the configuration needs no provider beyond `aws` (it must install from an offline mirror that
# holds only that one); the resources only hold them, and the IAM module grants each process
# exactly the ARNs it needs. They use the AWS managed key (aws/secretsmanager), so readers need no
# KMS grant of their own.
#
# Terraform state contains the values: keep state in an encrypted, access-controlled backend.

locals {
  secrets = {
    api_key_pepper = {
      description = "HMAC pepper under which API keys are hashed; rotating it invalidates every key."
      value       = var.api_key_pepper
    }
    admin_key = {
      description = "Bootstrap operator key for the /v1/admin routes."
      value       = var.admin_key
    }
    store_auth_token = {
      description = "AUTH token of the ElastiCache Valkey store."
      value       = var.store_auth_token
    }
  }
}

resource "aws_secretsmanager_secret" "this" {
  for_each = local.secrets

  name                    = "${var.name}/${replace(each.key, "_", "-")}"
  description             = each.value.description
  recovery_window_in_days = var.recovery_window_in_days
  tags                    = var.tags
}

resource "aws_secretsmanager_secret_version" "this" {
  for_each = local.secrets

  secret_id     = aws_secretsmanager_secret.this[each.key].id
  secret_string = each.value.value
}
