# `terraform test` with a mocked AWS provider: the shape of the book store in each mode, and the
# URL and cluster flag the processes get from it (LADDER_REDIS_URL, LADDER_REDIS_CLUSTER).
# tests/iac runs it offline; the mocked apply fills in the endpoints a plan cannot know.

mock_provider "aws" {
  mock_data "aws_secretsmanager_secret_version" {
    defaults = { secret_string = "mock-token-0123456789abcdef" }
  }
  mock_resource "aws_elasticache_replication_group" {
    defaults = {
      primary_endpoint_address       = "master.ladder-store.abc123.euw1.cache.amazonaws.com"
      reader_endpoint_address        = "replica.ladder-store.abc123.euw1.cache.amazonaws.com"
      configuration_endpoint_address = "clustercfg.ladder-store.abc123.euw1.cache.amazonaws.com"
      port                           = 6379
    }
  }
}

variables {
  name                  = "ladder"
  subnet_ids            = ["subnet-a", "subnet-b"]
  security_group_id     = "sg-store"
  auth_token_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/store-auth-token"
}

run "default_is_one_primary_and_a_replica_in_another_zone" {
  command = apply

  assert {
    condition     = aws_elasticache_replication_group.this.cluster_mode == "disabled" && aws_elasticache_replication_group.this.num_cache_clusters == 2
    error_message = "the default store is one shard: a primary and one replica"
  }
  assert {
    condition     = aws_elasticache_replication_group.this.automatic_failover_enabled && aws_elasticache_replication_group.this.multi_az_enabled
    error_message = "with a replica, a primary failure promotes it in the other zone"
  }
  assert {
    condition     = output.redis_url == "rediss://master.ladder-store.abc123.euw1.cache.amazonaws.com:6379" && !output.cluster_mode_enabled
    error_message = "processes get the primary endpoint over TLS and LADDER_REDIS_CLUSTER=false"
  }
}

run "cluster_mode_shards_books_over_node_groups_with_replicas" {
  command = apply

  variables {
    cluster_mode_enabled = true
    shards               = 3
    replicas_per_shard   = 1
  }

  assert {
    condition = (aws_elasticache_replication_group.this.cluster_mode == "enabled"
      && aws_elasticache_replication_group.this.num_node_groups == 3
    && aws_elasticache_replication_group.this.replicas_per_node_group == 1)
    error_message = "cluster mode sizes the group as num_node_groups x replicas_per_node_group"
  }
  assert {
    condition     = aws_elasticache_replication_group.this.parameter_group_name == "default.valkey8.cluster.on"
    error_message = "cluster mode needs the cluster-enabled parameter group of the engine's major version"
  }
  assert {
    condition     = output.redis_url == "rediss://clustercfg.ladder-store.abc123.euw1.cache.amazonaws.com:6379" && output.cluster_mode_enabled
    error_message = "processes get the configuration endpoint and LADDER_REDIS_CLUSTER=true"
  }
  assert {
    condition     = output.reader_endpoint_address == null
    error_message = "cluster mode has no single reader endpoint"
  }
}

run "cluster_mode_without_replicas_still_enables_failover" {
  command = apply

  variables {
    cluster_mode_enabled = true
    shards               = 2
    replicas_per_shard   = 0
    engine_version       = "7.2"
  }

  assert {
    condition     = aws_elasticache_replication_group.this.automatic_failover_enabled && !aws_elasticache_replication_group.this.multi_az_enabled
    error_message = "ElastiCache requires failover on in cluster mode; multi-AZ needs a replica"
  }
  assert {
    condition     = aws_elasticache_replication_group.this.parameter_group_name == "default.valkey7.cluster.on"
    error_message = "the parameter group follows the engine's major version"
  }
}

run "shards_must_be_whole" {
  command = plan

  variables {
    cluster_mode_enabled = true
    shards               = 2.5
  }

  expect_failures = [var.shards]
}
