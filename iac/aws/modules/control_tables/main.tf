# The control store's single DynamoDB table. The control plane's DynamoDB store is written against
# exactly this schema (pk/sk items, one overloaded GSI, TTL on `expires_at`), so changing a key
# name or the index here is a breaking change for that code, not a tuning knob.

resource "aws_dynamodb_table" "control" {
  name                        = "${var.name}-control"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  attribute {
    name = "gsi1pk"
    type = "S"
  }

  attribute {
    name = "gsi1sk"
    type = "S"
  }

  global_secondary_index {
    name            = "gsi1"
    hash_key        = "gsi1pk"
    range_key       = "gsi1sk"
    projection_type = "ALL"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  # enabled = true selects the AWS managed key (alias/aws/dynamodb): encrypted at rest with a key
  # the account can audit, and callers need no KMS grants of their own.
  server_side_encryption {
    enabled = true
  }

  tags = var.tags
}
