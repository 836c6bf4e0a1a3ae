"""What every campaign parses (its scales, its partition counts) and where it writes (its directory)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from bench.core.errors import UserError
from bench.core.units import check_scale
from bench.runner.context import check_results_dir


def parse_scales(text: str) -> list[float]:
    try:
        scales = [check_scale(float(s), "--scales") for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--scales {text!r}: give a comma-separated list of positive numbers") from None
    if not scales:
        raise UserError("--scales is empty: give e.g. 0.001,0.002,0.005")
    if len(set(scales)) != len(scales):
        raise UserError(f"--scales {text!r} names a scale twice")
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
    base = requested or f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{scenario}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", base):
        raise UserError(f"--run-id {base!r} may only contain letters, digits, '.', '_' and '-'")
    d, n = results / base, 1
    while d.exists():
        n += 1
        d = results / f"{base}-{n}"
    return d
