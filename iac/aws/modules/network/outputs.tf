output "vpc_id" {
  description = "ID of the VPC."
  value       = aws_vpc.this.id
}

output "private_subnet_ids" {
  description = "Private subnets (one per zone) for the store, the Lambda function and the ECS tasks."
  value       = aws_subnet.private[*].id
}

output "public_subnet_ids" {
  description = "Public subnets (one per zone), holding the NAT gateway(s)."
  value       = aws_subnet.public[*].id
}

output "ingest_security_group_id" {
  description = "Security group of the ingest node tasks."
  value       = aws_security_group.app["ingest"].id
}

output "read_security_group_id" {
  description = "Security group of the read function."
  value       = aws_security_group.app["read"].id
}

output "control_security_group_id" {
  description = "Security group of the control plane tasks."
  value       = aws_security_group.app["control"].id
}

output "store_security_group_id" {
  description = "Security group of the Valkey store."
  value       = aws_security_group.store.id
}
