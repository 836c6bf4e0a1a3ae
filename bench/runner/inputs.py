"""The engine's input before each run: the dataset restored byte for byte and measured (fingerprint,
stats with the slow part cached by fingerprint), the table out of reach while the engine sets up
(`SetupGuard`), then the page cache dropped or warmed."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyiceberg.table.metadata import TableMetadata

from bench.core.dataset import hashes_cache_path, manifest_path, parked_dir, spare_dir
from bench.core.fileio import read_once, write_atomic
from bench.core.machine import drop_page_cache
from bench.core.records.engine_run import CacheState, InputState, SetupIO
from bench.core.records.verification import TableStats
from bench.core.settings import env_settings
from bench.core.table.entries import LiveFiles, live_files
from bench.core.table.hashes import ALGORITHM, content_hashes, differing
from bench.core.table.state import fingerprint, keep_spares, list_files, park, point_at, restore, unpark
from bench.core.uri import local_path
from bench.runner.context import RunContext
from bench.verify.stats import table_stats


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
        overruled = frozenset(f.reader for f in ctx.dataset.ground_truth.findings)  # never the input's reader
        full = table_stats(tbl, files=files, settings=ctx.settings, avoid=overruled)
    write_atomic(cache, json.dumps({"fingerprint": fp, "stats": full.model_dump()}, indent=1))
    return full


def reset_input(ctx: RunContext) -> tuple[InputState, TableStats, set[str], TableMetadata]:
    """Restore the dataset byte for byte and measure what the engine will get (and its metadata: what
    the integrity checks compare the table with after the run)."""
    ds = ctx.dataset
    assert ctx.catalog is not None and ds is not None
    name = ds.table.split(".")[-1]
    _, put_back, listing = restore(ctx.catalog, ds.table, ds.metadata_location, ds.location, ds.table_files,
                         spare_dir(ctx.settings.state_path, name), parked_dir(ctx.settings.state_path, name))
    tbl = ctx.catalog.load_table(ds.table)
    fp = fingerprint(listing, tbl.metadata_location)
    identical = (listing == ds.table_files and tbl.metadata_location == ds.metadata_location)
    hashed, compared = content_identity(ctx, listing)
    files = live_files(tbl)
    state = InputState(fingerprint=fp, identical_to_dataset=identical and not compared.startswith("differ"),
                       compared=compared, hashed_now=hashed, metadata_location=tbl.metadata_location,
                       files=len(listing), restored_from_vault=put_back)
    return state, input_stats(ctx, files, fp), set(LiveFiles.paths(files.all)), tbl.metadata


def content_identity(ctx: RunContext, listing: dict[str, int]) -> tuple[int, str]:
    """(files hashed now, what was compared): every file's content hash against the dataset's recorded ones
    (bench.core.table.hashes: a file whose ctime is unchanged since it was hashed is not read again); the
    text starts with "differ" when any differs.  S3, or a dataset recorded before content hashes: paths and
    sizes only, said so."""
    ds = ctx.dataset
    assert ds is not None
    if not ds.table_hashes:
        return 0, ("paths and sizes of the table's files and its metadata file (content not hashed: "
                   + ("an S3 warehouse)" if ctx.settings.is_remote else "the dataset records none: generated before "
                      "they were recorded, or a source table's clone)"))
    now, hashed = content_hashes(ds.location, listing, hashes_cache_path(ctx.settings.state_path,
                                                                         ds.table.split(".")[-1]))
    bad = differing(ds.table_hashes, now)
    if bad:
        return hashed, f"differ: {len(bad)} file(s)' {ALGORITHM} content hash differs from the dataset's, e.g. {bad[0]}"
    return hashed, (f"{ALGORITHM} content hashes of all {len(now)} files equal the dataset's ({hashed} read and "
                    "hashed now, the others unchanged since they were hashed: same inode, size, mtime, ctime)")


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
        st.warmed_bytes += read_once(local_path(path) for path in ds.live_files)
        st.note = "sync, then every input file read once"
    return st




@dataclass
class SetupGuard:
    """No work outside the clock: the table is out of reach while the engine sets up (`park`, before the
    engine process starts), and made reachable again, with the page cache dropped, only when its open()
    has returned (`release`, then the runner says go).  On a local warehouse the table's directory is
    moved aside and the table unregistered: nothing of it can be read.  On S3 the table is unregistered
    and its metadata files removed (restored from their spare copies); its data objects stay, so the
    evidence decides there: a setup whose reads through read() exceed the allowance for loading code
    plus half of the input's bytes is not counted."""

    ctx: RunContext
    input_bytes: int
    apply_cache: bool = True  # False: a streaming cycle's maintenance (no page-cache policy between cycles)
    io: SetupIO = field(default_factory=SetupIO)
    cache: CacheState | None = None
    _metadata_location: str = ""
    _listing: dict[str, int] = field(default_factory=dict)

    def park(self) -> None:
        ctx, ds = self.ctx, self.ctx.dataset
        assert ctx.catalog is not None and ds is not None
        name = ds.table.split(".")[-1]
        # as it is now, not the dataset's: a --cow-branch run has created its branch since reset_input
        self._metadata_location = ctx.catalog.load_table(ds.table).metadata_location
        self._listing = list_files(ds.location)
        metadata = [rel for rel in self._listing if rel.startswith("metadata/")]
        spare = spare_dir(ctx.settings.state_path, name)
        if ctx.settings.is_remote:  # the metadata as it is now (e.g. a branch's new metadata file too)
            keep_spares(ds.location, self._listing, spare)
        self.io = SetupIO(input_bytes=self.input_bytes, parked=park(
            ctx.catalog, ds.table, ds.location, parked_dir(ctx.settings.state_path, name), metadata, spare))
        if ctx.settings.is_remote:
            self.io.judged_on = "setup_read_chars"

    def release(self, read_bytes: int | None, read_chars: int | None) -> CacheState:
        """The engine has set up (its tree's I/O counters so far given): the table back, the cache policy
        applied.  Raises when the table did not come back byte for byte."""
        ctx, ds = self.ctx, self.ctx.dataset
        assert ctx.catalog is not None and ds is not None
        t0 = time.perf_counter()
        self.io.setup_read_bytes, self.io.setup_read_chars = read_bytes, read_chars
        name = ds.table.split(".")[-1]
        if ctx.settings.is_remote:
            restore(ctx.catalog, ds.table, self._metadata_location, ds.location, self._listing,
                    spare_dir(ctx.settings.state_path, name))
        else:
            unpark(ds.location, parked_dir(ctx.settings.state_path, name))
            point_at(ctx.catalog, ds.table, self._metadata_location)
        now = list_files(ds.location)
        if now != self._listing:
            changed = sorted(set(now.items()) ^ set(self._listing.items()))
            raise RuntimeError(f"the table did not come back as it was parked: {len(changed)} file(s) differ, "
                               f"e.g. {changed[0][0]}")
        if self.io.judged_on and read_chars is not None and self.input_bytes:
            self.io.share = round(max(0, read_chars - env_settings().setup_read_allowance) / self.input_bytes, 4)
        self.cache = prepare_cache(ctx) if self.apply_cache else CacheState(note="no page-cache policy (a streaming "
                                                                                 "cycle: the table stays as in use)")
        self.io.restore_s = round(time.perf_counter() - t0, 4)
        return self.cache
