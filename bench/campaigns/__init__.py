"""Runs of runs: a sweep over scales (or file counts), a memory frontier over budgets, a tuning search, the
conformance matrix, the harness's own scaling, and the plan of a full reproduction.

Each loop is ordinary `bench run`s (`bench.runner.run.run_scenario`), each writing ordinary result files
into one campaign directory, plus one summary record (`bench.core.campaign`) with the fits the report
reads.  Nothing here re-implements the runner.

    sweep     time = fixed + per_GB x input GB (and peak memory the same way) per engine, with residuals
              and an interval; extrapolated to scale 1 on this node and, by a stated model, to the
              published node (bench.core.fit.NodeModel), beside the published figures
    frontier  per engine, the smallest memory budget at which it completes verified: bisection between a
              lowest budget (the engine's own minimum) and the node's RAM, each probe a recorded run; over
              several scales fitted like the curves and carried to scale 1 against the published node's
              64 GB: does the model predict the published OOMs?  Or, at one scale, over partition counts
              of a partitioned scenario (each its own dataset, Scenario.with_partitions): memory against
              the number of partitions (no fit, no prediction: the points differ in layout, not size)
    plan      from the fits: datagen time, disk space, engine times, memory frontiers, wall time, cost,
              the EBS size and deadline a full reproduction needs (`bench aws up` uses it)

The rooms: `shared` (the options every campaign parses, its directory), `points` (results to points and
fits), `sweep` (with the published-node model), `frontier`, `plan` (a reproduction from the fits),
`verdict` (a plan said, against its budgets), `expected` (what to expect on a user's table), `counts` (a sweep
over file counts at one byte scale), `tune` (a bounded search for a fairly tuned configuration), `conformance`
(each engine on edge-case tables, a matrix), `reproducers` (a script per maintenance cell that is not correct,
for the engine's maintainers) and `harness_scaling` (the harness's own steps on 1 and 2 cores).
"""
