# The instance's only permissions: write this run's results prefix (and, when used, read the harness
# archive of this run and read/write this run's warehouse prefix). Nothing else in S3, nothing in EC2:
# the instance terminates itself by powering off (instance_initiated_shutdown_behavior).
# With your own table (source_table), also: read the source's files under source_s3_uri (GetObject,
# ListBucket on that prefix; never Put/Delete), this run's copy of its catalog file, and with source_glue
# its Glue database and table (read-only). Its clone is written to this run's warehouse prefix only.
# Spark workers (spark_workers > 0) get a role of their own, narrower: read the harness archive,
# read/write/list this run's warehouse prefix, write their own logs under runs/<run-id>/workers/ and, with
# your own table, read (only) its files.

data "aws_iam_policy_document" "assume_ec2" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "bench" {
  name_prefix        = "iceberg-bench-"
  description        = "Benchmark instance of run ${local.run_id}: writes s3://${local.bucket_name}/${local.results_prefix} only"
  assume_role_policy = data.aws_iam_policy_document.assume_ec2.json
}

# Your own table's files, read-only (GetObject under its prefix, ListBucket on that prefix): both roles
data "aws_iam_policy_document" "source_read" {
  count = local.source ? 1 : 0

  statement {
    sid       = "ReadTheSourceTableOnly"
    actions   = ["s3:GetObject"]
    resources = ["arn:${data.aws_partition.current.partition}:s3:::${local.source_bucket}/${local.source_prefix}/*"]
  }

  statement {
    sid       = "ListTheSourceTableOnly"
    actions   = ["s3:ListBucket"]
    resources = ["arn:${data.aws_partition.current.partition}:s3:::${local.source_bucket}"]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${local.source_prefix}/*", local.source_prefix]
    }
  }
}

data "aws_iam_policy_document" "bench" {
  source_policy_documents = data.aws_iam_policy_document.source_read[*].json

  statement {
    sid       = "WriteThisRunsResults"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${local.bucket_arn}/${local.results_prefix}*"]
  }

  dynamic "statement" {
    for_each = var.harness_archive_path != "" ? [1] : []
    content {
      sid       = "ReadThisRunsHarnessArchive"
      actions   = ["s3:GetObject"]
      resources = ["${local.bucket_arn}/${local.harness_key}"]
    }
  }

  dynamic "statement" {
    for_each = local.warehouse_on_s3 ? [1] : []
    content {
      sid       = "ReadWriteThisRunsWarehouse"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
      resources = ["${local.bucket_arn}/warehouse/${local.run_id}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.warehouse_on_s3 ? [1] : []
    content {
      sid       = "ListThisRunsWarehouse"
      actions   = ["s3:ListBucket"]
      resources = [local.bucket_arn]

      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = ["warehouse/${local.run_id}/*", "warehouse/${local.run_id}"]
      }
    }
  }

  dynamic "statement" {
    for_each = local.source ? [1] : []
    content {
      sid       = "ReadThisRunsSourceCatalogFile"
      actions   = ["s3:GetObject"]
      resources = ["${local.bucket_arn}/${local.source_catalog_key}"]
    }
  }

  dynamic "statement" {
    for_each = local.source && var.source_glue ? [1] : []
    content {
      sid     = "ReadTheSourceTablesGlueEntry"
      actions = ["glue:GetDatabase", "glue:GetTable"]
      resources = [
        "arn:${data.aws_partition.current.partition}:glue:${var.region}:${data.aws_caller_identity.current.account_id}:catalog",
        "arn:${data.aws_partition.current.partition}:glue:${var.region}:${data.aws_caller_identity.current.account_id}:database/${split(".", var.source_table)[0]}",
        "arn:${data.aws_partition.current.partition}:glue:${var.region}:${data.aws_caller_identity.current.account_id}:table/${split(".", var.source_table)[0]}/${split(".", var.source_table)[1]}",
      ]
    }
  }
}

data "aws_caller_identity" "current" {}

resource "aws_iam_role_policy" "bench" {
  name   = "write-results-of-this-run"
  role   = aws_iam_role.bench.id
  policy = data.aws_iam_policy_document.bench.json
}

resource "aws_iam_role_policy_attachment" "ssm" {
  count      = var.enable_ssm ? 1 : 0
  role       = aws_iam_role.bench.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

resource "aws_iam_instance_profile" "bench" {
  name_prefix = "iceberg-bench-"
  role        = aws_iam_role.bench.name
}

# ----- Spark workers (spark_workers > 0) -----------------------------------------------------------------
resource "aws_iam_role" "worker" {
  count              = local.cluster ? 1 : 0
  name_prefix        = "iceberg-bench-worker-"
  description        = "Spark workers of run ${local.run_id}: this run's warehouse and harness, and their logs under s3://${local.bucket_name}/${local.results_prefix}workers/"
  assume_role_policy = data.aws_iam_policy_document.assume_ec2.json
}

data "aws_iam_policy_document" "worker" {
  count = local.cluster ? 1 : 0

  # Spark's executors read the source table's files too
  source_policy_documents = data.aws_iam_policy_document.source_read[*].json

  statement {
    sid       = "WriteTheirLogs"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${local.bucket_arn}/${local.results_prefix}workers/*"]
  }

  dynamic "statement" {
    for_each = var.harness_archive_path != "" ? [1] : []
    content {
      sid       = "ReadThisRunsHarnessArchive"
      actions   = ["s3:GetObject"]
      resources = ["${local.bucket_arn}/${local.harness_key}"]
    }
  }

  dynamic "statement" {
    for_each = local.warehouse_on_s3 ? [1] : []
    content {
      sid       = "ReadWriteThisRunsWarehouse"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
      resources = ["${local.bucket_arn}/warehouse/${local.run_id}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.warehouse_on_s3 ? [1] : []
    content {
      sid       = "ListThisRunsWarehouse"
      actions   = ["s3:ListBucket"]
      resources = [local.bucket_arn]

      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = ["warehouse/${local.run_id}/*", "warehouse/${local.run_id}"]
      }
    }
  }
}

resource "aws_iam_role_policy" "worker" {
  count  = local.cluster ? 1 : 0
  name   = "spark-worker-of-this-run"
  role   = aws_iam_role.worker[0].id
  policy = data.aws_iam_policy_document.worker[0].json
}

resource "aws_iam_role_policy_attachment" "worker_ssm" {
  count      = local.cluster && var.enable_ssm ? 1 : 0
  role       = aws_iam_role.worker[0].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

resource "aws_iam_instance_profile" "worker" {
  count       = local.cluster ? 1 : 0
  name_prefix = "iceberg-bench-worker-"
  role        = aws_iam_role.worker[0].name
}
