# Every EC2 instance of a run: the benchmark instance, its Spark workers and the extra benchmark nodes are
# this one resource, so that all of them share the volumes, IMDSv2, monitoring, Spot settings and
# self-termination; a call gives how many, their names and user data, role, security groups, placement group
# and instance profile, and the run's AMI, type, subnet and volume sizes.
resource "aws_instance" "this" {
  #checkov:skip=CKV_AWS_88:The public IP is only for egress (apt, PyPI, git) in a default VPC without NAT; the security groups admit no CIDR but SSH from the allowed networks when asked for, and a Spark cluster's own members on Spark's ports. Set associate_public_ip = false with a NAT subnet.
  count                                = var.instance_count
  ami                                  = var.ami_id
  instance_type                        = var.instance_type
  subnet_id                            = var.subnet_id
  vpc_security_group_ids               = var.security_group_ids
  placement_group                      = var.placement_group
  associate_public_ip_address          = var.associate_public_ip
  iam_instance_profile                 = var.iam_instance_profile
  key_name                             = var.key_name
  ebs_optimized                        = true
  monitoring                           = var.monitoring
  instance_initiated_shutdown_behavior = "terminate"
  user_data_base64                     = var.instances[count.index].user_data_base64
  user_data_replace_on_change          = true

  # spot = true: a one-time Spot instance, terminated if AWS interrupts it (a one-time request cannot be
  # stopped, so "terminate" is also the only shutdown behaviour it allows, which the deadline relies on).
  # An interrupted Spark worker takes its executor with it, mid-run: the engine run's result records what
  # Spark made of it.
  dynamic "instance_market_options" {
    for_each = var.spot ? [1] : []
    content {
      market_type = "spot"
      spot_options {
        spot_instance_type             = "one-time"
        instance_interruption_behavior = "terminate"
        max_price                      = var.spot_max_price
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
    # Encrypted with the account's AWS-managed EBS key (a customer-managed KMS key would add cost and
    # key administration for throw-away volumes).
    volume_type           = "gp3"
    volume_size           = var.root_volume_size_gb
    encrypted             = true
    delete_on_termination = true
  }

  # The data volume: the warehouse, results and Spark's scratch space (shuffle, spill, the executors' work
  # directories on a worker). Deleted with the instance.
  ebs_block_device {
    device_name           = "/dev/sdf"
    volume_type           = "gp3"
    volume_size           = var.data_volume_size_gb
    iops                  = var.data_volume_iops
    throughput            = var.data_volume_throughput
    encrypted             = true
    delete_on_termination = true
  }

  tags = merge({
    Name   = var.instances[count.index].name
    run_id = var.run_id
    role   = var.role
  }, var.instances[count.index].tags)

  lifecycle {
    precondition {
      condition     = length(var.instances) == var.instance_count
      error_message = "instances must have one element per instance (instance_count)."
    }
  }
}
