"""The method block of a result set: the engine orders, cache policies, input fingerprints (and the user's own
table's pin) and the verifier's rules, as the results record them."""

from __future__ import annotations

from collections import Counter

from reports.model.view import Method, ResultSet, group_by


def method(rs: ResultSet) -> Method:
    orders: dict[str, list[str]] = {}
    for lr in rs.runs:
        if lr.r.engine_order:
            orders.setdefault(lr.r.tag, list(lr.r.engine_order))
    distinct = {tuple(o) for o in orders.values()}
    rotates = None if len(rs.engines) < 2 or len(orders) < 2 else len(distinct) > 1
    cache: Counter[str] = Counter()
    for lr in rs.runs:
        c = lr.r.cache
        text = c.mode + (f" ({c.note})" if c.note else "")
        if c.mode == "warm" and c.warmed_bytes:
            text += f", {c.warmed_bytes / 1e6:,.1f} MB read to warm it"
        if c.mode == "cold" and not c.dropped:
            text += " — NOT dropped"
        cache[text] += 1
    n = len(rs.runs)
    cache_lines = [t if len(cache) == 1 else f"{t}: {k} of {n} runs" for t, k in cache.items()]
    inputs = Counter((lr.r.input.fingerprint or "not recorded", lr.r.input.identical_to_dataset) for lr in rs.runs)
    input_lines = []
    for (fp, same), k in inputs.items():
        where = "every run" if k == n else f"{k} of {n} runs"
        input_lines.append(f"fingerprint {fp}: " + ("identical to the dataset" if same else
                                                    "NOT identical to the dataset") + f" ({where})")
    input_lines += _source_lines(rs)
    rules = next((lr.r.verification.rules for lr in rs.runs if lr.r.verification.rules), [])
    return Method(orders=list(orders.items()), rotates=rotates, cache=cache_lines, inputs=input_lines,
                  rules=list(rules))


def _source_lines(rs: ResultSet) -> list[str]:
    """Runs on the user's own table (`--source-table`): which table, and whether it stayed unchanged."""
    out = []
    for (table, snap, clone), runs in group_by([lr.r for lr in rs.runs if lr.r.source],
                                                     lambda r: (r.source.table, r.source.snapshot_id, r.source.clone)):
        changed = [r for r in runs if r.source.unchanged is False]
        unchecked = [r for r in runs if r.source.unchanged is None]
        state = (f"CHANGED after {len(changed)} of {len(runs)} runs: {changed[0].source.differences[0]}" if changed
                 else f"unchanged after every run (fingerprint {runs[0].source.fingerprint_before} over "
                      f"{runs[0].source.files} pinned files: size and sampled content)"
                      + (f"; {len(unchecked)} not checked" if unchecked else ""))
        out.append(f"your own table {table}, pinned at snapshot {snap}, compacted as its zero-copy clone {clone}: "
                   f"the pinned snapshot {state}")
    return out
