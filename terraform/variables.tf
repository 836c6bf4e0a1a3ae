# ----- where and on what ----------------------------------------------------------------------------
variable "region" {
  description = "AWS region."
  type        = string
  default     = "us-east-1"
}

variable "instance_type" {
  description = "Instance type. The published numbers come from one m5.4xlarge (16 vCPU, 64 GiB)."
  type        = string
  default     = "m5.4xlarge"
}

variable "ami_id" {
  description = "AMI to use instead of the latest official Debian 12 (bookworm) amd64 AMI, looked up by default. Must be Debian-like (apt) with Python 3.11."
  type        = string
  default     = ""
}

variable "subnet_id" {
  description = "Subnet of the instance (needs a route to the internet: apt, PyPI, git). Empty = a default subnet of the default VPC."
  type        = string
  default     = ""
}

variable "associate_public_ip" {
  description = "Give the instance a public IP (egress only: nothing is allowed in). Set false in a private subnet with a NAT gateway."
  type        = bool
  default     = true
}

# ----- what runs -------------------------------------------------------------------------------------
variable "scenarios" {
  description = "Scenarios to run, in order (`bench list`). Default: the five published runs."
  type        = list(string)
  default     = ["bin-packing", "bin-packing-zstd", "deletes-standard", "deletes-high", "deletes-massive"]

  validation {
    condition     = length(var.scenarios) > 0 && alltrue([for s in var.scenarios : can(regex("^[a-z0-9][a-z0-9-]*$", s))])
    error_message = "scenarios: at least one name, each made of lowercase letters, digits and '-'."
  }
}

variable "scale" {
  description = "Scale factor of the data: 1.0 = the published size (~193 GB for bin-packing)."
  type        = number
  default     = 1.0

  validation {
    condition     = var.scale > 0
    error_message = "scale must be positive."
  }
}

variable "engines" {
  description = "Engines to compare: NAME or NAME:PROFILE (arrow-floor is the physical floor, it commits nothing)."
  type        = list(string)
  default     = ["spark", "risingwave", "arrow-floor"]

  validation {
    condition     = length(var.engines) > 0 && alltrue([for e in var.engines : can(regex("^[a-z0-9][a-z0-9_-]*(:[a-z0-9_-]+)?$", e))])
    error_message = "engines: at least one NAME or NAME:PROFILE, each made of lowercase letters, digits, '_' and '-'."
  }
}

variable "reps" {
  description = "Measured repetitions per engine and scenario."
  type        = number
  default     = 1

  validation {
    condition     = var.reps >= 1 && floor(var.reps) == var.reps
    error_message = "reps must be a whole number >= 1."
  }
}

variable "engine_timeout_seconds" {
  description = "Time limit of one engine run (the harness records a timeout and goes on)."
  type        = number
  default     = 3600
}

variable "memory_budget" {
  description = "Memory budget per engine run, e.g. \"64G\"; empty = the harness default."
  type        = string
  default     = ""
}

variable "extra_run_args" {
  description = "More `bench run` arguments, e.g. \"--warmup\"."
  type        = string
  default     = ""
}

# ----- your own table (bench aws up --source-catalog/--source-table) -----------------------------------
variable "source_catalog_path" {
  description = "Local path of a --source-catalog file (pyiceberg catalog properties; no secrets: the instance role is the credential), put in the results bucket for the instance. Empty = generated tables."
  type        = string
  default     = ""
}

variable "source_table" {
  description = "NS.TABLE of your own table in that catalog: every scenario runs on a zero-copy clone of it (`bench run --source-table`) in this run's warehouse prefix."
  type        = string
  default     = ""

  validation {
    condition     = var.source_table == "" || can(regex("^[A-Za-z0-9_][A-Za-z0-9_.-]*\\.[A-Za-z0-9_-]+$", var.source_table))
    error_message = "source_table: NAMESPACE.TABLE (letters, digits, '_', '-', '.')."
  }
}

variable "source_snapshot" {
  description = "Snapshot id of the source table to clone; empty = its current one."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^[0-9]*$", var.source_snapshot))
    error_message = "source_snapshot: a snapshot id (digits) or empty."
  }
}

variable "source_s3_uri" {
  description = "s3://bucket/prefix holding the source table's metadata, data and delete files (its location). The instance role may read there (s3:GetObject, s3:ListBucket under the prefix) and nowhere else in that bucket; it can never write or delete there."
  type        = string
  default     = ""

  validation {
    condition     = var.source_s3_uri == "" || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^*?]+$", var.source_s3_uri))
    error_message = "source_s3_uri: s3://bucket/prefix (a prefix, no wildcards)."
  }
}

variable "source_glue" {
  description = "The source catalog is AWS Glue in this account and region: the role may read the source table's Glue database and table (glue:GetDatabase, glue:GetTable), nothing else of Glue."
  type        = bool
  default     = false
}

variable "run_id" {
  description = "Name of the run (results under runs/<run_id>/). Empty = the UTC time of the first apply. `bench aws up` sets one per run."
  type        = string
  default     = ""

  validation {
    condition     = var.run_id == "" || can(regex("^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", var.run_id))
    error_message = "run_id: letters, digits, '.', '_' and '-' only (at most 100)."
  }
}

# ----- the harness -----------------------------------------------------------------------------------
variable "harness_git_url" {
  description = "Git URL of the harness, cloned on the instance (used when harness_archive_path is empty)."
  type        = string
  default     = ""
}

variable "harness_ref" {
  description = "Git tag, branch or commit of the harness to run."
  type        = string
  default     = "main"
}

variable "harness_archive_path" {
  description = "Local .tar.gz of the harness source; uploaded to the bucket (harness/<run_id>.tar.gz) and installed from there. `bench aws up` packs the local checkout this way."
  type        = string
  default     = ""
}

# ----- storage ---------------------------------------------------------------------------------------
variable "root_volume_size_gb" {
  description = "Root volume (gp3, encrypted): OS, JDK and the harness's virtualenv."
  type        = number
  default     = 30
}

variable "data_volume_size_gb" {
  description = "Data volume (gp3, encrypted) holding the warehouse, Spark scratch space and results. One scenario at scale 1.0 needs its input plus one compacted copy (~400 GB for bin-packing); each scenario's warehouse is deleted after it ran."
  type        = number
  default     = 1000

  validation {
    condition     = var.data_volume_size_gb >= 20 && var.data_volume_size_gb <= 16384
    error_message = "data_volume_size_gb must be between 20 and 16384."
  }
}

variable "data_volume_iops" {
  description = "Provisioned IOPS of the gp3 data volume (3000 = gp3's free baseline)."
  type        = number
  default     = 3000

  validation {
    condition     = var.data_volume_iops >= 3000 && var.data_volume_iops <= 16000
    error_message = "gp3 IOPS must be between 3000 and 16000."
  }
}

variable "data_volume_throughput" {
  description = "Provisioned throughput of the gp3 data volume in MiB/s. 125 = gp3's free baseline; the published Spark bin-packing figure (~126 MB/s) sits right at it, so rerun with data_volume_max_performance = true to see whether the disk was the limit."
  type        = number
  default     = 125

  validation {
    condition     = var.data_volume_throughput >= 125 && var.data_volume_throughput <= 1000
    error_message = "gp3 throughput must be between 125 and 1000 MiB/s."
  }
}

variable "data_volume_max_performance" {
  description = "Switch: provision the gp3 data volume at its maximum (16000 IOPS, 1000 MiB/s) instead of data_volume_iops/throughput. An m5.4xlarge's own EBS bandwidth (4,750 Mbps burst, ~593 MB/s) then becomes the limit."
  type        = bool
  default     = false
}

variable "warehouse_on_s3" {
  description = "Put the Iceberg warehouse on S3 (s3://<bucket>/warehouse/<run_id>/) instead of the data volume. Needs a harness whose `bench run --warehouse` accepts s3:// URIs (see README)."
  type        = bool
  default     = false
}

variable "storage" {
  description = "Where the table lives, as one choice (`bench plan --storage` models the same options): \"\" (the default) = as data_volume_* and warehouse_on_s3 say; \"gp3-baseline\" = the data volume at gp3's free 3000 IOPS / 125 MiB/s; \"gp3-max\" = the data volume at 16000 IOPS / 1000 MiB/s, held to the m5.4xlarge's 4,750 Mbps EBS bandwidth; \"s3\" = the warehouse on S3, read and written through the instance's network (up to 10 Gbps each way), the data volume at its baseline for scratch space and results. The published 277 s bin-packing time needs more than the instance's EBS maximum: of these, only s3 can produce it (docs/method.md)."
  type        = string
  default     = ""

  validation {
    condition     = contains(["", "gp3-baseline", "gp3-max", "s3"], var.storage)
    error_message = "storage must be \"\", \"gp3-baseline\", \"gp3-max\" or \"s3\"."
  }
}

# ----- a Spark standalone cluster ---------------------------------------------------------------------
variable "spark_workers" {
  description = "Spark workers besides the benchmark instance: 0 (the default, as published) = one instance runs everything. N > 0 = N more instances of instance_type, each a Spark standalone worker, with the master and Spark's driver on the benchmark instance (`bench run --spark-master`). Needs warehouse_on_s3 = true. Every node costs for the whole run."
  type        = number
  default     = 0

  validation {
    condition     = var.spark_workers >= 0 && var.spark_workers <= 32 && floor(var.spark_workers) == var.spark_workers
    error_message = "spark_workers must be a whole number between 0 and 32."
  }
}

# ----- several benchmark nodes --------------------------------------------------------------------------
variable "node_scenarios" {
  description = "Spread the scenarios over several identical benchmark instances, one group of scenarios each, run in parallel: [] (the default) = one instance runs `scenarios`; [[A, B], [C]] = the benchmark instance runs A and B, one more instance runs C. Each node runs its scenarios with every engine (a scenario is never split: its engines share one node and one input). Node i > 0 uploads to runs/<run_id>/node-<i>/ (its own status.json) and, with the warehouse on S3, uses warehouse/<run_id>/node-<i>. Replaces `scenarios` when set. Not with spark_workers. Every node costs for its own run. `bench aws up --nodes N` sets it."
  type        = list(list(string))
  default     = []

  validation {
    condition = (length(var.node_scenarios) <= 32 && alltrue([for g in var.node_scenarios : length(g) > 0])
      && alltrue([for s in flatten(var.node_scenarios) : can(regex("^[a-z0-9][a-z0-9-]*$", s))])
    && length(distinct(flatten(var.node_scenarios))) == length(flatten(var.node_scenarios)))
    error_message = "node_scenarios: at most 32 groups, none empty, names of lowercase letters, digits and '-', no scenario in two groups."
  }
}

# ----- spot instances ---------------------------------------------------------------------------------
variable "spot" {
  description = "Run every instance (the benchmark instance, the extra nodes and the Spark workers) as a one-time Spot instance, terminated if AWS interrupts it. Results uploaded before an interruption stay (the bootstrap uploads after each scenario); an interrupted node writes no status.json. The Spot price is AWS's of the moment."
  type        = bool
  default     = false
}

variable "spot_max_price" {
  description = "With spot = true: the highest hourly price in USD (e.g. \"0.40\"); empty (the default) = up to the on-demand price."
  type        = string
  default     = ""

  validation {
    condition     = var.spot_max_price == "" || can(regex("^[0-9]+(\\.[0-9]+)?$", var.spot_max_price))
    error_message = "spot_max_price: a price in USD per hour such as \"0.40\", or empty."
  }
}

# ----- results ---------------------------------------------------------------------------------------
variable "results_bucket_name" {
  description = "Results bucket. Empty = create one named iceberg-compaction-bench-<random>."
  type        = string
  default     = ""
}

variable "create_results_bucket" {
  description = "Create the results bucket (private, encrypted, versioned). false = use the existing bucket results_bucket_name."
  type        = bool
  default     = true
}

variable "results_bucket_force_destroy" {
  description = "Let `terraform destroy` delete a created results bucket with everything in it."
  type        = bool
  default     = false
}

# ----- safety and access -----------------------------------------------------------------------------
variable "max_lifetime_minutes" {
  description = "Hard deadline: the instance powers off, and so terminates, this long after boot, whatever runs. The benchmark is stopped upload_reserve_seconds earlier so results and logs still reach S3."
  type        = number
  default     = 480

  validation {
    condition     = var.max_lifetime_minutes >= 15 && var.max_lifetime_minutes <= 2880
    error_message = "max_lifetime_minutes must be between 15 and 2880 (two days)."
  }
}

variable "upload_reserve_seconds" {
  description = "Seconds kept before the deadline for the final upload."
  type        = number
  default     = 600
}

variable "enable_ssm" {
  description = "Allow AWS Systems Manager Session Manager access (installs the agent, attaches AmazonSSMManagedInstanceCore)."
  type        = bool
  default     = false
}

variable "ssh_key_name" {
  description = "EC2 key pair for SSH; null = none (the default: no SSH at all)."
  type        = string
  default     = null
}

variable "ssh_ingress_cidrs" {
  description = "CIDRs allowed to reach port 22. Empty (the default) = no inbound rule at all. The whole internet is refused."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.ssh_ingress_cidrs : can(cidrhost(c, 0)) && !contains(["0.0.0.0/0", "::/0"], c)])
    error_message = "ssh_ingress_cidrs: valid CIDRs only, and never 0.0.0.0/0 or ::/0."
  }
}

variable "detailed_monitoring" {
  description = "CloudWatch detailed (1-minute) monitoring of the instances. Only `bench aws rehearse` turns it off: its local AWS emulator has no MonitorInstances API."
  type        = bool
  default     = true
}

variable "uploader_path" {
  description = "Path of bench/cloud.py, embedded in the user data; empty = the checkout this module sits in (../bench/cloud.py). Set it when the module is used from a copy elsewhere."
  type        = string
  default     = ""
}

variable "tags" {
  description = "Extra tags on every resource."
  type        = map(string)
  default     = {}
}
