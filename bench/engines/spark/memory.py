"""Spark's memory: the settings profiles and the rule that fits the JVM inside a memory budget.

Profiles (`engines: spark: profile:` in a scenario):
  paper  the published settings verbatim (executor.memory 40g, executor.memoryOverhead 8g,
         driver.memory 12g, memory.fraction 0.8, memory.storageFraction 0.2, shuffle.partitions 1000);
  local  (default) the same, memory sizes scaled by this node's RAM / 64 GiB (the published node).
Spark runs in local mode (`local[<cores>]`): the one JVM is driver and executor, so its heap is
`spark.driver.memory`; the executor settings are passed as published but have no effect (recorded).
A memory budget caps the heap: heap = min(profile driver.memory, 75% of the budget, budget - 256 MiB),
and the JVM's off-heap pools are capped (MaxDirectMemorySize 10%, MaxMetaspaceSize max(10%, 192 MiB))
so heap + off-heap stays near the budget (Spark + Iceberg use ~150 MiB of non-heap memory).  Spark
refuses a heap under 450 MiB, so the smallest budget is 706 MiB.  The rule is recorded in the outcome.
"""

from __future__ import annotations

from typing import Any

from bench.core.errors import UserError
from bench.core.machine import node_ram_bytes
from bench.core.units import GiB, MiB, fmt_mib, parse_size

PAPER_NODE_RAM = 64 * GiB  # m5.4xlarge

PAPER_PROFILE: dict[str, str] = {
    "spark.executor.memory": "40g",
    "spark.executor.memoryOverhead": "8g",
    "spark.driver.memory": "12g",
    "spark.memory.fraction": "0.8",
    "spark.memory.storageFraction": "0.2",
    "spark.sql.shuffle.partitions": "1000",
}
MEMORY_SIZE_KEYS = ("spark.executor.memory", "spark.executor.memoryOverhead", "spark.driver.memory")
PROFILES = ("local", "paper")

# Spark's UnifiedMemoryManager refuses a heap below 1.5 x its 300 MiB reserved memory.
SPARK_MIN_HEAP = 450 * MiB
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

def profile_settings(profile: str, ram_bytes: int | None = None) -> dict[str, str]:
    """The Spark settings of a named profile on a node with `ram_bytes` of RAM."""
    if profile == "paper":
        return dict(PAPER_PROFILE)
    if profile == "local":
        ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
        scale = ram / PAPER_NODE_RAM
        out = dict(PAPER_PROFILE)
        for k in MEMORY_SIZE_KEYS:
            out[k] = fmt_mib(int(parse_size(PAPER_PROFILE[k]) * scale))
        # local mode: the one JVM does the executor's work, so it gets the executor's memory
        out["spark.driver.memory"] = out["spark.executor.memory"]
        return out
    raise UserError(f"unknown spark profile {profile!r}; known: {', '.join(PROFILES)}")


def min_budget_bytes() -> int:
    """The smallest memory budget whose heap Spark accepts under the budget rule."""
    return max(-(-SPARK_MIN_HEAP * 4 // 3), SPARK_MIN_HEAP + NON_HEAP_FLOOR)


def memory_plan(profile: str, budget_bytes: int | None, ram_bytes: int | None = None) -> dict[str, Any]:
    """Spark conf + JVM options for `profile` within `budget_bytes`, and the rule that produced them."""
    ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
    conf = profile_settings(profile, ram)
    java_opts = ["-XX:+ExitOnOutOfMemoryError"]
    plan: dict[str, Any] = {"profile": profile, "node_ram_bytes": ram,
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
