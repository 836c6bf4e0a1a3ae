"""The count of equality-delete files a reader merges (bench.reads.measure.equality_merged) is the spec's rule,
counted in linear time: the same answer as testing every (delete, opened data file) pair."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

from bench.core.table.deletes import is_global, scope, seq
from bench.reads.measure import equality_merged


class _Spec:
    def __init__(self, unpartitioned: bool) -> None:
        self.unpartitioned = unpartitioned

    def is_unpartitioned(self) -> bool:
        return self.unpartitioned


def _entry(rng: random.Random, spec_id: int) -> NS:
    part = [rng.randint(0, 2)] if spec_id == 1 else []
    return NS(sequence_number=rng.randint(1, 12), data_file=NS(spec_id=spec_id, partition=part))


def test_linear_count_is_the_pairwise_rule():
    rng = random.Random(7)
    specs = {0: _Spec(True), 1: _Spec(False)}
    for _ in range(300):
        opened = [_entry(rng, rng.choice((0, 1))) for _ in range(rng.randint(0, 8))]
        equality = [_entry(rng, rng.choice((0, 1))) for _ in range(rng.randint(0, 8))]
        pairwise = sum(1 for x in equality
                       if any(seq(x) > seq(d) and (is_global(x.data_file, specs)
                                                   or scope(x.data_file) == scope(d.data_file)) for d in opened))
        assert equality_merged(equality, opened, specs) == pairwise
