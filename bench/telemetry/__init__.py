"""Measuring and bounding an engine's process tree from outside, the same way for every engine.

    sampler    10 Hz samples of the tree: RSS, kernel VmHWM, CPU, storage I/O (Sampler)
    limits     the memory budget: a kernel memory cgroup, or an RSS watchdog (Limiter)
    selfcheck  the sampler's own cost (`bench selfcheck telemetry`)
"""

from bench.telemetry.limits import Limiter
from bench.telemetry.sampler import Sampler, read_samples

__all__ = ["Limiter", "Sampler", "read_samples"]
