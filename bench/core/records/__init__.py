"""The result record's parts, one module per family, under the run's record in `bench.core.results`."""
