# `terraform test` with a mocked AWS provider: the read function's settings and how it is exposed.
# tests/iac runs it offline and passes `-var package_path=<a zip>` (the code is never executed).

mock_provider "aws" {
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_resource "aws_apigatewayv2_api" {
    defaults = {
      api_endpoint  = "https://abc123.execute-api.eu-west-1.amazonaws.com"
      execution_arn = "arn:aws:execute-api:eu-west-1:123456789012:abc123"
    }
  }
  mock_resource "aws_lambda_function_url" {
    defaults = { function_url = "https://xyz.lambda-url.eu-west-1.on.aws/" }
  }
  mock_resource "aws_acm_certificate" {
    defaults = {
      arn = "arn:aws:acm:eu-west-1:123456789012:certificate/mock"
      domain_validation_options = [{
        domain_name           = "books.example.com"
        resource_record_name  = "_x.books.example.com."
        resource_record_type  = "CNAME"
        resource_record_value = "_y.acm-validations.aws."
      }]
    }
  }
}

variables {
  function_name               = "ladder-read"
  role_arn                    = "arn:aws:iam::123456789012:role/ladder-read"
  subnet_ids                  = ["subnet-a", "subnet-b"]
  security_group_id           = "sg-read"
  log_group_name              = "/aws/lambda/ladder-read"
  redis_url                   = "rediss://store.example:6379"
  table_name                  = "ladder-control"
  api_key_pepper_secret_arn   = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/api-key-pepper"
  admin_key_secret_arn        = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/admin-key"
  store_auth_token_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/store-auth-token"
  extra_environment           = { LADDER_LOG_LEVEL = "INFO", LADDER_CONTROL_STORE = "redis" }
}

run "the_function_gets_its_settings_and_secret_arns" {
  command = plan

  assert {
    condition = aws_lambda_function.read.environment[0].variables == tomap({
      LADDER_REDIS_URL                 = "rediss://store.example:6379"
      LADDER_REDIS_CLUSTER             = "false"
      LADDER_REDIS_PASSWORD_SECRET_ARN = var.store_auth_token_secret_arn
      LADDER_CONTROL_STORE             = "dynamodb"
      LADDER_DYNAMODB_TABLE            = "ladder-control"
      LADDER_DYNAMODB_REGION           = "eu-west-1"
      LADDER_PEPPER_SECRET_ARN         = var.api_key_pepper_secret_arn
      LADDER_ADMIN_KEY_SECRET_ARN      = var.admin_key_secret_arn
      LADDER_LOG_LEVEL                 = "INFO"
    })
    error_message = "the environment must carry the store, table and secret settings (which win over extras)"
  }
  assert {
    condition     = aws_lambda_function.read.handler == "read_functions.server.lambda_handler.handler" && aws_lambda_function.read.publish
    error_message = "the handler is read_functions.server.lambda_handler.handler, published as versions"
  }
  assert {
    condition     = aws_lambda_function.read.logging_config[0].log_group == "/aws/lambda/ladder-read"
    error_message = "the function logs to the group created beforehand"
  }
}

run "an_http_api_is_the_default_and_invokes_only_the_live_alias" {
  command = apply

  assert {
    condition     = output.api_url == "https://abc123.execute-api.eu-west-1.amazonaws.com"
    error_message = "api_url is the HTTP API endpoint"
  }
  assert {
    condition = (aws_lambda_permission.http_api[0].principal == "apigateway.amazonaws.com"
      && aws_lambda_permission.http_api[0].qualifier == "live"
    && aws_lambda_permission.http_api[0].source_arn == "arn:aws:execute-api:eu-west-1:123456789012:abc123/*/*")
    error_message = "only this API may invoke the function, and only its live alias"
  }
  assert {
    condition     = length(aws_lambda_function_url.live) == 0 && length(aws_lambda_provisioned_concurrency_config.live) == 0
    error_message = "no function URL and no provisioned concurrency unless asked for"
  }
}

run "a_function_url_with_provisioned_concurrency" {
  command = apply

  variables {
    api_type                = "function_url"
    reserved_concurrency    = 20
    provisioned_concurrency = 4
    redis_cluster           = true
  }

  assert {
    condition     = output.api_url == "https://xyz.lambda-url.eu-west-1.on.aws"
    error_message = "api_url is the function URL without its trailing slash"
  }
  assert {
    condition     = aws_lambda_provisioned_concurrency_config.live[0].provisioned_concurrent_executions == 4 && aws_lambda_provisioned_concurrency_config.live[0].qualifier == "live"
    error_message = "provisioned concurrency sits on the live alias"
  }
  assert {
    condition     = aws_lambda_function.read.environment[0].variables["LADDER_REDIS_CLUSTER"] == "true"
    error_message = "a cluster-mode store is announced to the function"
  }
}

run "a_custom_domain_fronts_the_http_api" {
  command = apply

  variables {
    custom_domain_name = "books.example.com"
    route53_zone_id    = "Z0123456789ABCDEFGHIJ"
  }

  assert {
    condition     = output.api_url == "https://books.example.com"
    error_message = "api_url is the custom domain"
  }
  assert {
    condition     = aws_apigatewayv2_api.http[0].disable_execute_api_endpoint
    error_message = "with a custom domain the default endpoint is switched off"
  }
  assert {
    condition     = aws_route53_record.api[0].name == "books.example.com" && aws_route53_record.api[0].type == "A"
    error_message = "an alias record points the name at the API"
  }
}

run "an_unsupported_runtime_is_refused" {
  command = plan

  variables {
    runtime = "python3.9"
  }

  expect_failures = [var.runtime]
}

# Each precondition on its own (every other setting valid), so none of them can pass vacuously.
run "a_custom_domain_needs_the_http_api" {
  command = plan

  variables {
    api_type           = "function_url"
    custom_domain_name = "books.example.com"
    route53_zone_id    = "Z0123456789ABCDEFGHIJ"
  }

  expect_failures = [aws_lambda_function.read]
}

run "a_custom_domain_needs_its_zone" {
  command = plan

  variables {
    custom_domain_name = "books.example.com"
  }

  expect_failures = [aws_lambda_function.read]
}

run "provisioned_concurrency_cannot_exceed_reserved" {
  command = plan

  variables {
    reserved_concurrency    = 2
    provisioned_concurrency = 5
  }

  expect_failures = [aws_lambda_function.read]
}
