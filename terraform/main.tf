# One instance runs the whole benchmark, uploads everything to S3 and terminates itself.  With
# spark_workers = N > 0 (cluster.tf), N more instances run Spark standalone workers for it: the benchmark
# instance runs the master and Spark's driver; every worker powers itself off once the master is gone.
# With node_scenarios = k >= 1 groups (nodes.tf), the benchmark instance runs group 0 and k - 1 more
# benchmark instances run the other groups in parallel, each uploading under runs/<run-id>/node-<i>/.

# The run's name: fixed at the first apply (or given), so that later plans do not replace the instance.
resource "terraform_data" "run_id" {
  input            = var.run_id != "" ? var.run_id : formatdate("YYYYMMDD'T'hhmmss'Z'", timestamp())
  triggers_replace = [var.run_id]

  lifecycle {
    ignore_changes = [input]
  }
}

# The latest official Debian 12 (bookworm) amd64 AMI, published by Debian (account 136693071363).
# Debian 12 ships Python 3.11 and OpenJDK 17, the versions the harness is pinned to and tested with.
data "aws_ami" "debian" {
  count       = var.ami_id == "" ? 1 : 0
  most_recent = true
  owners      = ["136693071363"]

  filter {
    name   = "name"
    values = ["debian-12-amd64-*"]
  }

  filter {
    name   = "architecture"
    values = ["x86_64"]
  }

  filter {
    name   = "virtualization-type"
    values = ["hvm"]
  }

  filter {
    name   = "root-device-type"
    values = ["ebs"]
  }
}

data "aws_vpc" "default" {
  count   = var.subnet_id == "" ? 1 : 0
  default = true
}

data "aws_subnets" "default" {
  count = var.subnet_id == "" ? 1 : 0

  filter {
    name   = "vpc-id"
    values = [data.aws_vpc.default[0].id]
  }

  filter {
    name   = "default-for-az"
    values = ["true"]
  }
}

data "aws_subnet" "chosen" {
  id = var.subnet_id != "" ? var.subnet_id : sort(data.aws_subnets.default[0].ids)[0]
}

locals {
  run_id = terraform_data.run_id.output
  ami_id = var.ami_id != "" ? var.ami_id : data.aws_ami.debian[0].id
  # var.storage, when set, decides the volume's performance and the warehouse's place on its own
  warehouse_on_s3 = var.storage == "" ? var.warehouse_on_s3 : var.storage == "s3"
  max_performance = var.storage == "" ? var.data_volume_max_performance : var.storage == "gp3-max"
  data_iops       = local.max_performance ? 16000 : var.storage == "" ? var.data_volume_iops : 3000
  data_mibs       = local.max_performance ? 1000 : var.storage == "" ? var.data_volume_throughput : 125

  results_prefix = "runs/${local.run_id}/"
  warehouse_uri  = local.warehouse_on_s3 ? "s3://${local.bucket_name}/warehouse/${local.run_id}" : ""
  harness_key    = "harness/${local.run_id}.tar.gz"
  cluster        = var.spark_workers > 0

  # several benchmark nodes (nodes.tf): the benchmark instance runs group 0, module.node's instance i - 1 group i
  nodes           = max(length(var.node_scenarios), 1)
  bench_scenarios = length(var.node_scenarios) > 0 ? var.node_scenarios[0] : var.scenarios
  # spot: null = up to the on-demand price (AWS's default when no maximum is given)
  spot_max_price = var.spot_max_price != "" ? var.spot_max_price : null

  # your own table (read-only): its bucket and prefix, its catalog file shipped beside the harness archive
  source             = var.source_table != ""
  source_bucket      = var.source_s3_uri != "" ? regex("^s3://([^/]+)/", var.source_s3_uri)[0] : ""
  source_prefix      = var.source_s3_uri != "" ? trimsuffix(regex("^s3://[^/]+/(.+)$", var.source_s3_uri)[0], "/") : ""
  source_catalog_key = "harness/${local.run_id}-source-catalog.yaml"
  # the prefixes this run writes in its own bucket: a source there must lie outside them (and they outside it)
  run_prefixes = ["${local.results_prefix}", "warehouse/${local.run_id}/", "harness/"]
  source_apart = local.source_bucket != local.bucket_name || alltrue([for p in local.run_prefixes :
  !startswith("${local.source_prefix}/", p) && !startswith(p, "${local.source_prefix}/")])
}

module "user_data" {
  source = "./modules/user_data"

  uploader_path = var.uploader_path

  run_id                 = local.run_id
  results_bucket         = local.bucket_name
  region                 = var.region
  scenarios              = local.bench_scenarios
  scale                  = var.scale
  engines                = var.engines
  reps                   = var.reps
  engine_timeout_seconds = var.engine_timeout_seconds
  memory_budget          = var.memory_budget
  instance_type          = var.instance_type
  extra_run_args         = var.extra_run_args
  harness_git_url        = var.harness_git_url
  harness_ref            = var.harness_ref
  harness_archive_uri    = var.harness_archive_path != "" ? "s3://${local.bucket_name}/${local.harness_key}" : ""
  warehouse_uri          = local.warehouse_uri
  max_lifetime_minutes   = var.max_lifetime_minutes
  upload_reserve_seconds = var.upload_reserve_seconds
  enable_ssm             = var.enable_ssm
  spark_workers          = var.spark_workers
  source_catalog_uri     = local.source ? "s3://${local.bucket_name}/${local.source_catalog_key}" : ""
  source_table           = var.source_table
  source_snapshot        = var.source_snapshot
}

# The catalog file of your own table (bench aws up --source-catalog), read by the instance at boot.
resource "aws_s3_object" "source_catalog" {
  count       = local.source ? 1 : 0
  bucket      = local.bucket_name
  key         = local.source_catalog_key
  source      = var.source_catalog_path
  source_hash = filemd5(var.source_catalog_path)

  depends_on = [aws_s3_bucket_public_access_block.results, aws_s3_bucket_server_side_encryption_configuration.results]

  lifecycle {
    precondition {
      condition     = var.source_catalog_path != "" && var.source_s3_uri != ""
      error_message = "source_table needs source_catalog_path (the catalog file) and source_s3_uri (where its files are: the role may read only there)."
    }

    precondition {
      condition     = local.warehouse_on_s3
      error_message = "source_table needs the warehouse on S3 (warehouse_on_s3 = true or storage = \"s3\"): the clone of a table on S3 is written to this run's warehouse prefix, the only place the role may write."
    }

    precondition {
      condition     = local.source_apart
      error_message = "source_s3_uri overlaps what this run writes in the results bucket (runs/<run-id>/, warehouse/<run-id>/, harness/): put the source elsewhere."
    }
  }
}

# The harness source packed from a local checkout (bench aws up), read by the instance at boot.
resource "aws_s3_object" "harness" {
  count       = var.harness_archive_path != "" ? 1 : 0
  bucket      = local.bucket_name
  key         = local.harness_key
  source      = var.harness_archive_path
  source_hash = filemd5(var.harness_archive_path)

  depends_on = [aws_s3_bucket_public_access_block.results, aws_s3_bucket_server_side_encryption_configuration.results]
}

resource "aws_security_group" "bench" {
  name_prefix = "iceberg-compaction-bench-"
  description = "Benchmark instance: no inbound by default; outbound HTTP(S) for apt, PyPI and git"
  vpc_id      = data.aws_subnet.chosen.vpc_id

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_egress_rule" "https" {
  #checkov:skip=CKV_AWS_382:Egress to the internet on 443 is required: apt, PyPI, git and S3 over HTTPS; nothing is allowed in.
  security_group_id = aws_security_group.bench.id
  description       = "HTTPS: PyPI, git, S3, SSM"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "http" {
  #checkov:skip=CKV_AWS_382:Egress on 80 is required: Debian's apt mirrors (signed packages) are served over HTTP; nothing is allowed in.
  security_group_id = aws_security_group.bench.id
  description       = "HTTP: Debian apt mirrors (packages are signed)"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = "0.0.0.0/0"
}

# Inbound SSH only when asked for, and never from the whole internet (see the variable's validation).
resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each          = toset(var.ssh_ingress_cidrs)
  security_group_id = aws_security_group.bench.id
  description       = "SSH from an allowed network"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null
}

# The benchmark instance (modules/instance: every instance of a run is that one resource).
module "bench" {
  source = "./modules/instance"

  instance_count = 1
  instances = [{
    name             = "iceberg-compaction-bench-${local.run_id}"
    user_data_base64 = module.user_data.rendered_gzip_base64
  }]
  role                 = "bench"
  security_group_ids   = concat([aws_security_group.bench.id], aws_security_group.cluster[*].id)
  placement_group      = one(aws_placement_group.cluster[*].name)
  iam_instance_profile = aws_iam_instance_profile.bench.name

  run_id                 = local.run_id
  ami_id                 = local.ami_id
  instance_type          = var.instance_type
  subnet_id              = data.aws_subnet.chosen.id
  associate_public_ip    = var.associate_public_ip
  key_name               = var.ssh_key_name
  monitoring             = var.detailed_monitoring
  spot                   = var.spot
  spot_max_price         = local.spot_max_price
  root_volume_size_gb    = var.root_volume_size_gb
  data_volume_size_gb    = var.data_volume_size_gb
  data_volume_iops       = local.data_iops
  data_volume_throughput = local.data_mibs

  # The role's policy must exist before the instance boots and starts uploading.
  depends_on = [aws_iam_role_policy.bench, aws_s3_object.harness, aws_s3_object.source_catalog]
}

