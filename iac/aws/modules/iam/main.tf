# Least-privilege roles, one per process kind. Each may touch only the control table (and its
# index), only the secrets it needs, and only its own log groups:
#
#   role             control table  secrets                      logs          other
#   read (Lambda)    read/write     pepper, admin key, store     its group     VPC ENIs
#   ingest (task)    read/write     -                            -             PutMetricData, namespace Ladder
#   control (task)   read/write     -                            -             -
#   task execution   -              pepper, admin key, store,    ECS groups    pull from the listed ECR repos
#                                   Alpaca keys (when given)
#
# The read function serves the tenant and operator routes, so it reads the pepper and the admin
# key itself (at cold start, from the ARNs in its environment). ECS tasks never read a secret: the
# ECS agent, under the execution role, injects into each container only the values its task
# definition names (ingest nodes get the store password and, when given, the Alpaca key pool). Ingest nodes register, heartbeat
# and poll their assignments in the control table, hence read/write there.

locals {
  table_resources = concat([var.table_arn], var.table_index_arns)
  all_secret_arns = [var.api_key_pepper_secret_arn, var.admin_key_secret_arn, var.store_auth_token_secret_arn]
  # The read function never needs the venue keys; only the ECS agent injects them into services.
  service_secret_arns = compact(concat(local.all_secret_arns, [var.alpaca_credentials_secret_arn]))
}

data "aws_iam_policy_document" "table_access" {
  statement {
    sid = "ControlTable"
    actions = [
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      "dynamodb:ConditionCheckItem",
      "dynamodb:DeleteItem",
      "dynamodb:DescribeTable",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:Query",
      "dynamodb:Scan",
      "dynamodb:UpdateItem",
    ]
    resources = local.table_resources
  }
}

# --- read function (Lambda) -------------------------------------------------------------------

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "read" {
  source_policy_documents = [data.aws_iam_policy_document.table_access.json]

  statement {
    sid       = "Secrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = local.all_secret_arns
  }

  statement {
    sid       = "OwnLogGroup"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${var.read_log_group_arn}:*"]
  }

  # Lambda attaches the function to the VPC through ENIs; these calls take no resource scoping.
  statement {
    sid = "VpcNetworkInterfaces"
    actions = [
      "ec2:AssignPrivateIpAddresses",
      "ec2:CreateNetworkInterface",
      "ec2:DeleteNetworkInterface",
      "ec2:DescribeNetworkInterfaces",
      "ec2:DescribeSubnets",
      "ec2:UnassignPrivateIpAddresses",
    ]
    resources = ["*"]
  }
}

resource "aws_iam_role" "read" {
  name               = "${var.name}-read"
  description        = "Ladder read function"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "read" {
  name   = "ladder-read"
  role   = aws_iam_role.read.id
  policy = data.aws_iam_policy_document.read.json
}

# --- ECS tasks --------------------------------------------------------------------------------

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "execution" {
  statement {
    sid       = "InjectedSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = local.service_secret_arns
  }

  statement {
    sid       = "ServiceLogGroups"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for arn in var.service_log_group_arns : "${arn}:*"]
  }

  dynamic "statement" {
    for_each = length(var.ecr_repository_arns) > 0 ? [1] : []
    content {
      sid       = "EcrToken"
      actions   = ["ecr:GetAuthorizationToken"]
      resources = ["*"]
    }
  }

  dynamic "statement" {
    for_each = length(var.ecr_repository_arns) > 0 ? [1] : []
    content {
      sid       = "EcrPull"
      actions   = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
      resources = var.ecr_repository_arns
    }
  }
}

resource "aws_iam_role" "execution" {
  name               = "${var.name}-task-execution"
  description        = "Ladder ECS task execution (image pull, secret injection, log delivery)"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "execution" {
  name   = "ladder-task-execution"
  role   = aws_iam_role.execution.id
  policy = data.aws_iam_policy_document.execution.json
}

data "aws_iam_policy_document" "ingest" {
  source_policy_documents = [data.aws_iam_policy_document.table_access.json]

  # PutMetricData has no resource ARN; the namespace condition is its only scoping.
  statement {
    sid       = "BookMetrics"
    actions   = ["cloudwatch:PutMetricData"]
    resources = ["*"]
    condition {
      test     = "StringEquals"
      variable = "cloudwatch:namespace"
      values   = [var.metric_namespace]
    }
  }
}

resource "aws_iam_role" "ingest" {
  name               = "${var.name}-ingest"
  description        = "Ladder ingest node tasks"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "ingest" {
  name   = "ladder-ingest"
  role   = aws_iam_role.ingest.id
  policy = data.aws_iam_policy_document.ingest.json
}

data "aws_iam_policy_document" "control" {
  source_policy_documents = [data.aws_iam_policy_document.table_access.json]
}

resource "aws_iam_role" "control" {
  name               = "${var.name}-control"
  description        = "Ladder control plane tasks"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "control" {
  name   = "ladder-control"
  role   = aws_iam_role.control.id
  policy = data.aws_iam_policy_document.control.json
}
