"""What every campaign parses (its scales, its partition counts) and where it writes (its directory)."""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import UserError
from bench.core.units import check_scale
from bench.runner.context import check_results_dir, new_run_id


def parse_scales(text: str, option: str = "--scales", least: int = 1) -> list[float]:
    """A comma-separated list of positive scales (--scales, --file-scales), sorted: each once, at least `least`."""
    try:
        scales = [check_scale(float(s), option) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"{option} {text!r}: give a comma-separated list of positive numbers") from None
    if len(set(scales)) != len(scales):
        raise UserError(f"{option} {text!r} names a scale twice")
    if len(scales) < least:
        raise UserError(f"{option} {text!r}: give at least {least} different scales, e.g. 0.005,0.02,0.05")
    return sorted(scales)


def parse_partitions(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--partitions {text!r}: give a comma-separated list of whole numbers, e.g. 8,64,512") from None
    if not counts or min(counts) < 1:
        raise UserError(f"--partitions {text!r}: give positive partition counts, e.g. 8,64,512")
    if len(set(counts)) != len(counts):
        raise UserError(f"--partitions {text!r} names a count twice")
    return sorted(counts)


def campaign_dir(results_dir: str | None, requested: str | None, kind: str, scenario: str) -> Path:
    results = check_results_dir(results_dir)
    return results / new_run_id(results, f"{kind}-{scenario}", requested)
