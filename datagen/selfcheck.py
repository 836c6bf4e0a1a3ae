"""`bench selfcheck datagen`: the generator's throughput against a plain pyarrow write of the same bytes.

Both sides run in one process tree on the same machine, one after the other, with the same parallelism
(one writer per core), writing to the same disk:
- datagen: the whole pipeline — generate rows, write Parquet with pyiceberg's writer (field ids and column
  statistics), compute each file's ground-truth checksum, commit every checkpoint to the SQLite catalog,
  write the dataset manifest;
- plain: `pyarrow.parquet.write_table` of the very same tables, generated beforehand (not timed),
  written from a pool of threads (pyarrow releases the GIL while writing).
The ratio is datagen throughput / plain throughput, the median over interleaved rounds paired one
to one (the min, max and best-vs-best are printed too); the goal is >= 0.8.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.settings import env_settings
from datagen import smallfiles
from datagen.dataset import prepare
from datagen.recipes import SmallFilesRecipe
from datagen.schema import make_rows, pools_for


def _recipe(files: int, file_mb: float, codec: str) -> SmallFilesRecipe:
    return SmallFilesRecipe.model_validate(dict(codec=codec, codec_level=5 if codec == "zstd" else None, files=files,
                                                total_bytes=int(files * file_mb * 1e6), files_per_commit=32,
                                                min_files=files))


def datagen_throughput(files: int = 24, file_mb: float = 11.0, codec: str = "uncompressed",
                       rounds: int = 3, seed: int = 42):
    workers = os.cpu_count() or 1
    base = Path(tempfile.mkdtemp(prefix="bench-selfcheck-", dir=env_settings().selfcheck_dir))
    recipe = _recipe(files, file_mb, codec)
    plans = smallfiles.plan_files(files, recipe.total_bytes, 1.0, files, seed)
    pools = pools_for(seed)
    tables = [make_rows(pools, seed, p.index, p.rows, p.key_offset) for p in plans]
    pq_codec = "none" if codec == "uncompressed" else codec
    yield (f"{files} files of ~{file_mb:g} MB ({codec}), {workers} writers, {rounds} rounds, "
           f"alternating, in {base}")
    gen_rates, plain_rates = [], []
    try:
        for r in range(rounds):
            wh = base / f"datagen-{r}"
            os.sync()  # each side starts with no dirty pages of the other's writes to flush
            t0 = time.perf_counter()
            settings = CatalogSettings(warehouse=str(wh))
            ds = prepare(load_sql_catalog(settings), settings, recipe, 1.0, seed, workers=workers)
            gen_s = time.perf_counter() - t0
            gen_rates.append(ds.bytes / gen_s)

            out = base / f"plain-{r}"
            out.mkdir()
            os.sync()
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as ex:
                list(ex.map(lambda it, out=out: pq.write_table(it[1], out / f"{it[0]}.parquet", compression=pq_codec,
                                                               compression_level=5 if codec == "zstd" else None),
                            enumerate(tables)))
            plain_s = time.perf_counter() - t0
            plain_bytes = sum(f.stat().st_size for f in out.iterdir())
            plain_rates.append(plain_bytes / plain_s)
            yield (f"round {r + 1}: datagen {ds.bytes / 1e6:.0f} MB in {gen_s:.2f} s = "
                   f"{ds.bytes / gen_s / 1e6:.0f} MB/s; plain pyarrow {plain_bytes / 1e6:.0f} MB in "
                   f"{plain_s:.2f} s = {plain_bytes / plain_s / 1e6:.0f} MB/s")
            shutil.rmtree(wh)
            shutil.rmtree(out)
        # pair by pair (round i of one against round i of the other), as engine speedups are, so
        # drift of a shared machine between rounds does not bias the ratio
        ratios = [g / p for g, p in zip(gen_rates, plain_rates)]
        ratio = statistics.median(ratios)
        yield (f"datagen / plain pyarrow throughput ratio: median {ratio:.2f} of {rounds} paired rounds "
               f"(min {min(ratios):.2f}, max {max(ratios):.2f}; best vs best "
               f"{max(gen_rates) / max(plain_rates):.2f}) (goal >= 0.80: {'met' if ratio >= 0.8 else 'NOT met'})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
