provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ Project = "ladder", Deployment = var.name }, var.tags)
  }
}
