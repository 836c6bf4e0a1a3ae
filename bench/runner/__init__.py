"""The runner: datagen -> (for each repetition, each engine: restore -> cache -> engine subprocess,
sampled -> verification) -> result records.

Fairness, by construction:
- every engine run starts from the byte-identical table (the dataset's metadata file and exactly its
  files: bench.core.table.state), measured after the reset (input fingerprint in every result);
- the engines' order rotates from one repetition to the next (recorded per result);
- before each engine run the warehouse is synced to disk and the page cache dropped (`cold`, default
  where the harness may: root) or the input read once (`warm`); recorded per result;
- each engine runs in its own subprocess (own process group, memory cgroup, time limit) and is
  measured from outside the same way; the loopback REST catalog server's work during the run (it
  commits for REST clients, outside the engine's tree) is measured and recorded beside it;
- every run is verified by `bench.verify` against the generator's ground truth.
One `bench run` at a time per warehouse (bench.core.lock).  `results/<run-id>/run.json` says whether
the run completed; results are written atomically and never overwritten.

    context   options, the run context, the rotated schedule, the checks before anything runs
    inputs    the input restored byte for byte and measured; the page cache dropped or warmed
    process   one engine run as a sampled, bounded subprocess, and how it ended
    run       run_one / run_scenario / the summary table
"""

from bench.runner.context import CommonOptions, RunContext, RunOptions, Slot, prepare_dataset, schedule
from bench.runner.run import run_one, run_scenario, summary_table

__all__ = ["CommonOptions", "RunContext", "RunOptions", "Slot", "prepare_dataset", "run_one", "run_scenario",
           "schedule", "summary_table"]
