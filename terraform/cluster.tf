# spark_workers = N > 0: a Spark standalone cluster of N + 1 nodes.  The benchmark instance (main.tf) runs
# the master and Spark's driver (`bench run --spark-master spark://<its private IP>:7077`); N workers of the
# same type, AMI and subnet run one Spark worker each (bootstrap.sh, BENCH_ROLE=worker) and power
# themselves off, which terminates them, once the master has stopped answering (the run is over), when it
# never answered, or at the same deadline as the benchmark instance.  With N = 0 nothing here exists.

locals {
  # Spark's fixed ports, opened only between members of the cluster's security group.  The harness pins
  # the driver's and the block manager's (random by default) to 7078 and 7079.
  spark_ports = {
    master-rpc    = { port = 7077, description = "Spark master RPC (workers and driver to the master)" }
    driver-rpc    = { port = 7078, description = "Spark driver RPC (executors to the driver)" }
    block-manager = { port = 7079, description = "Spark block manager (driver and executors)" }
    worker-rpc    = { port = 7080, description = "Spark worker RPC (master to the workers)" }
    master-webui  = { port = 8080, description = "Spark master web UI and JSON status (workers poll it)" }
    worker-webui  = { port = 8081, description = "Spark worker web UI (executor logs)" }
  }
}

# All nodes on the same low-latency network segment (one AZ: the subnet's).
resource "aws_placement_group" "cluster" {
  count    = local.cluster ? 1 : 0
  name     = "iceberg-compaction-bench-${local.run_id}"
  strategy = "cluster"
}

resource "aws_security_group" "cluster" {
  count       = local.cluster ? 1 : 0
  name_prefix = "iceberg-compaction-bench-spark-"
  description = "Spark standalone cluster of run ${local.run_id}: Spark ports between its members only"
  vpc_id      = data.aws_subnet.chosen.vpc_id

  lifecycle {
    create_before_destroy = true
  }
}

# Inbound from members of this same group only, on Spark's ports only: nothing from any CIDR.
resource "aws_vpc_security_group_ingress_rule" "spark" {
  for_each                     = local.cluster ? local.spark_ports : {}
  security_group_id            = aws_security_group.cluster[0].id
  referenced_security_group_id = aws_security_group.cluster[0].id
  description                  = each.value.description
  ip_protocol                  = "tcp"
  from_port                    = each.value.port
  to_port                      = each.value.port
}

# The matching outbound rules (the benchmark group's egress only reaches the internet on 80 and 443).
resource "aws_vpc_security_group_egress_rule" "spark" {
  for_each                     = local.cluster ? local.spark_ports : {}
  security_group_id            = aws_security_group.cluster[0].id
  referenced_security_group_id = aws_security_group.cluster[0].id
  description                  = each.value.description
  ip_protocol                  = "tcp"
  from_port                    = each.value.port
  to_port                      = each.value.port
}

# The workers' user data: the same module, settings and bootstrap as the benchmark instance's, with the
# worker role and the master's address (the workers depend on the benchmark instance, never the reverse).
module "worker_user_data" {
  count  = local.cluster ? 1 : 0
  source = "./modules/user_data"

  uploader_path = var.uploader_path

  role              = "worker"
  spark_master_host = module.bench.private_ips[0]
  spark_workers     = var.spark_workers

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
  source_catalog_uri     = local.source ? "s3://${local.bucket_name}/${local.source_catalog_key}" : ""
  source_table           = var.source_table
  source_snapshot        = var.source_snapshot
}

# The workers (modules/instance): the benchmark instance's security groups and placement group, an instance
# profile of their own.  The cluster's group and the workers' profile are read with splats: a call's arguments
# are evaluated even when it creates no instance (spark_workers = 0).
module "worker" {
  source = "./modules/instance"

  instance_count = var.spark_workers
  instances = [for i in range(var.spark_workers) : {
    name             = "iceberg-compaction-bench-${local.run_id}-worker-${i}"
    user_data_base64 = module.worker_user_data[0].rendered_gzip_base64
  }]
  role                 = "spark-worker"
  security_group_ids   = concat([aws_security_group.bench.id], aws_security_group.cluster[*].id)
  placement_group      = one(aws_placement_group.cluster[*].name)
  iam_instance_profile = one(aws_iam_instance_profile.worker[*].name)

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

  # The role's policy must exist before the instances boot and read the harness.
  depends_on = [aws_iam_role_policy.worker, aws_s3_object.harness]
}

