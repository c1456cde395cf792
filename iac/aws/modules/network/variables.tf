variable "name" {
  description = "Deployment name, used as a prefix for every resource name."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "vpc_cidr" {
  description = "IPv4 CIDR of the VPC; it is cut into /(prefix+4) subnets, so a /16 gives /20 subnets."
  type        = string
  default     = "10.40.0.0/16"

  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0)) && try(tonumber(split("/", var.vpc_cidr)[1]) <= 22, false)
    error_message = "vpc_cidr must be an IPv4 CIDR with a prefix of /22 or shorter."
  }
}

variable "availability_zones" {
  description = "Exactly two availability zones to use; empty picks the region's first two available zones."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.availability_zones) == 0 || length(var.availability_zones) == 2
    error_message = "availability_zones must be empty or list exactly two zones."
  }
}

variable "single_nat_gateway" {
  description = "One NAT gateway for both zones (cheaper) instead of one per zone (survives a zone outage)."
  type        = bool
  default     = true
}

variable "store_port" {
  description = "TCP port of the Valkey store, opened to the application security groups."
  type        = number
  default     = 6379

  validation {
    condition     = var.store_port >= 1024 && var.store_port <= 65535
    error_message = "store_port must be between 1024 and 65535."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
