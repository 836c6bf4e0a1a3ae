# `terraform test` of the Spark cluster switch against a mocked AWS provider: plans only, no AWS account,
# no credentials. tests/cloud/test_terraform.py runs it offline when an AWS provider binary is at hand (a local
# plugin directory); with network access, `terraform init && terraform test` in terraform/ runs it too.

mock_provider "aws" {
  mock_data "aws_subnets" {
    defaults = { ids = ["subnet-0123456789abcdef0"] }
  }
  mock_data "aws_subnet" {
    defaults = { vpc_id = "vpc-0123456789abcdef0" }
  }
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
}

variables {
  harness_git_url = "https://example.invalid/iceberg-compaction-bench.git"
  run_id          = "20250101T000000Z"
}

# spark_workers = 0 (the default): today's single node, nothing of the cluster.
run "single_node_by_default" {
  command = apply # of the mocked provider: nothing is created anywhere, every value is known

  assert {
    condition = (length(module.worker.instances) == 0 && length(aws_placement_group.cluster) == 0
      && length(aws_security_group.cluster) == 0 && length(aws_vpc_security_group_ingress_rule.spark) == 0
      && length(aws_vpc_security_group_egress_rule.spark) == 0 && length(aws_iam_role.worker) == 0
      && length(aws_iam_role_policy.worker) == 0 && length(aws_iam_instance_profile.worker) == 0
    && length(module.worker_user_data) == 0)
    error_message = "spark_workers = 0 must create nothing of the Spark cluster."
  }

  assert {
    condition     = length(module.bench.instances[0].vpc_security_group_ids) == 1 && module.bench.instances[0].tags.role == "bench"
    error_message = "spark_workers = 0: the benchmark instance has its one security group, as before."
  }

  assert {
    condition = (length(module.bench.instances) == 1
      && module.bench.instances[0].tags == tomap({ Name = "iceberg-compaction-bench-20250101T000000Z", run_id = "20250101T000000Z", role = "bench" })
      && module.bench.instances[0].user_data_base64 == module.user_data.rendered_gzip_base64
    && module.bench.instances[0].iam_instance_profile == aws_iam_instance_profile.bench.name)
    error_message = "One benchmark instance: its Name, run and role tags, its user data, the bench instance profile."
  }

  assert {
    condition     = module.user_data.settings.BENCH_ROLE == "bench" && module.user_data.settings.BENCH_SPARK_WORKERS == "0"
    error_message = "spark_workers = 0: the bootstrap runs the benchmark alone."
  }

  assert {
    condition     = output.worker_instance_ids == [] && output.worker_private_ips == []
    error_message = "spark_workers = 0: no worker outputs."
  }
}

run "two_workers" {
  command = apply

  variables {
    spark_workers   = 2
    warehouse_on_s3 = true
  }

  assert {
    condition     = length(module.worker.instances) == 2 && length(aws_placement_group.cluster) == 1 && aws_placement_group.cluster[0].strategy == "cluster"
    error_message = "spark_workers = 2: two workers in a cluster placement group."
  }

  assert {
    condition = alltrue([for w in module.worker.instances : w.instance_type == module.bench.instances[0].instance_type
      && w.ami == module.bench.instances[0].ami && w.instance_initiated_shutdown_behavior == "terminate"
      && w.metadata_options[0].http_tokens == "required" && w.ebs_optimized && w.monitoring
    && w.tags.role == "spark-worker" && w.tags.run_id == "20250101T000000Z"])
    error_message = "Workers: same type and AMI as the benchmark instance, same hardening, self-terminating."
  }

  assert {
    condition = (module.worker.instances[*].tags.Name == ["iceberg-compaction-bench-20250101T000000Z-worker-0", "iceberg-compaction-bench-20250101T000000Z-worker-1"]
      && alltrue([for w in module.worker.instances : w.user_data_base64 == module.worker_user_data[0].rendered_gzip_base64
    && w.iam_instance_profile == aws_iam_instance_profile.worker[0].name && length(w.tags) == 3]))
    error_message = "Worker i is named ...-worker-<i>; every worker has the worker user data and the worker instance profile."
  }

  assert {
    condition = (length(aws_vpc_security_group_ingress_rule.spark) == 6
      && sort([for r in aws_vpc_security_group_ingress_rule.spark : tostring(r.from_port)]) == sort(["7077", "7078", "7079", "7080", "8080", "8081"])
    && alltrue([for r in aws_vpc_security_group_ingress_rule.spark : r.from_port == r.to_port && r.cidr_ipv4 == null && r.cidr_ipv6 == null]))
    error_message = "The cluster's security group admits Spark's six ports, from no CIDR."
  }

  assert {
    condition = (length(module.bench.instances[0].vpc_security_group_ids) == 2
      && contains(module.bench.instances[0].vpc_security_group_ids, aws_security_group.cluster[0].id)
      && alltrue([for w in module.worker.instances : contains(w.vpc_security_group_ids, aws_security_group.cluster[0].id)])
      && module.bench.instances[0].placement_group == aws_placement_group.cluster[0].name
    && alltrue([for w in module.worker.instances : w.placement_group == aws_placement_group.cluster[0].name]))
    error_message = "The benchmark instance and the workers: in the cluster's security group and placement group."
  }

  assert {
    condition = alltrue([for r in aws_vpc_security_group_ingress_rule.spark :
    r.security_group_id == aws_security_group.cluster[0].id && r.referenced_security_group_id == aws_security_group.cluster[0].id])
    error_message = "Every ingress rule of the cluster's group admits members of that group only."
  }

  assert {
    condition     = module.worker_user_data[0].settings.BENCH_SPARK_MASTER_HOST == module.bench.instances[0].private_ip
    error_message = "The workers are given the benchmark instance's private IP as the master's address."
  }

  assert {
    condition     = output.worker_instance_ids == module.worker.instances[*].id && length(output.worker_private_ips) == 2
    error_message = "Outputs: the workers' ids and private IPs."
  }

  assert {
    condition = (module.user_data.settings.BENCH_ROLE == "bench" && module.user_data.settings.BENCH_SPARK_WORKERS == "2"
      && module.worker_user_data[0].settings.BENCH_ROLE == "worker"
      && module.worker_user_data[0].settings.BENCH_MAX_LIFETIME_MIN == module.user_data.settings.BENCH_MAX_LIFETIME_MIN
    && module.worker_user_data[0].settings.BENCH_WAREHOUSE == module.user_data.settings.BENCH_WAREHOUSE)
    error_message = "The bootstrap roles: the benchmark instance waits for 2 workers; the workers share its deadline and warehouse."
  }

  assert {
    condition     = length(aws_iam_role.worker) == 1 && length(aws_iam_instance_profile.worker) == 1 && length(aws_iam_role_policy_attachment.worker_ssm) == 0
    error_message = "Workers have a role of their own (and no SSM unless enable_ssm)."
  }
}

run "cluster_needs_an_s3_warehouse" {
  command = plan

  variables {
    spark_workers = 1
  }

  expect_failures = [output.instance_id]
}

run "at_most_32_workers" {
  command = plan

  variables {
    spark_workers   = 33
    warehouse_on_s3 = true
  }

  expect_failures = [var.spark_workers]
}
