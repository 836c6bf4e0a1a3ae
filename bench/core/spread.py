"""min / median / max of some values: one type for every spread (a run's repetitions, a sweep point's runs,
file counts over partitions).  Written as {"median", "min", "max"}; `n` and `values` stay in memory."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from pydantic import BaseModel, Field


class Spread(BaseModel):
    median: float | None = None
    min: float | None = None
    max: float | None = None
    n: int = Field(default=0, exclude=True)  # how many values (not written)
    values: list[float] = Field(default_factory=list, exclude=True)  # the values themselves (not written)

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        """The spread of the values given, None ones skipped (all None without any)."""
        vals = [float(v) for v in values if v is not None]
        if not vals:
            return cls()
        return cls(n=len(vals), median=statistics.median(vals), min=min(vals), max=max(vals), values=vals)

    def __eq__(self, other: object) -> bool:
        """Equal as written: the same median, min and max (the values kept in memory, or not, do not count)."""
        if not isinstance(other, Spread):
            return NotImplemented
        return (self.median, self.min, self.max) == (other.median, other.min, other.max)

