variable "run_id" {
  description = "Name of the run; results go to s3://<results_bucket>/runs/<run_id>/ (node_index i > 0: .../node-<i>/)."
  type        = string
}

variable "node_index" {
  description = "Benchmark node of a run spread over several (node_scenarios): 0 = the benchmark instance, results under runs/<run_id>/; i > 0 = results under runs/<run_id>/node-<i>/."
  type        = number
  default     = 0

  validation {
    condition     = var.node_index >= 0 && floor(var.node_index) == var.node_index
    error_message = "node_index must be a whole number >= 0."
  }
}

variable "results_bucket" {
  description = "Bucket receiving the results."
  type        = string
}

variable "region" {
  description = "AWS region (for boto3 on the instance)."
  type        = string
}

variable "scenarios" {
  description = "Scenarios to run, in order."
  type        = list(string)
}

variable "scale" {
  description = "Scale factor, 1.0 = the published size."
  type        = number
}

variable "engines" {
  description = "Engines to run."
  type        = list(string)
}

variable "reps" {
  description = "Measured repetitions per engine."
  type        = number
}

variable "engine_timeout_seconds" {
  description = "Time limit of one engine run."
  type        = number
}

variable "memory_budget" {
  description = "Memory budget per engine run (e.g. 64G); empty = the harness default."
  type        = string
  default     = ""
}

variable "instance_type" {
  description = "Instance type, passed to the harness for the cost model."
  type        = string
}

variable "extra_run_args" {
  description = "More `bench run` arguments."
  type        = string
  default     = ""
}

variable "harness_git_url" {
  description = "Git URL of the harness (when no archive is given)."
  type        = string
  default     = ""
}

variable "harness_ref" {
  description = "Git ref (tag, branch or commit) of the harness."
  type        = string
  default     = "main"
}

variable "harness_archive_uri" {
  description = "s3:// URI of a harness source archive; takes precedence over git."
  type        = string
  default     = ""
}

variable "warehouse_uri" {
  description = "Warehouse root: empty = a directory on the data volume, or an s3:// URI."
  type        = string
  default     = ""
}

variable "max_lifetime_minutes" {
  description = "Hard deadline: the instance powers off (and terminates) this long after boot."
  type        = number
}

variable "upload_reserve_seconds" {
  description = "Seconds kept before the deadline for the final upload."
  type        = number
  default     = 600
}

variable "enable_ssm" {
  description = "Install the SSM agent on the instance."
  type        = bool
  default     = false
}

variable "role" {
  description = "bench: the benchmark instance (runs `bench run`, and the Spark master when spark_workers > 0); worker: a Spark standalone worker of that master."
  type        = string
  default     = "bench"

  validation {
    condition     = contains(["bench", "worker"], var.role)
    error_message = "role must be bench or worker."
  }
}

variable "spark_workers" {
  description = "Spark workers of the run: the benchmark instance starts a master and waits for this many ALIVE workers (0 = no cluster)."
  type        = number
  default     = 0
}

variable "spark_master_host" {
  description = "Worker role: the address of the Spark master (the benchmark instance's private IP)."
  type        = string
  default     = ""
}

variable "source_catalog_uri" {
  description = "s3:// URI of the catalog file of your own table (bench role); empty = generated tables."
  type        = string
  default     = ""
}

variable "source_table" {
  description = "NS.TABLE of your own table: `bench run --source-catalog/--source-table` instead of --scale."
  type        = string
  default     = ""
}

variable "source_snapshot" {
  description = "Snapshot id of your own table to clone; empty = its current one."
  type        = string
  default     = ""
}

variable "uploader_path" {
  description = "Path of bench/cloud.py, embedded in the user data; empty = the checkout this module sits in."
  type        = string
  default     = ""
}
