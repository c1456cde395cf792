# One VPC over two availability zones. Public subnets hold only the NAT gateway(s); every Ladder
# process runs in the private subnets and reaches venues and AWS APIs through NAT (DynamoDB
# through a free gateway endpoint instead). The store's security group admits its port only from
# the ingest, read and control security groups and has no egress at all.

data "aws_availability_zones" "available" {
  state = "available"
}

locals {
  azs         = length(var.availability_zones) > 0 ? var.availability_zones : slice(data.aws_availability_zones.available.names, 0, 2)
  nat_count   = var.single_nat_gateway ? 1 : length(local.azs)
  app_sg_keys = toset(["ingest", "read", "control"])
}

resource "aws_vpc" "this" {
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(var.tags, { Name = var.name })
}

resource "aws_internet_gateway" "this" {
  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = var.name })
}

resource "aws_subnet" "public" {
  count = length(local.azs)

  vpc_id            = aws_vpc.this.id
  availability_zone = local.azs[count.index]
  cidr_block        = cidrsubnet(var.vpc_cidr, 4, count.index)
  tags              = merge(var.tags, { Name = "${var.name}-public-${local.azs[count.index]}", Tier = "public" })
}

resource "aws_subnet" "private" {
  count = length(local.azs)

  vpc_id            = aws_vpc.this.id
  availability_zone = local.azs[count.index]
  cidr_block        = cidrsubnet(var.vpc_cidr, 4, count.index + 8)
  tags              = merge(var.tags, { Name = "${var.name}-private-${local.azs[count.index]}", Tier = "private" })
}

resource "aws_route_table" "public" {
  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = "${var.name}-public" })
}

resource "aws_route" "public_internet" {
  route_table_id         = aws_route_table.public.id
  destination_cidr_block = "0.0.0.0/0"
  gateway_id             = aws_internet_gateway.this.id
}

resource "aws_route_table_association" "public" {
  count = length(local.azs)

  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public.id
}

resource "aws_eip" "nat" {
  count = local.nat_count

  domain = "vpc"
  tags   = merge(var.tags, { Name = "${var.name}-nat-${count.index}" })
}

resource "aws_nat_gateway" "this" {
  count = local.nat_count

  allocation_id = aws_eip.nat[count.index].id
  subnet_id     = aws_subnet.public[count.index].id
  tags          = merge(var.tags, { Name = "${var.name}-nat-${count.index}" })

  depends_on = [aws_internet_gateway.this]
}

resource "aws_route_table" "private" {
  count = length(local.azs)

  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = "${var.name}-private-${local.azs[count.index]}" })
}

resource "aws_route" "private_nat" {
  count = length(local.azs)

  route_table_id         = aws_route_table.private[count.index].id
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = aws_nat_gateway.this[var.single_nat_gateway ? 0 : count.index].id
}

resource "aws_route_table_association" "private" {
  count = length(local.azs)

  subnet_id      = aws_subnet.private[count.index].id
  route_table_id = aws_route_table.private[count.index].id
}

data "aws_region" "current" {}

# Control-store traffic stays on the AWS network and costs no NAT data processing.
resource "aws_vpc_endpoint" "dynamodb" {
  vpc_id            = aws_vpc.this.id
  service_name      = "com.amazonaws.${data.aws_region.current.name}.dynamodb"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = aws_route_table.private[*].id
  tags              = merge(var.tags, { Name = "${var.name}-dynamodb" })
}

resource "aws_security_group" "app" {
  for_each = local.app_sg_keys

  name        = "${var.name}-${each.key}"
  description = "Ladder ${each.key} processes"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name}-${each.key}" })
}

# Venue websockets, venue REST, Secrets Manager and CloudWatch all sit behind HTTPS on arbitrary
# addresses, so the application tiers may open any outbound connection; nothing may open one to them.
resource "aws_vpc_security_group_egress_rule" "app_any" {
  for_each = local.app_sg_keys

  security_group_id = aws_security_group.app[each.key].id
  description       = "Outbound to venues, AWS APIs and the store"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_security_group" "store" {
  name        = "${var.name}-store"
  description = "Ladder Valkey store: reachable only from the Ladder tiers"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name}-store" })
}

resource "aws_vpc_security_group_ingress_rule" "store_from_app" {
  for_each = local.app_sg_keys

  security_group_id            = aws_security_group.store.id
  description                  = "Valkey from the ${each.key} tier"
  ip_protocol                  = "tcp"
  from_port                    = var.store_port
  to_port                      = var.store_port
  referenced_security_group_id = aws_security_group.app[each.key].id
}
