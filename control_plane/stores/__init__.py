"""Where the control plane keeps its state: Redis/Valkey by default, DynamoDB for serverless."""
