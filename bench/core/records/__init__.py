"""The result record's parts, one module per family; `bench.core.results` is the one import module of them
(and holds the run's record, `RunResult`, and how results are written and read)."""
