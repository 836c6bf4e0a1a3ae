"""Sizes and scales: one parser, the JVM's size spelling, one scale check (sizes for people: bench.core.fmt)."""

from __future__ import annotations

import re

from bench.core.errors import UserError

KiB = 1024
MiB = 1024**2
GiB = 1024**3
SCALE_HELP = "must be a positive number (1.0 = the published size)"


def parse_size(text: str | int, what: str = "size") -> int:
    """'8G', '512m', '1.5GiB', '40g' (Spark's spelling) or a byte count -> bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", str(text), re.IGNORECASE)
    if not m:
        raise UserError(f"{what} {text!r} is not a size; use e.g. 512M, 8G, 1.5G or a byte count")
    value = float(m.group(1)) * 1024 ** "bkmgt".index((m.group(2) or "b").lower())
    if value <= 0:
        raise UserError(f"{what} must be positive, got {text!r}")
    return int(value)


def fmt_mib(n: int) -> str:
    """Bytes as a JVM/Spark size in MiB ('512m'), at least 1m."""
    return f"{max(1, n // MiB)}m"


def check_scale(scale: float | None, what: str = "--scale") -> float:
    """A usable scale factor, or UserError."""
    try:
        value = float(scale)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UserError(f"{what} {SCALE_HELP}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise UserError(f"{what} {SCALE_HELP}")
    return value
