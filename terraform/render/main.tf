# Renders the instance's user data offline, with no provider: CI applies this root module, then runs
# bash -n and shellcheck on the result (tests/test_terraform.py).  It uses the very module the real
# deployment uses (../modules/user_data); only the inputs below are examples.
terraform {
  required_version = ">= 1.6.0"
}

variable "harness_archive_uri" {
  type    = string
  default = ""
}

variable "warehouse_uri" {
  type    = string
  default = ""
}

variable "memory_budget" {
  type    = string
  default = "64G"
}

variable "role" {
  type    = string
  default = "bench"
}

variable "spark_workers" {
  type    = number
  default = 0
}

variable "spark_master_host" {
  type    = string
  default = ""
}

variable "source_catalog_uri" {
  type    = string
  default = ""
}

variable "source_table" {
  type    = string
  default = ""
}

variable "node_index" {
  type    = number
  default = 0
}

variable "scenarios" {
  type    = list(string)
  default = ["bin-packing", "bin-packing-zstd", "deletes-standard", "deletes-high", "deletes-massive"]
}

module "user_data" {
  source                 = "../modules/user_data"
  run_id                 = "20250101T000000Z"
  results_bucket         = "example-results-bucket"
  region                 = "us-east-1"
  scenarios              = var.scenarios
  scale                  = 1.0
  engines                = ["spark", "risingwave"]
  reps                   = 1
  engine_timeout_seconds = 3600
  memory_budget          = var.memory_budget
  instance_type          = "m5.4xlarge"
  harness_git_url        = "https://example.invalid/iceberg-compaction-bench.git"
  harness_ref            = "v0.1.0"
  harness_archive_uri    = var.harness_archive_uri
  warehouse_uri          = var.warehouse_uri
  max_lifetime_minutes   = 480
  enable_ssm             = false
  role                   = var.role
  spark_workers          = var.spark_workers
  spark_master_host      = var.spark_master_host
  source_catalog_uri     = var.source_catalog_uri
  source_table           = var.source_table
  node_index             = var.node_index
}

output "user_data" {
  value = module.user_data.rendered
}

output "user_data_gzip_base64" {
  value = module.user_data.rendered_gzip_base64
}

output "settings" {
  value = module.user_data.settings
}
