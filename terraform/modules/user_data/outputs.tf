output "rendered" {
  description = "The user data script, plain text."
  value       = local.rendered
}

output "rendered_gzip_base64" {
  description = "What the instance receives (user_data_base64): the script gzip-compressed, then base64."
  value       = base64gzip(local.rendered)
}

output "settings" {
  description = "The environment given to terraform/bootstrap.sh."
  value       = local.settings
}

output "results_uri" {
  description = "Where the run's results land."
  value       = local.settings.BENCH_RESULTS_URI
}
