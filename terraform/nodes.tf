# node_scenarios = k >= 1 groups: the run spread over k identical benchmark instances, in parallel.  The
# benchmark instance (main.tf) runs group 0 as it would run `scenarios`; k - 1 more instances, built here
# exactly like it (same AMI, type, subnet, security group, role, volumes, IMDSv2, deadline, self-termination),
# run one group each.  Every node runs its scenarios with every engine: a scenario is never split over
# nodes, so both engines of it share one machine and one input.  Node i > 0 uploads to
# runs/<run-id>/node-<i>/ (its own status.json, written last) and, with the warehouse on S3, uses
# warehouse/<run-id>/node-<i>; the instance role already covers both (runs/<run-id>/*, warehouse/<run-id>/*).
# With node_scenarios = [] (the default) nothing here exists.

module "node_user_data" {
  count  = max(length(var.node_scenarios) - 1, 0)
  source = "./modules/user_data"

  uploader_path = var.uploader_path

  node_index    = count.index + 1
  scenarios     = var.node_scenarios[count.index + 1]
  warehouse_uri = local.warehouse_on_s3 ? "${local.warehouse_uri}/node-${count.index + 1}" : ""

  run_id                 = local.run_id
  results_bucket         = local.bucket_name
  region                 = var.region
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
  max_lifetime_minutes   = var.max_lifetime_minutes
  upload_reserve_seconds = var.upload_reserve_seconds
  enable_ssm             = var.enable_ssm
  source_catalog_uri     = local.source ? "s3://${local.bucket_name}/${local.source_catalog_key}" : ""
  source_table           = var.source_table
  source_snapshot        = var.source_snapshot
}

# The extra nodes (modules/instance): the benchmark instance's security group, role and volumes; node i its
# own user data, Name and node tag.
module "node" {
  source = "./modules/instance"

  instance_count = max(length(var.node_scenarios) - 1, 0)
  instances = [for i, ud in module.node_user_data : {
    name             = "iceberg-compaction-bench-${local.run_id}-node-${i + 1}"
    user_data_base64 = ud.rendered_gzip_base64
    tags             = { node = tostring(i + 1) }
  }]
  role                 = "bench-node"
  security_group_ids   = [aws_security_group.bench.id]
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

  # The role's policy must exist before the instances boot and start uploading.
  depends_on = [aws_iam_role_policy.bench, aws_s3_object.harness, aws_s3_object.source_catalog]
}

