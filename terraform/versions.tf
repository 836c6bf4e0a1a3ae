terraform {
  # 1.6+: terraform_data, check blocks and strcontains(); tested offline with 1.11.
  required_version = ">= 1.6.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
  }
}

provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ project = "iceberg-compaction-bench" }, var.tags)
  }
}
