# The read path on AWS Lambda: the zip built by `ladder package lambda`, attached to the VPC so it
# reaches the store, published as a version behind the alias "live" (provisioned concurrency and
# the API both point at the alias, so a deploy switches traffic in one step). The API is either a
# function URL or an HTTP API; only the HTTP API takes a custom domain with its ACM certificate.
# Requests authenticate with Ladder API keys inside the function, so the API itself is public.

data "aws_region" "current" {}

locals {
  function_name = var.function_name
  alias_name    = "live"
  use_http_api  = var.api_type == "http_api"
  # Incomplete domain settings create nothing; the function's preconditions say what is missing.
  custom_domain = local.use_http_api && var.custom_domain_name != null && var.route53_zone_id != null

  # A Lambda environment cannot reference Secrets Manager, so the function gets the secrets' ARNs:
  # at cold start it reads each LADDER_<X>_SECRET_ARN into the setting LADDER_<X>.
  environment = merge(var.extra_environment, {
    LADDER_REDIS_URL                 = var.redis_url
    LADDER_REDIS_CLUSTER             = tostring(var.redis_cluster)
    LADDER_REDIS_PASSWORD_SECRET_ARN = var.store_auth_token_secret_arn
    LADDER_CONTROL_STORE             = "dynamodb"
    LADDER_DYNAMODB_TABLE            = var.table_name
    LADDER_DYNAMODB_REGION           = data.aws_region.current.name
    LADDER_PEPPER_SECRET_ARN         = var.api_key_pepper_secret_arn
    LADDER_ADMIN_KEY_SECRET_ARN      = var.admin_key_secret_arn
  })
}

resource "aws_lambda_function" "read" {
  function_name    = local.function_name
  description      = "Ladder read path (books, subscriptions, keys, operator routes)"
  role             = var.role_arn
  filename         = var.package_path
  source_code_hash = filebase64sha256(var.package_path)
  handler          = "read_functions.server.lambda_handler.handler"
  runtime          = var.runtime
  architectures    = [var.architecture]
  memory_size      = var.memory_mb
  timeout          = var.timeout_seconds
  publish          = true

  reserved_concurrent_executions = var.reserved_concurrency

  environment {
    variables = local.environment
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = [var.security_group_id]
  }

  logging_config {
    log_format = "JSON"
    log_group  = var.log_group_name
  }

  tags = var.tags

  lifecycle {
    precondition {
      condition     = var.reserved_concurrency == -1 || var.provisioned_concurrency <= var.reserved_concurrency
      error_message = "provisioned_concurrency cannot exceed reserved_concurrency."
    }
    precondition {
      condition     = var.custom_domain_name == null || local.use_http_api
      error_message = "custom_domain_name needs api_type = \"http_api\" (function URLs take no custom domain)."
    }
    precondition {
      condition     = var.custom_domain_name == null || var.route53_zone_id != null
      error_message = "custom_domain_name needs route53_zone_id, to validate the certificate and point the name at the API."
    }
  }
}

resource "aws_lambda_alias" "live" {
  name             = local.alias_name
  description      = "The version the API and provisioned concurrency serve"
  function_name    = aws_lambda_function.read.function_name
  function_version = aws_lambda_function.read.version
}

resource "aws_lambda_provisioned_concurrency_config" "live" {
  count = var.provisioned_concurrency > 0 ? 1 : 0

  function_name                     = aws_lambda_function.read.function_name
  qualifier                         = aws_lambda_alias.live.name
  provisioned_concurrent_executions = var.provisioned_concurrency
}

# --- function URL -----------------------------------------------------------------------------

resource "aws_lambda_function_url" "live" {
  count = local.use_http_api ? 0 : 1

  function_name      = aws_lambda_function.read.function_name
  qualifier          = aws_lambda_alias.live.name
  authorization_type = "NONE"

  dynamic "cors" {
    for_each = length(var.cors_allowed_origins) > 0 ? [1] : []
    content {
      allow_origins = var.cors_allowed_origins
      allow_methods = ["GET", "POST", "PATCH", "DELETE"]
      allow_headers = ["authorization", "content-type", "x-api-key", "x-request-id", "if-none-match"]
      max_age       = 600
    }
  }
}

# A public function URL needs both grants. This provider version cannot narrow the second one to
# URL-borne calls (the InvokedViaFunctionUrl condition), which is why http_api is the default.
resource "aws_lambda_permission" "url_public" {
  count = local.use_http_api ? 0 : 1

  statement_id           = "FunctionUrlPublic"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.read.function_name
  qualifier              = aws_lambda_alias.live.name
  principal              = "*"
  function_url_auth_type = "NONE"
}

resource "aws_lambda_permission" "url_invoke" {
  count = local.use_http_api ? 0 : 1

  statement_id  = "FunctionUrlInvoke"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.read.function_name
  qualifier     = aws_lambda_alias.live.name
  principal     = "*"
}

# --- HTTP API ---------------------------------------------------------------------------------

resource "aws_apigatewayv2_api" "http" {
  count = local.use_http_api ? 1 : 0

  name          = local.function_name
  description   = "Ladder read API"
  protocol_type = "HTTP"
  # With a custom domain, the name is the only way in: one URL, one certificate, one set of logs.
  disable_execute_api_endpoint = local.custom_domain

  dynamic "cors_configuration" {
    for_each = length(var.cors_allowed_origins) > 0 ? [1] : []
    content {
      allow_origins = var.cors_allowed_origins
      allow_methods = ["GET", "POST", "PATCH", "DELETE"]
      allow_headers = ["authorization", "content-type", "x-api-key", "x-request-id", "if-none-match"]
      max_age       = 600
    }
  }

  tags = var.tags
}

resource "aws_apigatewayv2_integration" "read" {
  count = local.use_http_api ? 1 : 0

  api_id                 = aws_apigatewayv2_api.http[0].id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_alias.live.invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = min(var.timeout_seconds * 1000, 30000)
}

resource "aws_apigatewayv2_route" "default" {
  count = local.use_http_api ? 1 : 0

  api_id    = aws_apigatewayv2_api.http[0].id
  route_key = "$default"
  target    = "integrations/${aws_apigatewayv2_integration.read[0].id}"
}

resource "aws_apigatewayv2_stage" "default" {
  count = local.use_http_api ? 1 : 0

  api_id      = aws_apigatewayv2_api.http[0].id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    throttling_burst_limit = var.api_throttling_burst_limit
    throttling_rate_limit  = var.api_throttling_rate_limit
  }

  tags = var.tags
}

resource "aws_lambda_permission" "http_api" {
  count = local.use_http_api ? 1 : 0

  statement_id  = "HttpApiInvoke"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.read.function_name
  qualifier     = aws_lambda_alias.live.name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http[0].execution_arn}/*/*"
}

# --- custom domain (HTTP API only) -------------------------------------------------------------

resource "aws_acm_certificate" "api" {
  count = local.custom_domain ? 1 : 0

  domain_name       = var.custom_domain_name
  validation_method = "DNS"
  tags              = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

# One name, so one validation record (keyed statically: the record's values are known only
# once the certificate exists).
resource "aws_route53_record" "certificate_validation" {
  count = local.custom_domain ? 1 : 0

  zone_id         = var.route53_zone_id
  name            = one(aws_acm_certificate.api[0].domain_validation_options).resource_record_name
  type            = one(aws_acm_certificate.api[0].domain_validation_options).resource_record_type
  records         = [one(aws_acm_certificate.api[0].domain_validation_options).resource_record_value]
  ttl             = 300
  allow_overwrite = true
}

resource "aws_acm_certificate_validation" "api" {
  count = local.custom_domain ? 1 : 0

  certificate_arn         = aws_acm_certificate.api[0].arn
  validation_record_fqdns = aws_route53_record.certificate_validation[*].fqdn
}

resource "aws_apigatewayv2_domain_name" "api" {
  count = local.custom_domain ? 1 : 0

  domain_name = var.custom_domain_name

  domain_name_configuration {
    certificate_arn = aws_acm_certificate_validation.api[0].certificate_arn
    endpoint_type   = "REGIONAL"
    security_policy = "TLS_1_2"
  }

  tags = var.tags
}

resource "aws_apigatewayv2_api_mapping" "api" {
  count = local.custom_domain ? 1 : 0

  api_id      = aws_apigatewayv2_api.http[0].id
  domain_name = aws_apigatewayv2_domain_name.api[0].id
  stage       = aws_apigatewayv2_stage.default[0].id
}

resource "aws_route53_record" "api" {
  count = local.custom_domain ? 1 : 0

  zone_id = var.route53_zone_id
  name    = var.custom_domain_name
  type    = "A"

  alias {
    name                   = aws_apigatewayv2_domain_name.api[0].domain_name_configuration[0].target_domain_name
    zone_id                = aws_apigatewayv2_domain_name.api[0].domain_name_configuration[0].hosted_zone_id
    evaluate_target_health = false
  }
}
