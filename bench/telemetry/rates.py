"""`bench selfcheck rates`: this machine's rates, measured on the files of a dataset table of the warehouse.

For each table (default: every dataset of the warehouse), on up to `max_files` of its live data files:
  - cold read: the files read with O_DIRECT (the page cache bypassed, nothing evicted for other users),
    `readers` at a time: MB/s of the warehouse device;
  - decode: on one thread, the files' bytes (in the page cache) decoded by pyarrow (into Arrow tables) and
    by DuckDB (its Parquet reader scanning every column, each counted: the least work a reader does with
    the bytes): on-disk MB/s and rows/s per core of the faster (the input's codec);
  - encode: on one thread, the rows written as Parquet per output codec by pyarrow (to memory) and by
    DuckDB (COPY of an in-memory DuckDB table to a scratch file, less the time to scan that table): rows/s
    per core of the faster;
  - hash join: DuckDB on one thread, the rows' key columns (the table's equality-delete columns, else
    the first two columns) probed against a hash table of a tenth of them: (build + probe) rows/s.
Each is the best of `rounds` (the least time a step takes here: on a shared machine the slower rounds
are other users' load), and each step's rate is the faster library's: the floor rewrites with DuckDB,
whose fused read-and-COPY outran pyarrow's decode and encode measured apart (the bound was beaten by the
floor's rewrite phase), so both are measured and the bound is built from the faster of each.  The rates
go to `<state dir>/datasets/<table>.rates.json` (bench.core.rates),
where arrow-floor finds them and records the physical bound of its rewrite with every result.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyiceberg.exceptions import NoSuchTableError

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.dataset import GeneratedTable, manifest_path
from bench.core.errors import UserError
from bench.core.rates import TableRates, save_rates
from bench.core.sql import ident, literal, string_list
from bench.core.table.entries import live_files
from bench.core.uri import local_path

CODECS = ("snappy", "zstd", "uncompressed")
BLOCK = 4 << 20
ROW_GROUP_ROWS = 122_880  # DuckDB's default row group, as the floor writes (bench.engines.arrow_floor)


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


def duckdb_decode(paths: list[str]) -> tuple[float, float, float]:
    """(on-disk MB/s, rows/s, MB per CPU-second) of DuckDB's Parquet reader on one thread scanning every column
    of `paths` (each column counted: its values read, nothing built from them)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        files = string_list(paths)
        cols = [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM read_parquet({files})").fetchall()]
        t0, c0 = time.perf_counter(), time.process_time()
        got = con.execute(f"SELECT count(*), {', '.join(f'count({ident(c)})' for c in cols)} "
                          f"FROM read_parquet({files})").fetchone()
        rows = got[0] if got else 0
        s, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        con.close()
    mb = sum(os.path.getsize(p) for p in paths) / 1e6
    return mb / s, rows / s, mb / max(cpu, 1e-9)


def duckdb_encode(table: Any, codecs: tuple[str, ...], rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Per codec, `rounds` times (rows/s, rows per CPU-second) of DuckDB on one thread writing `table`'s rows
    from an in-memory DuckDB table to a scratch Parquet file (as the floor's COPY writes), less the time of a
    scan of that table (every column counted)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1, "preserve_insertion_order": False})
    scratch = tempfile.mkdtemp(prefix="bench-rates-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        con.register("rows_in", table)
        con.execute("CREATE TABLE rows_mem AS SELECT * FROM rows_in")
        con.unregister("rows_in")
        scan = f"SELECT {', '.join(f'count({ident(c)})' for c in table.column_names)} FROM rows_mem"

        def timed(sql: str) -> tuple[float, float]:
            t0, c0 = time.perf_counter(), time.process_time()
            con.execute(sql).fetchall()
            return time.perf_counter() - t0, time.process_time() - c0

        out: dict[str, list[tuple[float, float]]] = {}
        for codec in codecs:
            out[codec] = []
            for _ in range(rounds):
                ws, wc = timed(scan)
                s, c = timed(f"COPY rows_mem TO {literal(os.path.join(scratch, 'encode.parquet'))} "
                             f"(FORMAT parquet, COMPRESSION {codec}, ROW_GROUP_SIZE {ROW_GROUP_ROWS})")
                out[codec].append((table.num_rows / max(s - ws, 1e-9), table.num_rows / max(c - wc, 1e-9)))
        return out
    finally:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)


def join_rows_s(table: Any, cols: list[str]) -> tuple[float, float]:
    """(build + probe) rows/s of DuckDB's hash join on one thread: every row probed against a hash
    table of every tenth row's key (as an equality delete's keys are a share of the rows)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    probe = table.select(cols)
    build = probe.take(list(range(0, probe.num_rows, 10)))
    con.register("probe", probe)
    con.register("build", build)
    on = " AND ".join(f"p.{ident(c)} IS NOT DISTINCT FROM b.{ident(c)}" for c in cols)
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
    del blobs
    import pyarrow as pa

    table = pa.concat_tables(decodes[0][2])
    decoded = [(mb, cpu, rows) for mb, rows, _, cpu in decodes]  # (the tables freed: one concatenated is kept)
    del decodes
    duck = [duckdb_decode(paths) for _ in range(rounds)]
    cols = _key_columns(tbl, files, table)
    enc = {c: [encode_rows_s(table, c) for _ in range(rounds)] for c in CODECS}
    duck_enc = duckdb_encode(table, CODECS, rounds)
    joins = [join_rows_s(table, cols) for _ in range(rounds)]
    dec = _faster({"pyarrow": decoded, "duckdb": [(d[0], d[2], d[1]) for d in duck]})
    encs = {c: _faster({"pyarrow": [(w, x, 0.0) for w, x in enc[c]], "duckdb": [(w, x, 0.0) for w, x in duck_enc[c]]})
            for c in CODECS}
    return TableRates(
        table=ds.table, measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        input_codec=str(ds.recipe.get("codec", "?")), files=len(paths), bytes=sum(os.path.getsize(p) for p in paths),
        rows=table.num_rows, read_mb_s=max(reads), decode_mb_s_per_core=dec.wall,
        decode_rows_s_per_core=dec.extra,
        encode_rows_s_per_core={c: e.wall for c, e in encs.items()},
        join_rows_s_per_core=max(w for w, _ in joins), join_library="duckdb",
        cpu={"decode_mb": dec.cpu, "join_rows": max(c for _, c in joins),
             **{f"encode_rows_{c}": e.cpu for c, e in encs.items()}},
        libraries={"decode": dec.library, **{f"encode_{c}": e.library for c, e in encs.items()}},
        rounds=rounds, notes=[f"cold read with O_DIRECT, {readers} files at a time; join keys {', '.join(cols)}; "
                              "decode and encode: the faster of pyarrow and DuckDB, one thread each"])


@dataclass
class Faster:
    library: str
    wall: float  # the best wall-clock rate
    cpu: float  # the best rate per CPU-second
    extra: float  # a second wall-clock rate of the same library (decode: rows/s)


def _faster(measured: dict[str, list[tuple[float, float, float]]]) -> Faster:
    """The library whose best rate per CPU-second is the highest (each: rounds of (wall rate, CPU rate, extra)),
    its best rates; per CPU-second, as a core to itself does it, the load of other users aside."""
    lib = max(measured, key=lambda k: max(c for _, c, _ in measured[k]))
    rounds = measured[lib]
    return Faster(lib, max(w for w, _, _ in rounds), max(c for _, c, _ in rounds), max(x for _, _, x in rounds))


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
