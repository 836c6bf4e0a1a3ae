"""What the cloud tests share that is not a fixture."""

BUCKET = "bench-results"  # the results bucket the `s3` fixture creates
