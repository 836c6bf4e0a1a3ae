"""The engine's input before each run: the dataset restored byte for byte and measured (fingerprint,
stats with the slow part cached by fingerprint), and the page cache dropped or warmed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bench.core.dataset import manifest_path, spare_dir
from bench.core.fileio import write_atomic
from bench.core.machine import drop_page_cache
from bench.core.results import CacheState, InputState, TableStats
from bench.core.table import LiveFiles, live_files, local_path
from bench.core.table.state import fingerprint, restore
from bench.runner.context import RunContext
from bench.verify import table_stats


def baseline_cache_path(ctx: RunContext) -> Path:
    ds = ctx.dataset
    assert ds is not None
    return manifest_path(ctx.settings.state_path, ds.table.split(".")[-1]).with_suffix(".baseline.json")


def input_stats(ctx: RunContext, files: LiveFiles, fp: str) -> TableStats:
    """The input's stats: manifest facts read now; footers and content (the slow part) cached beside
    the dataset's manifest, keyed by the input fingerprint (the same files and metadata give the same
    content)."""
    assert ctx.catalog is not None and ctx.dataset is not None
    tbl = ctx.catalog.load_table(ctx.dataset.table)
    fresh = table_stats(tbl, content=False, footers_too=False, files=files, settings=ctx.settings)
    cache = baseline_cache_path(ctx)
    try:
        cached = json.loads(cache.read_text())
        if cached.get("fingerprint") == fp:
            full = TableStats.model_validate(cached["stats"])
            return full.model_copy(update={k: getattr(fresh, k) for k in (
                "snapshot_id", "metadata_location", "data_files", "delete_files", "position_delete_files",
                "equality_delete_files", "data_bytes", "delete_bytes")})
    except (OSError, ValueError, KeyError):
        pass
    with ctx.progress.task("reading the input once (cached)", unit="step"):
        full = table_stats(tbl, files=files, settings=ctx.settings)
    write_atomic(cache, json.dumps({"fingerprint": fp, "stats": full.model_dump()}, indent=1))
    return full


def reset_input(ctx: RunContext) -> tuple[InputState, TableStats, set[str]]:
    """Restore the dataset byte for byte and measure what the engine will get."""
    ds = ctx.dataset
    assert ctx.catalog is not None and ds is not None
    _, listing = restore(ctx.catalog, ds.table, ds.metadata_location, ds.location, ds.table_files,
                         spare_dir(ctx.settings.state_path, ds.table.split(".")[-1]))
    tbl = ctx.catalog.load_table(ds.table)
    fp = fingerprint(listing, tbl.metadata_location)
    identical = (listing == ds.table_files and tbl.metadata_location == ds.metadata_location)
    files = live_files(tbl)
    state = InputState(fingerprint=fp, identical_to_dataset=identical, metadata_location=tbl.metadata_location,
                       files=len(listing))
    return state, input_stats(ctx, files, fp), set(LiveFiles.paths(files.all))


def prepare_cache(ctx: RunContext) -> CacheState:
    """Sync the warehouse; drop the page cache (cold) or read the input once (warm)."""
    st = CacheState(mode=ctx.cache_mode, requested=ctx.cache_requested)  # type: ignore[arg-type]
    if ctx.cache_mode == "none":
        st.note = "S3 warehouse: no local page cache of the input"
        return st
    if ctx.cache_mode == "cold":
        drop_page_cache()
        st.synced = st.dropped = True
        st.note = "sync, then echo 3 > /proc/sys/vm/drop_caches"
    else:
        os.sync()
        st.synced = True
        ds = ctx.dataset
        assert ds is not None
        buf = bytearray(1 << 20)
        for path in ds.live_files:
            with open(local_path(path), "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    st.warmed_bytes += n
        st.note = "sync, then every input file read once"
    return st
