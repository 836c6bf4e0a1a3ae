"""Recipes -> files -> commits -> dataset manifest.

A dataset is one Iceberg table in the embedded catalog plus a manifest JSON written LAST
(`<warehouse>/datasets/<table>.json`), so a half-written dataset has no manifest and is never mistaken
for a complete one: it is dropped and generated again.  The manifest records the recipe hash, seed,
scale, the snapshot to reset to, every live file, and the generator's ground truth.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyarrow.fs as pafs
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.io.pyarrow import ParquetFormatModel, PyArrowFileIO
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from bench.catalog.s3 import filesystem, fileio_properties, is_s3
from datagen import smallfiles
from datagen.deletes import generate_deletes
from datagen.schema import SCHEMA, make_rows, pools_for

GENERATOR_VERSION = "1"
CODEC_PROPERTIES = {"uncompressed": "uncompressed", "snappy": "snappy", "zstd": "zstd", "gzip": "gzip"}


@dataclass
class Dataset:
    table: str  # "namespace.table"
    recipe_hash: str
    recipe: dict
    scale: float
    seed: int
    snapshot_id: int
    files: int
    bytes: int
    rows: int
    live_files: list[str] = field(default_factory=list)  # every data and delete file of the snapshot
    ground_truth: dict = field(default_factory=dict)
    created_at: str = ""
    generation_s: float = 0.0
    generator_version: str = GENERATOR_VERSION
    reused: bool = False

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("reused")
        return json.dumps(d, indent=1)


def recipe_hash(recipe: dict, scale: float, seed: int) -> str:
    blob = json.dumps({"recipe": recipe, "scale": scale, "seed": seed, "v": GENERATOR_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def table_name(recipe: dict, rhash: str) -> str:
    return f"{recipe['kind']}_{recipe.get('codec', 'uncompressed')}_{rhash}"


def manifest_path(warehouse: Path, table: str) -> Path:
    return Path(warehouse) / "datasets" / f"{table}.json"


def write_properties(recipe: dict) -> dict[str, str]:
    props = {"write.parquet.compression-codec": CODEC_PROPERTIES[recipe.get("codec", "uncompressed")]}
    if recipe.get("codec_level") is not None:
        props["write.parquet.compression-level"] = str(recipe["codec_level"])
    return props


# --- parallel writers ---------------------------------------------------------------------------
_FILE_IO: dict[tuple, PyArrowFileIO] = {}


def file_io(path: str = "") -> PyArrowFileIO:
    """pyiceberg's PyArrowFileIO for `path`: for s3:// with the S3 settings of this process's environment
    (bench.catalog.s3); one per process and settings (forked writers make their own: an S3 client is not
    shared across a fork)."""
    props = fileio_properties() if is_s3(path) else {}
    key = (os.getpid(), tuple(sorted(props.items())))
    io = _FILE_IO.get(key)
    if io is None:
        io = _FILE_IO[key] = PyArrowFileIO(props)
    return io


def data_file_path(location: str, index: int) -> str:
    return f"{location}/data/gen-{index:06d}.parquet"


def write_rows(path: str, props: dict, rows, schema: Schema = SCHEMA, spec_id: int = 0,
               content: DataFileContent = DataFileContent.DATA) -> DataFile:
    """Write an Arrow table (whose schema carries the Iceberg field ids of `schema`) to one Parquet
    file with pyiceberg's own writer (field ids and column statistics as any Iceberg writer records
    them).  Used for data files and, with their own schemas, for delete files."""
    out = file_io(path).new_output(path)
    writer = ParquetFormatModel().create_writer(out, schema, props)
    with writer:
        writer.write(rows)
    stats = writer.result()
    return DataFile.from_args(
        content=content, file_path=path, file_format=FileFormat.PARQUET,
        partition=Record(), file_size_in_bytes=len(out), sort_order_id=None, spec_id=spec_id,
        equality_ids=None, key_metadata=None, **stats.to_serialized_dict())


def write_data_file(location: str, props: dict, seed: int, plan: smallfiles.FilePlan,
                    spec_id: int = 0) -> DataFile:
    """Generate one file's rows and write them (see `write_rows`)."""
    rows = make_rows(pools_for(seed), seed, plan.index, plan.rows, plan.key_offset)
    return write_rows(data_file_path(location, plan.index), props, rows, spec_id=spec_id)


def _write_task(args):
    return write_data_file(*args)


def parallel_write(tasks: list[tuple], workers: int) -> Iterable[DataFile]:
    """Write files on `workers` processes, yielding DataFiles in task order."""
    if workers <= 1:
        for t in tasks:
            yield _write_task(t)
        return
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as ex:
        yield from ex.map(_write_task, tasks, chunksize=1)


def commit_in_checkpoints(table: Table, files: Iterable[DataFile], per_commit: int,
                          progress: Callable[[int], None] | None = None) -> int:
    """fast_append files in groups of `per_commit`, one snapshot each, like a streaming writer's
    checkpoints.  Returns the number of commits."""
    batch: list[DataFile] = []
    commits = 0

    def flush():
        nonlocal commits
        with table.transaction() as tx:
            with tx.update_snapshot(snapshot_properties={"bench.checkpoint": str(commits)}).fast_append() as fa:
                for f in batch:
                    fa.append_data_file(f)
        commits += 1
        if progress:
            progress(len(batch))
        batch.clear()

    for f in files:
        batch.append(f)
        if len(batch) >= per_commit:
            flush()
    if batch:
        flush()
    return commits


# --- datasets -----------------------------------------------------------------------------------
def load_manifest(warehouse: Path, table: str) -> Dataset | None:
    p = manifest_path(warehouse, table)
    if not p.exists():
        return None
    d = json.loads(p.read_text())
    return Dataset(**d)


def drop_incomplete(catalog: Catalog, ident: str) -> None:
    try:
        tbl = catalog.load_table(ident)
    except NoSuchTableError:
        return
    except FileNotFoundError:  # in the catalog, but its metadata file is gone (e.g. an emptied S3 prefix)
        catalog.drop_table(ident)
        return
    location = tbl.location()
    catalog.drop_table(ident)
    fs, path = filesystem(location)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def live_file_paths(tbl: Table) -> list[str]:
    """Every data and delete file referenced by the current snapshot (from the manifests)."""
    snap = tbl.current_snapshot()
    if snap is None:
        return []
    out = []
    for m in snap.manifests(tbl.io):
        for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
            out.append(e.data_file.file_path)
    return sorted(out)


def generate_smallfiles(catalog: Catalog, ident: str, recipe: dict, scale: float, seed: int,
                        workers: int, echo: Callable[[str], None]) -> dict:
    from tqdm import tqdm

    plans = smallfiles.plan_files(recipe["files"], recipe["total_bytes"], scale, recipe["min_files"], seed)
    tbl = catalog.create_table(ident, SCHEMA, properties={**write_properties(recipe), "format-version": "2"})
    props = write_properties(recipe)
    pools_for(seed)  # built once here; forked writers inherit it
    tasks = [(tbl.location(), props, seed, p) for p in plans]
    rows = sum(p.rows for p in plans)
    nbytes = 0
    with tqdm(total=len(plans), unit="file", desc=f"datagen {ident}", disable=None, leave=False) as bar:
        def counted():
            nonlocal nbytes
            for df in parallel_write(tasks, workers):
                nbytes += df.file_size_in_bytes
                yield df
        commit_in_checkpoints(tbl, counted(), recipe["files_per_commit"], bar.update)
    return {"files": len(plans), "bytes": nbytes, "rows": rows, "ground_truth": {"rows": rows}}


# A generator: (catalog, ident, recipe, scale, seed, workers, echo) -> {"files", "bytes", "rows",
# "ground_truth"}.  It creates and fills the table; `prepare` writes the manifest after it returns.
GENERATORS = {"smallfiles": generate_smallfiles, "deletes": generate_deletes}


def register_generator(kind: str, fn) -> None:
    GENERATORS[kind] = fn


def storage_requirements(recipe: dict, scale: float, seed: int, settings) -> list:
    """What generating (recipe, scale, seed) needs to write to the warehouse of `settings`
    (bench.catalog.CatalogSettings), as bench.engines.base.Requirement; [] when the dataset exists."""
    if load_manifest(settings.state_path, table_name(recipe, recipe_hash(recipe, scale, seed))) is not None:
        return []
    if recipe.get("kind") == "deletes":
        from datagen.deletes import storage_requirement

        req = storage_requirement(settings)
        return [req] if req is not None else []
    return []


def prepare(catalog: Catalog, warehouse: Path, namespace: str, recipe: dict, scale: float, seed: int,
            workers: int | None = None, echo: Callable[[str], None] = print) -> Dataset:
    """Return the dataset for (recipe, scale, seed), generating it unless a complete one exists."""
    rhash = recipe_hash(recipe, scale, seed)
    name = table_name(recipe, rhash)
    ident = f"{namespace}.{name}"
    existing = load_manifest(warehouse, name)
    if existing is not None:
        try:
            catalog.load_table(ident)
            existing.reused = True
            return existing
        except (NoSuchTableError, FileNotFoundError):  # dropped, or its files are gone
            manifest_path(warehouse, name).unlink()
    drop_incomplete(catalog, ident)  # a table without a manifest is a half-written dataset
    catalog.create_namespace_if_not_exists(namespace)
    kind = recipe["kind"]
    if kind not in GENERATORS:
        raise ValueError(f"no generator for table kind {kind!r}")
    t0 = time.perf_counter()
    gen = GENERATORS[kind](catalog, ident, recipe, scale, seed, workers or os.cpu_count() or 1, echo)
    elapsed = time.perf_counter() - t0
    tbl = catalog.load_table(ident)
    ds = Dataset(table=ident, recipe_hash=rhash, recipe=recipe, scale=scale, seed=seed,
                 snapshot_id=tbl.current_snapshot().snapshot_id, files=gen["files"], bytes=gen["bytes"],
                 rows=gen["rows"], live_files=live_file_paths(tbl), ground_truth=gen["ground_truth"],
                 created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), generation_s=elapsed)
    p = manifest_path(warehouse, name)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(ds.to_json())
    os.replace(tmp, p)  # the manifest is written last: its presence means the dataset is complete
    return ds


def reset(catalog: Catalog, ds: Dataset) -> None:
    """Put the table back to its generated snapshot and delete files a compaction added, so the next
    engine compacts the identical input."""
    tbl = catalog.load_table(ds.table)
    snap = tbl.current_snapshot()
    if snap is None or snap.snapshot_id != ds.snapshot_id:
        tbl.manage_snapshots().set_current_snapshot(snapshot_id=ds.snapshot_id).commit()
        tbl = catalog.load_table(ds.table)
    keep = set(ds.live_files)
    fs, data_dir = filesystem(f"{tbl.location()}/data")
    try:
        infos = fs.get_file_info(pafs.FileSelector(data_dir, recursive=True))
    except FileNotFoundError:
        infos = []
    prefix = tbl.location().split("://", 1)[0] + "://" if "://" in tbl.location() else ""
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        if not _is_kept(info.path, keep, prefix):
            fs.delete_file(info.path)
    current = live_file_paths(tbl)
    if current != sorted(ds.live_files):
        raise RuntimeError(f"reset of {ds.table} failed: live files differ from the dataset manifest")


def _is_kept(fs_path: str, keep: set[str], prefix: str) -> bool:
    candidates = {fs_path, prefix + fs_path, "file://" + fs_path, "file:" + fs_path}
    return bool(candidates & keep)
