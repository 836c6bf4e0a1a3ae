# The results bucket: private, encrypted, versioned. Created unless an existing one is named.

resource "aws_s3_bucket" "results" {
  #checkov:skip=CKV_AWS_18:Access logging would need a second bucket; only this run's instance role can write here and CloudTrail covers API access.
  #checkov:skip=CKV_AWS_144:Cross-region replication doubles the cost of a throw-away benchmark's results; fetch them locally instead (bench aws fetch).
  #checkov:skip=CKV2_AWS_62:No consumer of event notifications: the status.json object written last is the completion signal.
  #checkov:skip=CKV_AWS_145:Encrypted with SSE-S3 (AES-256) below; a customer-managed KMS key adds cost and key policy work for public benchmark results.
  count         = var.create_results_bucket ? 1 : 0
  bucket        = var.results_bucket_name != "" ? var.results_bucket_name : null
  bucket_prefix = var.results_bucket_name == "" ? "iceberg-compaction-bench-" : null
  force_destroy = var.results_bucket_force_destroy
}

locals {
  bucket_name = var.create_results_bucket ? aws_s3_bucket.results[0].id : var.results_bucket_name
  bucket_arn  = "arn:${data.aws_partition.current.partition}:s3:::${local.bucket_name}"
}

data "aws_partition" "current" {}

resource "aws_s3_bucket_public_access_block" "results" {
  count                   = var.create_results_bucket ? 1 : 0
  bucket                  = aws_s3_bucket.results[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "results" {
  count  = var.create_results_bucket ? 1 : 0
  bucket = aws_s3_bucket.results[0].id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "results" {
  count  = var.create_results_bucket ? 1 : 0
  bucket = aws_s3_bucket.results[0].id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_versioning" "results" {
  count  = var.create_results_bucket ? 1 : 0
  bucket = aws_s3_bucket.results[0].id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "results" {
  count  = var.create_results_bucket ? 1 : 0
  bucket = aws_s3_bucket.results[0].id

  rule {
    id     = "tidy"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }

    noncurrent_version_expiration {
      noncurrent_days = 30
    }
  }

  # A warehouse on S3 is scratch data (hundreds of GB): gone after a week.
  rule {
    id     = "expire-warehouses"
    status = "Enabled"

    filter {
      prefix = "warehouse/"
    }

    expiration {
      days = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.results]
}

# Refuse any request not made over TLS.
data "aws_iam_policy_document" "bucket" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [local.bucket_arn, "${local.bucket_arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "results" {
  count  = var.create_results_bucket ? 1 : 0
  bucket = aws_s3_bucket.results[0].id
  policy = data.aws_iam_policy_document.bucket.json

  depends_on = [aws_s3_bucket_public_access_block.results]
}
