# Long-running processes on ECS Fargate: the ingest nodes (`ladder ingest`, scaled on CPU) and the
# control plane (`ladder control`, one task). Both run in the private subnets with no inbound
# rule: ingest nodes dial out to the venues and the store, and both coordinate through the control
# table, so nothing needs to reach them.
#
# Graceful drain: ECS sends SIGTERM when a task is stopped (deploy, scale-in), the node asks to be
# drained and keeps serving until its replicas have moved (LADDER_DRAIN_TIMEOUT_S, set 15 s short
# of stopTimeout), and ECS waits up to stopTimeout before SIGKILL. The init process forwards the
# signal to `ladder` instead of leaving it to a shell.
#
# Secrets reach the processes as ordinary settings (LADDER_PEPPER, LADDER_ADMIN_KEY,
# LADDER_REDIS_PASSWORD) injected by the ECS agent; the task definitions hold only their ARNs.
#
# Health: both processes serve /livez on the ops port (LADDER_METRICS_PORT, loopback only), which
# fails while the event loop is blocked longer than LADDER_MAX_LOOP_BLOCK_S. ECS runs the container
# health check inside the task, with the image's own Python (the image has no curl), and replaces a
# task whose loop stays stuck; a process that is alive but not ready (syncing, store unreachable)
# is left alone, since nothing routes traffic to these tasks.

data "aws_region" "current" {}

locals {
  region = data.aws_region.current.name

  # Settings both processes read. The infrastructure's values win over extra_environment.
  common_environment = merge(var.extra_environment, {
    AWS_REGION             = local.region
    LADDER_REDIS_URL       = var.redis_url
    LADDER_REDIS_CLUSTER   = tostring(var.redis_cluster)
    LADDER_CONTROL_STORE   = "dynamodb"
    LADDER_DYNAMODB_TABLE  = var.table_name
    LADDER_DYNAMODB_REGION = local.region
    LADDER_METRICS_PORT    = tostring(var.ops_port)
  })

  # Exit 0 only on a 200 from /livez; urlopen raises on a 503 or a refused connection.
  livez_probe = join("", [
    "import urllib.request; ",
    "urllib.request.urlopen('http://127.0.0.1:${var.ops_port}/livez', timeout=${var.health_check_timeout_seconds - 1})",
  ])

  alpaca_secrets = var.alpaca_credentials_secret_arn == "" ? {} : {
    LADDER_ALPACA_CREDENTIALS = var.alpaca_credentials_secret_arn
  }

  processes = {
    ingest = {
      command       = var.ingest_command
      cpu           = var.ingest_cpu
      memory        = var.ingest_memory_mb
      task_role_arn = var.ingest_task_role_arn
      log_group     = var.ingest_log_group_name
      stop_timeout  = var.ingest_stop_timeout_seconds
      # Finish draining with a margin before ECS's SIGKILL, so the last writes are not cut off.
      environment = merge(local.common_environment, {
        LADDER_DRAIN_TIMEOUT_S = tostring(var.ingest_stop_timeout_seconds - 15)
      })
      # Ingest nodes need the store password and, to connect to Alpaca, its key pool.
      secrets = merge(
        { LADDER_REDIS_PASSWORD = var.store_auth_token_secret_arn },
        local.alpaca_secrets,
      )
    }
    control = {
      command       = var.control_command
      cpu           = var.control_cpu
      memory        = var.control_memory_mb
      task_role_arn = var.control_task_role_arn
      log_group     = var.control_log_group_name
      stop_timeout  = var.control_stop_timeout_seconds
      environment   = local.common_environment
      # The control plane counts the Alpaca keys (one node per key) and never uses them.
      secrets = merge({
        LADDER_REDIS_PASSWORD = var.store_auth_token_secret_arn
        LADDER_PEPPER         = var.api_key_pepper_secret_arn
        LADDER_ADMIN_KEY      = var.admin_key_secret_arn
      }, local.alpaca_secrets)
    }
  }
}

resource "aws_ecs_cluster" "this" {
  name = var.name

  setting {
    name  = "containerInsights"
    value = var.container_insights ? "enabled" : "disabled"
  }

  tags = var.tags
}

resource "aws_ecs_task_definition" "this" {
  for_each = local.processes

  family                   = "${var.name}-${each.key}"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = each.value.cpu
  memory                   = each.value.memory
  execution_role_arn       = var.execution_role_arn
  task_role_arn            = each.value.task_role_arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([{
    name        = each.key
    image       = var.image
    essential   = true
    command     = each.value.command
    stopTimeout = each.value.stop_timeout
    environment = [for k in sort(keys(each.value.environment)) : { name = k, value = each.value.environment[k] }]
    # Injected by the ECS agent (execution role) from Secrets Manager; never in the task definition.
    secrets = [for k in sort(keys(each.value.secrets)) : { name = k, valueFrom = each.value.secrets[k] }]
    linuxParameters = {
      initProcessEnabled = true
    }
    healthCheck = {
      command     = ["CMD", "/opt/ladder/bin/python", "-c", local.livez_probe]
      interval    = var.health_check_interval_seconds
      timeout     = var.health_check_timeout_seconds
      retries     = var.health_check_retries
      startPeriod = var.health_check_start_period_seconds
    }
    # One websocket per venue connection plus store connections: lift the default 1024 files.
    ulimits = [{ name = "nofile", softLimit = 65536, hardLimit = 65536 }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = each.value.log_group
        awslogs-region        = local.region
        awslogs-stream-prefix = each.key
        # A slow log sink must never stall the ingest hot path: drop lines rather than block.
        mode            = "non-blocking"
        max-buffer-size = "4m"
      }
    }
  }])

  tags = var.tags
}

resource "aws_ecs_service" "ingest" {
  name            = "${var.name}-ingest"
  cluster         = aws_ecs_cluster.this.id
  task_definition = aws_ecs_task_definition.this["ingest"].arn
  launch_type     = "FARGATE"
  desired_count   = var.ingest_min_count

  # Start new nodes before stopping old ones, so assignments move instead of disappearing.
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = [var.ingest_security_group_id]
    assign_public_ip = false
  }

  propagate_tags = "SERVICE"
  tags           = var.tags

  lifecycle {
    # Autoscaling owns the count after creation.
    ignore_changes = [desired_count]
  }
}

resource "aws_ecs_service" "control" {
  name            = "${var.name}-control"
  cluster         = aws_ecs_cluster.this.id
  task_definition = aws_ecs_task_definition.this["control"].arn
  launch_type     = "FARGATE"
  desired_count   = 1

  # One control plane at a time: a deploy stops the old task before starting the new one. Reads
  # and running books do not depend on it, so the short gap is invisible to tenants.
  deployment_minimum_healthy_percent = 0
  deployment_maximum_percent         = 100

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = [var.control_security_group_id]
    assign_public_ip = false
  }

  propagate_tags = "SERVICE"
  tags           = var.tags
}

resource "aws_appautoscaling_target" "ingest" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.this.name}/${aws_ecs_service.ingest.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.ingest_min_count
  max_capacity       = var.ingest_max_count

  lifecycle {
    precondition {
      condition     = var.ingest_max_count >= var.ingest_min_count
      error_message = "ingest_max_count must be at least ingest_min_count."
    }
  }
}

resource "aws_appautoscaling_policy" "ingest_cpu" {
  name               = "${var.name}-ingest-cpu"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.ingest.service_namespace
  resource_id        = aws_appautoscaling_target.ingest.resource_id
  scalable_dimension = aws_appautoscaling_target.ingest.scalable_dimension

  target_tracking_scaling_policy_configuration {
    predefined_metric_specification {
      predefined_metric_type = "ECSServiceAverageCPUUtilization"
    }
    target_value = var.ingest_cpu_target_percent
    # Scaling in moves books (each resynchronises from a venue snapshot): do it slowly.
    scale_in_cooldown  = 600
    scale_out_cooldown = 60
  }
}
