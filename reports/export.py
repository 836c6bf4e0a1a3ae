"""Flat exports of results (CSV / Parquet): one row per engine run, nested fields as dotted columns.

Named lists become one column per name, so runs line up by name rather than by position:
- verification.checks -> `verification.check.<name>` = whether the check held (bool);
- phases -> `phase.<name>` and setup_phases -> `setup_phase.<name>` = seconds;
- memory_caps -> `memory_cap.<name>` = bytes (empty when the engine reports no such limit).
Any other list or dict (log tail, codecs, the verification's rules and differences, engine actions)
becomes JSON text: one scalar per cell.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from bench.core.errors import UserError
from bench.core.fileio import check_writable, write_atomic
from bench.core.results import RunResult, read_results


def _named(items, key: str, value: str, prefix: str) -> dict:
    out: dict = {}
    for it in items:
        name = f"{prefix}.{it[key]}"
        v = it[value]
        out[name] = out[name] + v if name in out and isinstance(v, (int, float)) else v
    return out


def row(r: RunResult) -> dict:
    """One run as a nested dict ready for pandas.json_normalize (sep=".")."""
    d = r.model_dump(mode="json")
    checks = d["verification"].pop("checks")
    d["verification"]["check"] = {c["name"]: c["ok"] for c in checks}
    flat = {}
    flat.update(_named(d.pop("phases"), "name", "seconds", "phase"))
    flat.update(_named(d.pop("setup_phases"), "name", "seconds", "setup_phase"))
    flat.update(_named(d.pop("memory_caps"), "name", "bytes", "memory_cap"))
    return {**d, **flat}


def frame(paths):
    import pandas as pd

    rows = []
    for p in paths:
        if not Path(p).exists():
            raise UserError(f"no such results file or directory: {p}")
        rows += [row(r) for r in read_results(Path(p))]
    if not rows:
        raise UserError(f"no results found in {', '.join(map(str, paths))}")
    df = pd.json_normalize(rows, sep=".")
    df = df.drop_duplicates(subset=["run_id", "scenario", "engine", "rep", "warmup"], keep="first")
    df = df.reset_index(drop=True)
    # lists and dicts left (log tail, codecs, rules, differences) become JSON text: one scalar per cell
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, (list, dict))).any():
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return df


def export(paths, csv_path=None, parquet_path=None):
    """Write the table to each path asked for: every path checked before anything is read, both files encoded
    before either is written, each written whole (an atomic rename), so a failure leaves neither half of it."""
    targets = {kind: check_writable(path, f"--{kind}") for kind, path in (("csv", csv_path), ("parquet", parquet_path))
               if path}
    df = frame(paths)
    encoded = {}
    if "csv" in targets:
        encoded["csv"] = df.to_csv(index=False).encode()
    if "parquet" in targets:
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        encoded["parquet"] = buf.getvalue()
    for kind, path in targets.items():
        write_atomic(path, encoded[kind], mode=0o644)
        yield f"{kind}: {path} ({len(df)} runs, {len(df.columns)} columns)"
