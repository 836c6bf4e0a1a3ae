"""Apache Spark + Iceberg's `rewrite_data_files` as a benchmark engine."""
