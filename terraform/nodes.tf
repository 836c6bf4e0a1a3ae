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

resource "aws_instance" "node" {
  #checkov:skip=CKV_AWS_88:The public IP is only for egress (apt, PyPI, git) in a default VPC without NAT; the security group admits nothing. Set associate_public_ip = false with a NAT subnet.
  count                                = max(length(var.node_scenarios) - 1, 0)
  ami                                  = local.ami_id
  instance_type                        = var.instance_type
  subnet_id                            = data.aws_subnet.chosen.id
  vpc_security_group_ids               = [aws_security_group.bench.id]
  associate_public_ip_address          = var.associate_public_ip
  iam_instance_profile                 = aws_iam_instance_profile.bench.name
  key_name                             = var.ssh_key_name
  ebs_optimized                        = true
  monitoring                           = var.detailed_monitoring
  instance_initiated_shutdown_behavior = "terminate"
  user_data_base64                     = module.node_user_data[count.index].rendered_gzip_base64
  user_data_replace_on_change          = true

  # spot = true: as the benchmark instance (main.tf)
  dynamic "instance_market_options" {
    for_each = var.spot ? [1] : []
    content {
      market_type = "spot"
      spot_options {
        spot_instance_type             = "one-time"
        instance_interruption_behavior = "terminate"
        max_price                      = local.spot_max_price
      }
    }
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
    instance_metadata_tags      = "disabled"
  }

  root_block_device {
    volume_type           = "gp3"
    volume_size           = var.root_volume_size_gb
    encrypted             = true
    delete_on_termination = true
  }

  # The data volume: warehouse, Spark scratch space, results. Deleted with the instance.
  ebs_block_device {
    device_name           = "/dev/sdf"
    volume_type           = "gp3"
    volume_size           = var.data_volume_size_gb
    iops                  = local.data_iops
    throughput            = local.data_mibs
    encrypted             = true
    delete_on_termination = true
  }

  tags = {
    Name   = "iceberg-compaction-bench-${local.run_id}-node-${count.index + 1}"
    run_id = local.run_id
    role   = "bench-node"
    node   = tostring(count.index + 1)
  }

  # The role's policy must exist before the instance boots and starts uploading.
  depends_on = [aws_iam_role_policy.bench, aws_s3_object.harness, aws_s3_object.source_catalog]
}
