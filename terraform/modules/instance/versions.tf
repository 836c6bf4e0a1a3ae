# The root module pins the provider's version; a child module names its source only, so that whatever
# version the root selects (or a copy of it relaxes) also serves this module.
terraform {
  required_version = ">= 1.6.0"

  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}
