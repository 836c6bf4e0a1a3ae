"""Flat exports of results (CSV / Parquet) built on bench.results.load."""

from __future__ import annotations

import json
from pathlib import Path

from bench.errors import UserError
from bench.results import load


def frame(paths):
    import pandas as pd

    frames = []
    for p in paths:
        if not Path(p).exists():
            raise UserError(f"no such results file or directory: {p}")
        df = load(p)
        if not df.empty:
            frames.append(df)
    if not frames:
        raise UserError(f"no results found in {', '.join(map(str, paths))}")
    df = pd.concat(frames, ignore_index=True).drop_duplicates(
        subset=["run_id", "scenario", "engine", "rep", "warmup"], keep="first")
    # lists and dicts (log tail, codecs, checks that vary by run) become JSON text: one scalar per cell
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, (list, dict))).any():
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return df


def export(paths, csv_path=None, parquet_path=None):
    df = frame(paths)
    if csv_path:
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv_path, index=False)
        yield f"csv: {Path(csv_path).resolve()} ({len(df)} runs, {len(df.columns)} columns)"
    if parquet_path:
        Path(parquet_path).parent.mkdir(parents=True, exist_ok=True)
        df.to_parquet(parquet_path, index=False)
        yield f"parquet: {Path(parquet_path).resolve()} ({len(df)} runs, {len(df.columns)} columns)"
