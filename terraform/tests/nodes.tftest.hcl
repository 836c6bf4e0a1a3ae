# `terraform test` of several benchmark nodes (node_scenarios) and of spot instances against a mocked AWS
# provider: plans only, no AWS account, no credentials (run as cluster.tftest.hcl is: see there).

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

# node_scenarios = [] (the default): one benchmark instance running `scenarios`, on demand, as before.
run "one_on_demand_node_by_default" {
  command = apply # of the mocked provider: nothing is created anywhere

  assert {
    condition     = length(module.node.instances) == 0 && length(module.node_user_data) == 0 && output.nodes == 1 && output.node_instance_ids == []
    error_message = "node_scenarios = []: no extra node."
  }

  assert {
    condition = (module.user_data.settings.BENCH_SCENARIOS == join(",", var.scenarios)
    && module.user_data.settings.BENCH_RESULTS_URI == "s3://${output.results_bucket}/runs/20250101T000000Z/")
    error_message = "node_scenarios = []: the benchmark instance runs `scenarios` into runs/<run-id>/."
  }

  assert {
    condition     = length(module.bench.instances[0].instance_market_options) == 0
    error_message = "spot = false: an on-demand instance."
  }
}

run "three_nodes_on_spot" {
  command = apply

  variables {
    node_scenarios  = [["bin-packing"], ["deletes-high", "deletes-standard"], ["bin-packing-zstd"]]
    warehouse_on_s3 = true
    spot            = true
    spot_max_price  = "0.40"
  }

  assert {
    condition     = length(module.node.instances) == 2 && output.nodes == 3 && output.node_instance_ids == module.node.instances[*].id
    error_message = "Three groups: the benchmark instance and two more nodes."
  }

  assert {
    condition = alltrue([for n in module.node.instances : n.instance_type == module.bench.instances[0].instance_type
      && n.ami == module.bench.instances[0].ami && n.subnet_id == module.bench.instances[0].subnet_id
      && n.iam_instance_profile == module.bench.instances[0].iam_instance_profile
      && n.vpc_security_group_ids == module.bench.instances[0].vpc_security_group_ids
      && n.instance_initiated_shutdown_behavior == "terminate" && n.metadata_options[0].http_tokens == "required"
    && n.ebs_optimized && n.monitoring && n.tags.run_id == "20250101T000000Z"])
    error_message = "Extra nodes: the benchmark instance's type, AMI, subnet, role, security group and hardening."
  }

  assert {
    condition = alltrue([for i, n in module.node.instances : n.tags == tomap({
      Name = "iceberg-compaction-bench-20250101T000000Z-node-${i + 1}", run_id = "20250101T000000Z", role = "bench-node", node = tostring(i + 1)
    }) && n.user_data_base64 == module.node_user_data[i].rendered_gzip_base64])
    error_message = "Node i > 0: its Name and node tags, the user data of its group."
  }

  assert {
    condition = (module.user_data.settings.BENCH_SCENARIOS == "bin-packing"
      && module.user_data.settings.BENCH_RESULTS_URI == "s3://${output.results_bucket}/runs/20250101T000000Z/"
      && module.node_user_data[0].settings.BENCH_SCENARIOS == "deletes-high,deletes-standard"
      && module.node_user_data[0].settings.BENCH_RESULTS_URI == "s3://${output.results_bucket}/runs/20250101T000000Z/node-1/"
      && module.node_user_data[1].settings.BENCH_SCENARIOS == "bin-packing-zstd"
    && module.node_user_data[1].settings.BENCH_RESULTS_URI == "s3://${output.results_bucket}/runs/20250101T000000Z/node-2/")
    error_message = "Node i runs group i and uploads to runs/<run-id>/ (node 0) or runs/<run-id>/node-<i>/."
  }

  assert {
    condition = (module.user_data.settings.BENCH_WAREHOUSE == "s3://${output.results_bucket}/warehouse/20250101T000000Z"
      && module.node_user_data[0].settings.BENCH_WAREHOUSE == "s3://${output.results_bucket}/warehouse/20250101T000000Z/node-1"
    && module.node_user_data[1].settings.BENCH_MAX_LIFETIME_MIN == module.user_data.settings.BENCH_MAX_LIFETIME_MIN)
    error_message = "Each node its own warehouse prefix under this run's; the same deadline everywhere."
  }

  assert {
    condition = alltrue([for i in concat([module.bench.instances[0]], module.node.instances) :
      i.instance_market_options[0].market_type == "spot"
      && i.instance_market_options[0].spot_options[0].spot_instance_type == "one-time"
      && i.instance_market_options[0].spot_options[0].instance_interruption_behavior == "terminate"
    && i.instance_market_options[0].spot_options[0].max_price == "0.40"])
    error_message = "spot = true: every benchmark node is a one-time Spot instance, terminated on interruption."
  }
}

run "nodes_refuse_spark_workers" {
  command = plan

  variables {
    node_scenarios  = [["bin-packing"], ["deletes-high"]]
    spark_workers   = 1
    warehouse_on_s3 = true
  }

  expect_failures = [output.instance_id]
}

run "no_scenario_on_two_nodes" {
  command = plan

  variables {
    node_scenarios = [["bin-packing"], ["bin-packing"]]
  }

  expect_failures = [var.node_scenarios]
}

run "spot_spark_workers" {
  command = apply

  variables {
    spark_workers   = 1
    warehouse_on_s3 = true
    spot            = true
  }

  assert {
    condition = (module.worker.instances[0].instance_market_options[0].market_type == "spot"
      && module.worker.instances[0].instance_market_options[0].spot_options[0].spot_instance_type == "one-time"
    && module.bench.instances[0].instance_market_options[0].market_type == "spot")
    error_message = "spot = true: the Spark workers are one-time Spot instances too."
  }
}
