"""Each engine's colour: as its results declare it, else the next colour of a fallback palette that no declared
colour already is."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reports.model.loading import LoadedRun

FALLBACK_COLORS = ["#0F9D8A", "#8E44AD", "#B7950B", "#C0392B", "#2C3E50", "#16A085"]


def fill_colors(declared: dict[str, str | None], taken: Iterable[str | None]) -> dict[str, str]:
    """`declared` (engine -> its colour, or None), in its order, each None replaced by the next colour of the
    fallback palette that is none of `taken` (the whole palette again when every one is taken)."""
    used = {c.lower() for c in taken if c}
    spare = [c for c in FALLBACK_COLORS if c.lower() not in used] or FALLBACK_COLORS
    out, i = {}, 0
    for engine, color in declared.items():
        if color:
            out[engine] = color
        else:
            out[engine] = spare[i % len(spare)]
            i += 1
    return out


def assign_colors(runs: list[LoadedRun]) -> dict[str, str]:
    """Each engine's colour as its results declare it; a fallback palette for engines that do not."""
    declared: dict[str, str | None] = {}
    for lr in runs:
        if declared.get(lr.r.engine) is None:
            declared[lr.r.engine] = lr.r.engine_color
    return fill_colors(declared, declared.values())
