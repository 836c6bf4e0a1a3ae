locals {
  uploader_path = var.uploader_path != "" ? var.uploader_path : "${path.module}/../../../bench/cloud.py"

  settings = {
    AWS_DEFAULT_REGION            = var.region
    AWS_REGION                    = var.region
    BENCH_RUN_ID                  = var.run_id
    BENCH_RESULTS_URI             = "s3://${var.results_bucket}/runs/${var.run_id}/${var.node_index > 0 ? "node-${var.node_index}/" : ""}"
    BENCH_SCENARIOS               = join(",", var.scenarios)
    BENCH_SCALE                   = tostring(var.scale)
    BENCH_ENGINES                 = join(",", var.engines)
    BENCH_REPS                    = tostring(var.reps)
    BENCH_ENGINE_TIMEOUT          = tostring(var.engine_timeout_seconds)
    BENCH_MEMORY_BUDGET           = var.memory_budget
    BENCH_INSTANCE_TYPE           = var.instance_type
    BENCH_EXTRA_RUN_ARGS          = var.extra_run_args
    BENCH_HARNESS_SOURCE          = var.harness_archive_uri != "" ? "s3" : "git"
    BENCH_HARNESS_GIT_URL         = var.harness_git_url
    BENCH_HARNESS_REF             = var.harness_ref
    BENCH_HARNESS_ARCHIVE_URI     = var.harness_archive_uri
    BENCH_HARNESS_DIR             = "/opt/bench/harness"
    BENCH_DATA_DIR                = "/data"
    BENCH_DATA_DEVICE             = "auto"
    BENCH_WAREHOUSE               = var.warehouse_uri != "" ? var.warehouse_uri : "/data/warehouse"
    BENCH_INSTALL_SYSTEM_PACKAGES = "1"
    BENCH_ENABLE_SSM              = var.enable_ssm ? "1" : "0"
    BENCH_PYTHON                  = "/usr/bin/python3"
    BENCH_UPLOADER                = "/opt/bench/cloud.py"
    BENCH_MAX_LIFETIME_MIN        = tostring(var.max_lifetime_minutes)
    BENCH_UPLOAD_RESERVE_S        = tostring(var.upload_reserve_seconds)
    BENCH_ROLE                    = var.role
    BENCH_SPARK_WORKERS           = tostring(var.spark_workers)
    BENCH_SPARK_MASTER_HOST       = var.spark_master_host
    BENCH_SOURCE_CATALOG_URI      = var.source_catalog_uri
    BENCH_SOURCE_TABLE            = var.source_table
    BENCH_SOURCE_SNAPSHOT         = var.source_snapshot
  }

  # Every value is single-quoted for bash, with embedded single quotes closed, escaped and reopened,
  # so no setting can inject shell code whatever it contains.
  env_lines = [for k in sort(keys(local.settings)) : "export ${k}='${replace(local.settings[k], "'", "'\\''")}'"]

  rendered = templatefile("${path.module}/user_data.sh.tftpl", {
    env_file  = join("\n", local.env_lines)
    bootstrap = chomp(file("${path.module}/../../bootstrap.sh"))
    uploader  = chomp(file(local.uploader_path))
  })
}

# The heredoc delimiters of the template must not occur inside the embedded files.
check "heredoc_delimiters" {
  assert {
    condition     = !strcontains(file("${path.module}/../../bootstrap.sh"), "BENCH_BOOTSTRAP_EOF") && !strcontains(file(local.uploader_path), "BENCH_UPLOADER_EOF")
    error_message = "bootstrap.sh or cloud.py contains a heredoc delimiter of user_data.sh.tftpl."
  }
}
