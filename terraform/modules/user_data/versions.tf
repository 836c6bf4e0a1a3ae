# Provider-free on purpose: this module only renders the instance's user data with templatefile(), so
# it can be applied offline (terraform/render/) and checked with bash -n and shellcheck in CI.
terraform {
  required_version = ">= 1.6.0"
}
