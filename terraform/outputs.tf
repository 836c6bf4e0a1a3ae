output "run_id" {
  description = "Name of this run."
  value       = local.run_id
}

# The run's preconditions sit on this output, which every plan evaluates: a failed one stops the plan before
# any instance exists.
output "instance_id" {
  description = "The benchmark instance (it terminates itself when done or at the deadline)."
  value       = module.bench.ids[0]

  precondition {
    condition     = var.harness_git_url != "" || var.harness_archive_path != ""
    error_message = "Set harness_git_url (with harness_ref) or harness_archive_path: the instance needs the harness source."
  }

  precondition {
    condition     = var.spark_workers == 0 || local.warehouse_on_s3
    error_message = "spark_workers > 0 needs warehouse_on_s3 = true: Spark's executors on the workers read and write the tables."
  }

  precondition {
    condition     = length(var.node_scenarios) == 0 || var.spark_workers == 0
    error_message = "node_scenarios (several benchmark nodes) and spark_workers (a Spark cluster) do not go together: choose one."
  }
}

output "ami_id" {
  description = "The AMI the instance booted (recorded for reproducibility)."
  value       = local.ami_id
}

output "region" {
  description = "AWS region."
  value       = var.region
}

output "results_bucket" {
  description = "Bucket holding the results."
  value       = local.bucket_name
}

output "results_prefix" {
  description = "Key prefix of this run: results/, logs/, report.html and, last, status.json."
  value       = local.results_prefix
}

output "results_uri" {
  description = "s3:// URI of this run's results."
  value       = "s3://${local.bucket_name}/${local.results_prefix}"
}

output "deadline_minutes" {
  description = "The instance powers off (and terminates) at the latest this many minutes after boot."
  value       = var.max_lifetime_minutes
}

output "fetch_command" {
  description = "How to fetch the results (and render the report locally)."
  value       = "bench aws fetch   # or: aws s3 cp --recursive s3://${local.bucket_name}/${local.results_prefix} results/aws/${local.run_id}/"
}

output "status_command" {
  description = "How to see whether the run is over."
  value       = "bench aws status   # or: aws s3 cp s3://${local.bucket_name}/${local.results_prefix}status.json -"
}

output "worker_instance_ids" {
  description = "The Spark workers (spark_workers > 0; empty otherwise). Each terminates itself once the benchmark instance's Spark master is gone, at the latest at the deadline."
  value       = module.worker.ids
}

output "worker_private_ips" {
  description = "Private IPs of the Spark workers (empty when spark_workers = 0)."
  value       = module.worker.private_ips
}

output "nodes" {
  description = "Benchmark nodes of the run: 1, or the number of node_scenarios groups. Node 0 is instance_id (results under results_prefix); node i > 0 is node_instance_ids[i - 1] (results under results_prefix + \"node-<i>/\")."
  value       = local.nodes
}

output "node_instance_ids" {
  description = "The extra benchmark nodes 1..k-1 (node_scenarios; empty otherwise). Each terminates itself when done or at the deadline."
  value       = module.node.ids
}
