"""Spark's memory: the settings profiles and the rules that fit Spark's JVMs inside a memory budget.

Profiles (`engines: spark: profile:` in a scenario):
  paper  the published settings verbatim (executor.memory 40g, executor.memoryOverhead 8g,
         driver.memory 12g, memory.fraction 0.8, memory.storageFraction 0.2, shuffle.partitions 1000);
  local  (default) the same, memory sizes scaled by this node's RAM / 64 GiB (the published node).
A budget rule per deploy mode (`engines: spark: mode:`), recorded in the outcome with its numbers:

local (`local[<cores>]`): the one JVM is driver and executor, so its heap is `spark.driver.memory`;
the executor settings are passed as published but have no effect (recorded).  The `local` profile
gives that JVM the executor's share (40g x RAM / 64 GiB).  A memory budget caps the heap:
heap = min(profile driver.memory, 75% of the budget, budget - 256 MiB), and the JVM's off-heap pools are
capped (MaxDirectMemorySize 10%, MaxMetaspaceSize max(10%, 192 MiB)) so heap + off-heap stays near the
budget (Spark + Iceberg use ~150 MiB of non-heap memory).  Spark refuses a JVM whose usable heap
(Runtime.maxMemory, less than -Xmx) is under 450 MiB: -Xmx480m is the smallest heap it starts with, so the
smallest budget is 736 MiB.

standalone (a master and W workers on this node, W = 1 unless option `workers`, one executor per worker;
`bench.engines.spark.cluster`): the published settings mean what they say there (the executor's memory
split evenly between the W executors).  The budget covers every JVM of the cluster:
  1 + W daemons (master, workers) x (SPARK_DAEMON_MEMORY 256 MiB heap + 128 MiB non-heap: MaxMetaspaceSize
  64 MiB, MaxDirectMemorySize 32 MiB; measured: ~35 MiB of classes, ~180 MiB RSS each after start)
  + the driver's share = max(driver heap / 75%, driver heap + 256 MiB) (the local rule applied to the
    driver: MaxDirectMemorySize 10%, MaxMetaspaceSize max(10%, 192 MiB) of its share)
  + executor heap (spark.executor.memory; the worker offers exactly this, so one executor fits)
  + executor overhead (spark.executor.memoryOverhead; standalone does not enforce it, so the executor's
    off-heap pools are capped inside it: MaxDirectMemorySize max(25%, 256 MiB) - an executor refuses to
    start with less than spark.network.maxRemoteBlockSizeFetchToMem (200 MiB) -, MaxMetaspaceSize
    max(25%, 192 MiB)).
When the profile's sizes do not fit, the driver heap, executor heap and overhead are scaled by one factor
f < 1 (the largest that fits, to the MiB), each at least its floor (heaps 480 MiB: Spark refuses less;
overhead 512 MiB: the smallest off-heap caps and some code cache), so the smallest budget is 2436 MiB
with one worker (+1346 MiB per more worker).

external (`master: spark://HOST:PORT`, a cluster that runs elsewhere): only the driver runs on this node,
by the local rule (heap at most the profile's driver.memory); each worker gets one executor with all its cores and
the published 40g heap + 8g overhead, or the same 5:1 split of what the worker offers when less.
"""

from __future__ import annotations

from typing import Any, Literal

from bench.core.errors import UserError
from bench.core.machine import node_ram_bytes
from bench.core.published import PUBLISHED_MEMORY_GIB
from bench.core.units import GiB, MiB, fmt_mib, parse_size

PAPER_NODE_RAM = PUBLISHED_MEMORY_GIB * GiB  # the published node, as AWS sizes it

PAPER_PROFILE: dict[str, str] = {
    "spark.executor.memory": "40g",
    "spark.executor.memoryOverhead": "8g",
    "spark.driver.memory": "12g",
    "spark.memory.fraction": "0.8",
    "spark.memory.storageFraction": "0.2",
    "spark.sql.shuffle.partitions": "1000",
}
MEMORY_SIZE_KEYS = ("spark.executor.memory", "spark.executor.memoryOverhead", "spark.driver.memory")
# what the memory rules below own (a scenario's spark_conf may not set them); the profile's shuffle partitions
# it may (applied last, recorded with the run's settings)
MEMORY_PROFILE_KEYS = tuple(k for k in PAPER_PROFILE if k != "spark.sql.shuffle.partitions")
PROFILES = ("local", "paper")

# Spark's UnifiedMemoryManager refuses a usable heap (Runtime.maxMemory) below 1.5 x its 300 MiB reserved
# memory; the JVM reports less than -Xmx (measured: -Xmx450m gives 435 MiB, "System memory 456130560 must
# be at least 471859200"), so the smallest heap asked for is 480 MiB.
SPARK_MIN_HEAP = 480 * MiB
HEAP_SHARE = 0.75
NON_HEAP_FLOOR = 256 * MiB  # measured: Spark + Iceberg use ~150 MiB of non-heap (metaspace, code cache)
DIRECT_SHARE = 0.10
METASPACE_SHARE = 0.10
METASPACE_FLOOR = 192 * MiB  # Spark + Iceberg load ~100-150 MiB of classes
BUDGET_RULE = (f"heap (spark.driver.memory) = min(profile driver.memory, {HEAP_SHARE:.0%} of budget, "
               f"budget - {NON_HEAP_FLOOR // MiB} MiB); "
               f"-XX:MaxDirectMemorySize = {DIRECT_SHARE:.0%} of budget; -XX:MaxMetaspaceSize = "
               f"max({METASPACE_SHARE:.0%} of budget, {METASPACE_FLOOR // MiB} MiB); the rest is left for "
               f"code cache, thread stacks and GC structures")
LOCAL_MODE_NOTE = ("local mode: one JVM is driver and executor; its heap is spark.driver.memory; "
                   "spark.executor.memory/memoryOverhead are passed as published but have no effect. "
                   "The `local` profile therefore gives that JVM the executor's share of the node "
                   "(40g x RAM / 64 GiB), since it does the executor's work; `paper` passes the published "
                   "settings verbatim, which in local mode means a 12g heap")

Mode = Literal["local", "standalone", "external"]
MODES = ("local", "standalone", "external")

# standalone: the daemons (master and worker) and the executor
DAEMONS = 2
DAEMON_HEAP = 256 * MiB  # SPARK_DAEMON_MEMORY
DAEMON_METASPACE = 64 * MiB  # measured: a master or a worker loads ~35 MiB of classes
DAEMON_DIRECT = 32 * MiB
DAEMON_NON_HEAP = 128 * MiB  # metaspace + direct + code cache, thread stacks, GC
DAEMON_RESERVE = DAEMON_HEAP + DAEMON_NON_HEAP
EXEC_DIRECT_SHARE = 0.25  # of the executor overhead
EXEC_METASPACE_SHARE = 0.25
# An executor refuses to start with less direct memory than spark.network.maxRemoteBlockSizeFetchToMem
# (200 MiB): "Netty direct memory should at least be bigger than ..." (measured).
EXEC_DIRECT_FLOOR = 256 * MiB
# the smallest overhead that holds the executor's smallest off-heap caps (direct + metaspace) and some code
# cache (Spark's own minimum overhead on YARN and Kubernetes is 384 MiB)
EXECUTOR_MIN_OVERHEAD = 512 * MiB
STANDALONE_RULE = (
    f"budget >= (1 master + W workers) daemons x ({DAEMON_HEAP // MiB} MiB heap + {DAEMON_NON_HEAP // MiB} MiB "
    f"non-heap) + driver share + W x (executor heap + executor overhead), the node's executor memory split "
    f"evenly between the W workers' executors (W = 1 unless option workers); driver share = "
    f"max(driver heap / {HEAP_SHARE:.0%}, driver heap + {NON_HEAP_FLOOR // MiB} MiB) with "
    f"-XX:MaxDirectMemorySize {DIRECT_SHARE:.0%} and "
    f"-XX:MaxMetaspaceSize max({METASPACE_SHARE:.0%}, {METASPACE_FLOOR // MiB} MiB) of it; the profile's driver "
    f"heap, executor heap and overhead scaled by one factor f <= 1, the largest that fits, each at least its "
    f"floor (heaps {SPARK_MIN_HEAP // MiB} MiB, overhead {EXECUTOR_MIN_OVERHEAD // MiB} MiB); executor "
    f"-XX:MaxDirectMemorySize max({EXEC_DIRECT_SHARE:.0%}, {EXEC_DIRECT_FLOOR // MiB} MiB) and "
    f"-XX:MaxMetaspaceSize max({EXEC_METASPACE_SHARE:.0%}, {METASPACE_FLOOR // MiB} MiB) of its overhead; "
    f"daemons -XX:MaxMetaspaceSize={DAEMON_METASPACE // MiB}m -XX:MaxDirectMemorySize={DAEMON_DIRECT // MiB}m")
EXTERNAL_NOTE = ("external standalone cluster (--spark-master): only the driver runs on this node, sized by the "
                 "local rule inside the budget (heap at most the profile's driver.memory: 12g published, scaled by "
                 "RAM / 64 GiB in `local`); each worker gets one "
                 "executor with all its cores and the published 40g heap + 8g overhead, or the same 5:1 split of "
                 "what the worker offers when that is less; the budget and the telemetry cover this node only")
STANDALONE_NOTE = ("standalone mode: a master and one worker on this node (127.0.0.1), one executor with all "
                   "the job's cores; the driver plans and commits, the executor rewrites, so the published "
                   "driver.memory/executor.memory/memoryOverhead apply as named (the `local` profile scales "
                   "them by RAM / 64 GiB, `paper` passes them verbatim; both fitted to the budget). Standalone "
                   "does not enforce spark.executor.memoryOverhead: the executor's off-heap caps keep it "
                   "inside it")


def profile_settings(profile: str, ram_bytes: int | None = None, mode: str = "local") -> dict[str, str]:
    """The Spark settings of a named profile on a node with `ram_bytes` of RAM, for a deploy mode."""
    if profile == "paper":
        return dict(PAPER_PROFILE)
    if profile == "local":
        ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
        scale = ram / PAPER_NODE_RAM
        out = dict(PAPER_PROFILE)
        for k in MEMORY_SIZE_KEYS:
            out[k] = fmt_mib(int(parse_size(PAPER_PROFILE[k]) * scale))
        if mode == "local":  # the one JVM does the executor's work, so it gets the executor's memory
            out["spark.driver.memory"] = out["spark.executor.memory"]
        return out
    raise UserError(f"unknown spark profile {profile!r}; known: {', '.join(PROFILES)}")


def min_budget_bytes(mode: str = "local", workers: int = 1) -> int:
    """The smallest memory budget whose heaps Spark accepts under the budget rule of `mode` (standalone:
    with `workers` workers on this node; external: only the driver runs here)."""
    if mode == "standalone":
        return (daemons(workers) * DAEMON_RESERVE + driver_share(SPARK_MIN_HEAP)
                + workers * (SPARK_MIN_HEAP + EXECUTOR_MIN_OVERHEAD))
    return max(-(-SPARK_MIN_HEAP * 4 // 3), SPARK_MIN_HEAP + NON_HEAP_FLOOR)


def daemons(workers: int) -> int:
    """A master and `workers` workers."""
    return 1 + max(1, workers)


def driver_share(heap: int) -> int:
    """The budget a driver JVM with `heap` needs under the local rule (its inverse)."""
    return max(-(-heap * 4 // 3), heap + NON_HEAP_FLOOR)


def _off_heap_options(share: int) -> list[str]:
    """The local rule's off-heap caps of a JVM given `share` bytes of budget."""
    return [f"-XX:MaxDirectMemorySize={fmt_mib(int(share * DIRECT_SHARE))}",
            f"-XX:MaxMetaspaceSize={fmt_mib(max(int(share * METASPACE_SHARE), METASPACE_FLOOR))}"]


def daemon_java_options() -> list[str]:
    return [f"-XX:MaxMetaspaceSize={fmt_mib(DAEMON_METASPACE)}", f"-XX:MaxDirectMemorySize={fmt_mib(DAEMON_DIRECT)}",
            "-XX:+ExitOnOutOfMemoryError"]


def executor_java_options(overhead: int) -> list[str]:
    return [f"-XX:MaxDirectMemorySize={fmt_mib(max(int(overhead * EXEC_DIRECT_SHARE), EXEC_DIRECT_FLOOR))}",
            f"-XX:MaxMetaspaceSize={fmt_mib(max(int(overhead * EXEC_METASPACE_SHARE), METASPACE_FLOOR))}"]


def _standalone_sizes(driver: int, executor: int, overhead: int, f: float) -> tuple[int, int, int]:
    """The three sizes scaled by f, each at least its floor, rounded down to the MiB."""
    def mib(x: float) -> int:
        return int(x) // MiB * MiB
    return (max(SPARK_MIN_HEAP, mib(driver * f)), max(SPARK_MIN_HEAP, mib(executor * f)),
            max(EXECUTOR_MIN_OVERHEAD, mib(overhead * f)))


def standalone_total(driver: int, executor: int, overhead: int, workers: int = 1) -> int:
    """The budget the standalone cluster with these sizes needs (daemons + driver share + one executor of
    `executor` heap and `overhead` per worker)."""
    return daemons(workers) * DAEMON_RESERVE + driver_share(driver) + workers * (executor + overhead)


def memory_plan(profile: str, budget_bytes: int | None, ram_bytes: int | None = None,
                mode: str = "local", workers: int = 1) -> dict[str, Any]:
    """Spark conf + JVM options for `profile` in deploy `mode` within `budget_bytes`, and the rule that
    produced them.  `external` (a cluster that runs elsewhere): the driver's part only, by the local rule;
    the executors' sizes come from the workers (`external_executor_sizes`)."""
    if mode == "standalone":
        return _standalone_plan(profile, budget_bytes, ram_bytes, workers)
    if mode == "external":
        plan = memory_plan(profile, budget_bytes, ram_bytes, mode="local")
        driver = parse_size(profile_settings(profile, ram_bytes, mode="standalone")["spark.driver.memory"])
        plan["conf"]["spark.driver.memory"] = fmt_mib(min(parse_size(plan["conf"]["spark.driver.memory"]), driver))
        plan["heap_requested_bytes"] = parse_size(plan["conf"]["spark.driver.memory"])
        plan.pop("local_mode_note", None)
        plan.update(mode="external", external_note=EXTERNAL_NOTE)
        return plan
    if mode != "local":
        raise UserError(f"unknown spark mode {mode!r}; known: {', '.join(MODES)}")
    ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
    conf = profile_settings(profile, ram)
    java_opts = ["-XX:+ExitOnOutOfMemoryError"]
    plan = {"profile": profile, "mode": "local", "node_ram_bytes": ram,
                            "profile_scale": 1.0 if profile == "paper" else ram / PAPER_NODE_RAM,
                            "memory_budget_bytes": budget_bytes, "local_mode_note": LOCAL_MODE_NOTE}
    heap = parse_size(conf["spark.driver.memory"])
    if budget_bytes:
        cap = min(int(budget_bytes * HEAP_SHARE), budget_bytes - NON_HEAP_FLOOR)
        if cap < SPARK_MIN_HEAP:
            raise UserError(
                f"memory budget {budget_bytes // MiB} MiB is too small for Spark: it leaves a heap of "
                f"{max(cap, 0) // MiB} MiB, below the smallest heap Spark accepts ({SPARK_MIN_HEAP // MiB} MiB); "
                f"give at least {min_budget_bytes() // MiB} MiB")
        heap = min(heap, cap)
        conf["spark.driver.memory"] = fmt_mib(heap)
        java_opts += [f"-XX:MaxDirectMemorySize={fmt_mib(int(budget_bytes * DIRECT_SHARE))}",
                      f"-XX:MaxMetaspaceSize={fmt_mib(max(int(budget_bytes * METASPACE_SHARE), METASPACE_FLOOR))}"]
        plan["budget_rule"] = BUDGET_RULE
    else:
        plan["budget_rule"] = "no budget: heap = profile spark.driver.memory, JVM off-heap defaults"
    plan["conf"] = conf
    plan["java_options"] = java_opts
    plan["heap_requested_bytes"] = parse_size(conf["spark.driver.memory"])
    return plan


def external_executor_sizes(worker_memory_mib: int) -> tuple[int, int]:
    """(executor heap, overhead) on a worker that offers `worker_memory_mib`: the published 40g + 8g, or the
    same 5:1 split of what the worker offers when that is less."""
    heap = parse_size(PAPER_PROFILE["spark.executor.memory"])
    overhead = parse_size(PAPER_PROFILE["spark.executor.memoryOverhead"])
    offered = int(worker_memory_mib) * MiB
    if heap + overhead > offered:
        heap = max(SPARK_MIN_HEAP, offered * 5 // 6 // MiB * MiB)
        overhead = max(EXECUTOR_MIN_OVERHEAD, offered // 6 // MiB * MiB)
    return heap, overhead


def _standalone_plan(profile: str, budget_bytes: int | None, ram_bytes: int | None,
                     workers: int = 1) -> dict[str, Any]:
    ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
    workers = max(1, int(workers))
    conf = profile_settings(profile, ram, mode="standalone")
    # the node's executor memory, split evenly between the workers' executors
    want = (parse_size(conf["spark.driver.memory"]), parse_size(conf["spark.executor.memory"]) // workers,
            parse_size(conf["spark.executor.memoryOverhead"]) // workers)
    plan: dict[str, Any] = {"profile": profile, "mode": "standalone", "node_ram_bytes": ram,
                            "profile_scale": 1.0 if profile == "paper" else ram / PAPER_NODE_RAM,
                            "memory_budget_bytes": budget_bytes, "standalone_note": STANDALONE_NOTE}
    f = 1.0
    if budget_bytes:
        floor = min_budget_bytes("standalone", workers)
        if budget_bytes < floor:
            raise UserError(
                f"memory budget {budget_bytes // MiB} MiB is too small for Spark in standalone mode: the master "
                f"and worker daemons ({daemons(workers)} x {DAEMON_RESERVE // MiB} MiB), the driver and "
                f"{workers} executor(s) at the smallest heaps Spark accepts ({SPARK_MIN_HEAP // MiB} MiB each) and "
                f"the smallest executor overhead ({EXECUTOR_MIN_OVERHEAD // MiB} MiB) need at least "
                f"{floor // MiB} MiB")
        if standalone_total(*_standalone_sizes(*want, 1.0), workers) > budget_bytes:
            lo, hi = 0.0, 1.0  # total(f) grows with f; total(0) = the floors, which fit
            for _ in range(60):
                mid = (lo + hi) / 2
                if standalone_total(*_standalone_sizes(*want, mid), workers) <= budget_bytes:
                    lo = mid
                else:
                    hi = mid
            f = lo
        plan["budget_rule"] = STANDALONE_RULE
    else:
        plan["budget_rule"] = ("no budget: driver heap, executor heap and overhead = the profile's; the "
                               "driver's off-heap JVM defaults; executor and daemon caps as with a budget")
    driver, executor, overhead = _standalone_sizes(*want, f)
    conf["spark.driver.memory"] = fmt_mib(driver)
    conf["spark.executor.memory"] = fmt_mib(executor)
    conf["spark.executor.memoryOverhead"] = fmt_mib(overhead)
    java_opts = ["-XX:+ExitOnOutOfMemoryError"]
    if budget_bytes:
        java_opts += _off_heap_options(driver_share(driver))
    parts = {"daemons": daemons(workers) * DAEMON_RESERVE, "driver_share": driver_share(driver),
             "executor_heap": workers * executor, "executor_overhead": workers * overhead}
    parts["total"] = sum(parts.values())
    plan.update({
        "fit_scale": round(f, 6),
        "requested_before_fit": {"spark.driver.memory": fmt_mib(want[0]), "spark.executor.memory": fmt_mib(want[1]),
                                 "spark.executor.memoryOverhead": fmt_mib(want[2])},
        "budget_parts_bytes": parts,
        "conf": conf,
        "java_options": java_opts,
        "executor_java_options": executor_java_options(overhead),
        "daemon_memory": fmt_mib(DAEMON_HEAP),
        "daemon_java_options": daemon_java_options(),
        "workers": workers,
        "worker_memory_mib": executor // MiB,
        "heap_requested_bytes": driver,
        "executor_heap_requested_bytes": executor,
        "executor_overhead_bytes": overhead,
    })
    return plan
