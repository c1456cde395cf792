# `terraform test` with a mocked AWS provider: what the ECS task definitions hand to each container.
# No AWS account needed; tests/iac runs it offline. Each assertion decodes the container
# definition exactly as ECS will receive it.

mock_provider "aws" {
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
}

variables {
  name                        = "ladder"
  image                       = "registry.example/ladder:1.0.0"
  subnet_ids                  = ["subnet-a", "subnet-b"]
  ingest_security_group_id    = "sg-ingest"
  control_security_group_id   = "sg-control"
  execution_role_arn          = "arn:aws:iam::123456789012:role/ladder-task-execution"
  ingest_task_role_arn        = "arn:aws:iam::123456789012:role/ladder-ingest"
  control_task_role_arn       = "arn:aws:iam::123456789012:role/ladder-control"
  ingest_log_group_name       = "/ecs/ladder/ingest"
  control_log_group_name      = "/ecs/ladder/control"
  redis_url                   = "rediss://store.example:6379"
  table_name                  = "ladder-control"
  api_key_pepper_secret_arn   = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/api-key-pepper"
  admin_key_secret_arn        = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/admin-key"
  store_auth_token_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/store-auth-token"
  extra_environment           = { LADDER_DEPTH_LEVELS = "200", LADDER_CONTROL_STORE = "redis" }
  ingest_stop_timeout_seconds = 90
}

run "ingest_container_drains_before_sigkill" {
  command = plan

  assert {
    condition     = jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].stopTimeout == 90
    error_message = "the ingest container must get the configured stopTimeout"
  }
  assert {
    condition = ({
      for e in jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].environment : e.name => e.value
    })["LADDER_DRAIN_TIMEOUT_S"] == "75"
    error_message = "the node must finish draining 15 s before SIGKILL"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].linuxParameters.initProcessEnabled
    error_message = "an init process must forward SIGTERM to the node"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].command == ["ingest"]
    error_message = "ingest tasks run `ladder ingest`"
  }
}

run "settings_reach_each_container_and_infrastructure_values_win" {
  command = plan

  assert {
    condition = ({
      for e in jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].environment : e.name => e.value
      if contains(["LADDER_REDIS_URL", "LADDER_CONTROL_STORE", "LADDER_DYNAMODB_TABLE", "LADDER_DYNAMODB_REGION", "LADDER_DEPTH_LEVELS"], e.name)
      }) == {
      LADDER_REDIS_URL       = "rediss://store.example:6379"
      LADDER_CONTROL_STORE   = "dynamodb"
      LADDER_DYNAMODB_TABLE  = "ladder-control"
      LADDER_DYNAMODB_REGION = "eu-west-1"
      LADDER_DEPTH_LEVELS    = "200"
    }
    error_message = "ingest settings: infrastructure values must win over extra_environment, extras pass through"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.this["control"].container_definitions)[0].logConfiguration.options["awslogs-group"] == "/ecs/ladder/control"
    error_message = "each process logs to its own group"
  }
  assert {
    condition     = aws_ecs_service.control.desired_count == 1 && aws_ecs_service.control.deployment_maximum_percent == 100
    error_message = "exactly one control plane, never two during a deploy"
  }
}

run "secrets_are_injected_never_written_into_the_task_definition" {
  command = plan

  assert {
    condition = ({
      for s in jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].secrets : s.name => s.valueFrom
    }) == { LADDER_REDIS_PASSWORD = var.store_auth_token_secret_arn }
    error_message = "ingest nodes get the store password and nothing else secret"
  }
  assert {
    condition = ({
      for s in jsondecode(aws_ecs_task_definition.this["control"].container_definitions)[0].secrets : s.name => s.valueFrom
      }) == {
      LADDER_REDIS_PASSWORD = var.store_auth_token_secret_arn
      LADDER_PEPPER         = var.api_key_pepper_secret_arn
      LADDER_ADMIN_KEY      = var.admin_key_secret_arn
    }
    error_message = "the control plane gets the store password, the pepper and the admin key"
  }
  assert {
    condition = alltrue([
      for e in jsondecode(aws_ecs_task_definition.this["control"].container_definitions)[0].environment : !strcontains(e.value, ":secret:")
    ])
    error_message = "no secret reference may travel in plain environment variables"
  }
}

run "a_stop_timeout_past_the_fargate_limit_is_refused" {
  command = plan

  variables {
    ingest_stop_timeout_seconds = 121
  }

  expect_failures = [var.ingest_stop_timeout_seconds]
}

run "an_autoscaling_ceiling_below_the_floor_is_refused" {
  command = plan

  variables {
    ingest_min_count = 5
    ingest_max_count = 3
  }

  expect_failures = [aws_appautoscaling_target.ingest]
}

run "both_processes_are_told_whether_the_store_is_a_cluster" {
  command = plan

  variables {
    redis_url     = "rediss://clustercfg.ladder-store.abc123.euw1.cache.amazonaws.com:6379"
    redis_cluster = true
  }

  assert {
    condition = alltrue([
      for kind in ["ingest", "control"] : ({
        for e in jsondecode(aws_ecs_task_definition.this[kind].container_definitions)[0].environment : e.name => e.value
        if contains(["LADDER_REDIS_URL", "LADDER_REDIS_CLUSTER"], e.name)
        }) == {
        LADDER_REDIS_URL     = "rediss://clustercfg.ladder-store.abc123.euw1.cache.amazonaws.com:6379"
        LADDER_REDIS_CLUSTER = "true"
      }
    ])
    error_message = "ingest and control get the configuration endpoint and LADDER_REDIS_CLUSTER=true"
  }
}

run "each_container_checks_its_own_livez_on_the_ops_port" {
  command = plan

  variables {
    ops_port = 9500
  }

  assert {
    condition = alltrue([
      for p in ["ingest", "control"] : ({
        for e in jsondecode(aws_ecs_task_definition.this[p].container_definitions)[0].environment : e.name => e.value
      })["LADDER_METRICS_PORT"] == "9500"
    ])
    error_message = "both processes must serve the ops server on ops_port"
  }
  assert {
    condition = alltrue([
      for p in ["ingest", "control"] : strcontains(
        jsondecode(aws_ecs_task_definition.this[p].container_definitions)[0].healthCheck.command[3],
        "http://127.0.0.1:9500/livez"
      )
    ])
    error_message = "the health check must probe /livez on ops_port"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.this["ingest"].container_definitions)[0].healthCheck.timeout == 5
    error_message = "the health check's timeout must be the configured one"
  }
}
