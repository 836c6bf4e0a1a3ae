"""`bench selfcheck rates`: this machine's rates, measured on the files of a dataset table of the warehouse.

For each table (default: every dataset of the warehouse), on up to `max_files` of its live data files:
  - cold read: the files read with O_DIRECT (the page cache bypassed, nothing evicted for other users),
    `readers` at a time: MB/s of the warehouse device;
  - decode: each file's bytes, already in memory, decoded by pyarrow on one thread: on-disk MB/s and
    rows/s per core (the input's codec);
  - encode: the decoded rows written to memory by pyarrow on one thread, per output codec: rows/s per core;
  - hash join: DuckDB on one thread, the rows' key columns (the table's equality-delete columns, else
    the first two columns) probed against a hash table of a tenth of them: (build + probe) rows/s.
Each is the best of `rounds` (the least time a step takes here: on a shared machine the slower rounds
are other users' load).  The rates go to `<state dir>/datasets/<table>.rates.json` (bench.core.rates),
where arrow-floor finds them and records the physical bound of its rewrite with every result.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pyiceberg.exceptions import NoSuchTableError

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.dataset import GeneratedTable, manifest_path
from bench.core.errors import UserError
from bench.core.rates import TableRates, save_rates
from bench.core.table import live_files, local_path

CODECS = ("snappy", "zstd", "uncompressed")
BLOCK = 4 << 20


def _read_direct(path: str) -> int:
    """Read `path` with O_DIRECT into an aligned buffer: the bytes read (page cache bypassed)."""
    buf = mmap.mmap(-1, BLOCK)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    total = 0
    try:
        while n := os.readv(fd, [buf]):
            total += n
            if n < BLOCK:
                break
    finally:
        os.close(fd)
        buf.close()
    return total


def cold_read_mb_s(paths: list[str], readers: int) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=readers) as pool:
        total = sum(pool.map(_read_direct, paths))
    return total / 1e6 / (time.perf_counter() - t0)


def decode(blobs: list[bytes]) -> tuple[float, float, list[Any], float]:
    """(on-disk MB/s, rows/s, the tables, on-disk MB per CPU-second) decoding the files' bytes on one thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0, c0 = time.perf_counter(), time.process_time()
    tables = [pq.read_table(pa.BufferReader(b), use_threads=False) for b in blobs]
    s, cpu = time.perf_counter() - t0, time.process_time() - c0
    mb = sum(map(len, blobs)) / 1e6
    return mb / s, sum(t.num_rows for t in tables) / s, tables, mb / max(cpu, 1e-9)


def encode_rows_s(table: Any, codec: str) -> tuple[float, float]:
    """(rows/s, rows per CPU-second) writing `table` to memory with `codec` on one thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0, c0 = time.perf_counter(), time.process_time()
    pq.write_table(table, pa.BufferOutputStream(), compression="none" if codec == "uncompressed" else codec)
    return table.num_rows / (time.perf_counter() - t0), table.num_rows / max(time.process_time() - c0, 1e-9)


def join_rows_s(table: Any, cols: list[str]) -> tuple[float, float]:
    """(build + probe) rows/s of DuckDB's hash join on one thread: every row probed against a hash
    table of every tenth row's key (as an equality delete's keys are a share of the rows)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    probe = table.select(cols)
    build = probe.take(list(range(0, probe.num_rows, 10)))
    con.register("probe", probe)
    con.register("build", build)
    on = " AND ".join(f'p."{c}" IS NOT DISTINCT FROM b."{c}"' for c in cols)
    t0, c0 = time.perf_counter(), time.process_time()
    con.execute(f"SELECT count(*) FROM probe p ANTI JOIN build b ON {on}").fetchone()
    s, cpu = time.perf_counter() - t0, time.process_time() - c0
    con.close()
    rows = probe.num_rows + build.num_rows
    return rows / s, rows / max(cpu, 1e-9)


def _key_columns(tbl: Any, files: Any, table: Any) -> list[str]:
    schema = tbl.schema()
    for e in files.equality:
        if e.data_file.equality_ids:
            return [str(schema.find_column_name(i)) for i in e.data_file.equality_ids]
    return table.column_names[:2]


def measure_table(settings: CatalogSettings, ds: GeneratedTable, max_files: int, rounds: int,
                  readers: int) -> TableRates:
    try:
        tbl = load_sql_catalog(settings).load_table(ds.table)
    except (NoSuchTableError, FileNotFoundError):
        raise UserError(f"{ds.table}: the dataset is not in the catalog (a run is under way, or was killed: "
                        "`bench doctor --warehouse W --repair` restores it)") from None
    files = live_files(tbl, ds.snapshot_id)  # the dataset's files, as every run starts from them
    data = sorted(files.data, key=lambda e: e.data_file.file_path)[:max_files]
    if not data:
        raise UserError(f"{ds.table}: no live data file to measure")
    paths = [local_path(e.data_file.file_path) for e in data]
    reads = [cold_read_mb_s(paths, readers) for _ in range(rounds)]
    blobs = []
    for p in paths:
        with open(p, "rb") as fh:
            blobs.append(fh.read())
    decodes = [decode(blobs) for _ in range(rounds)]
    import pyarrow as pa

    table = pa.concat_tables(decodes[0][2])
    cols = _key_columns(tbl, files, table)
    enc = {c: [encode_rows_s(table, c) for _ in range(rounds)] for c in CODECS}
    joins = [join_rows_s(table, cols) for _ in range(rounds)]
    return TableRates(
        table=ds.table, measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        input_codec=str(ds.recipe.get("codec", "?")), files=len(paths), bytes=sum(map(len, blobs)), rows=table.num_rows,
        read_mb_s=max(reads), decode_mb_s_per_core=max(d[0] for d in decodes),
        decode_rows_s_per_core=max(d[1] for d in decodes),
        encode_rows_s_per_core={c: max(w for w, _ in v) for c, v in enc.items()},
        join_rows_s_per_core=max(w for w, _ in joins), join_library="duckdb",
        cpu={"decode_mb": max(d[3] for d in decodes), "join_rows": max(c for _, c in joins),
             **{f"encode_rows_{c}": max(x for _, x in v) for c, v in enc.items()}},
        rounds=rounds, notes=[f"cold read with O_DIRECT, {readers} files at a time; join keys {', '.join(cols)}"])


def _datasets(settings: CatalogSettings, tables: list[str]) -> list[GeneratedTable]:
    d = settings.datasets_path
    names = [t.split(".")[-1] for t in tables]
    if not names and d.is_dir():  # every dataset manifest (<table>.json; not .baseline.json, .rates.json)
        names = sorted(p.name[:-len(".json")] for p in d.glob("*.json") if p.name.count(".") == 1)
    out = []
    for n in names:
        try:
            out.append(GeneratedTable.model_validate_json(manifest_path(settings.state_path, n).read_text()))
        except (OSError, ValueError):
            raise UserError(f"no dataset {n!r} in {d} (generate it with `bench datagen` or `bench run`)") from None
    if not out:
        raise UserError(f"no dataset in {d}: generate one with `bench datagen` or `bench run`")
    return out


def run_rates(warehouse: str | None, tables: list[str], max_files: int = 64, rounds: int = 3,
              readers: int = 4) -> Iterator[str]:
    """Measure, store and describe the rates of each table: report lines."""
    settings = CatalogSettings.for_warehouse(warehouse)
    if settings.is_remote:
        raise UserError("bench selfcheck rates measures a local warehouse's device")
    for ds in _datasets(settings, tables):
        r = measure_table(settings, ds, max_files, rounds, readers)
        path = save_rates(settings.state_path, r)
        enc = ", ".join(f"{c} {v / 1e6:.2f} M" for c, v in r.encode_rows_s_per_core.items())
        yield (f"{r.table} ({r.input_codec}, {r.files} files, {r.bytes / 1e6:.0f} MB, {r.rows} rows; best of "
               f"{r.rounds}): cold read {r.read_mb_s:.0f} MB/s; decode {r.decode_mb_s_per_core:.0f} MB/s = "
               f"{r.decode_rows_s_per_core / 1e6:.2f} M rows/s per core; encode rows/s per core: {enc}; "
               f"hash join {r.join_rows_s_per_core / 1e6:.2f} M rows/s per core -> {path}")
