"""This machine's rates, and the physical bound of a rewrite built from them.

`bench selfcheck rates` (bench.telemetry.rates) measures, on the Parquet files of a dataset table of the
warehouse (the files a run reads), the warehouse device's cold read throughput (O_DIRECT: the page cache
bypassed), Parquet decode throughput per core (the input's codec), Parquet encode throughput per core
(each output codec) and hash-join throughput per core, and stores them per table beside the warehouse's
dataset manifests (`<state dir>/datasets/<table>.rates.json`).

The bound is the least time the bytes and rows of one rewrite can take on `cores` cores at those rates,
the device and the CPUs overlapping perfectly: max(bytes read / read rate, CPU seconds / cores), where
the CPU seconds are decoding the input, encoding the output and (for deletes) building and probing one
hash table per delete scope.  The rates are wall-clock rates of one thread, as the machine delivers them
when measured (on a shared machine: with its load); `idle_seconds` is the same bound from the rates per
CPU-second (a core to itself).  Nothing else (planning, listing, writing back to the device) is in it: no
rewrite can be faster than it here, a floor should be close to it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from bench.core.fileio import write_atomic
from bench.core.results import BoundRates, PhysicalBound

RATES_SUFFIX = ".rates.json"


class TableRates(BaseModel):
    """Rates measured on one table's files (best of the rounds: the least a step takes here)."""

    table: str
    measured_at: str  # UTC, ISO 8601
    input_codec: str
    files: int  # data files measured
    bytes: int  # their size on disk
    rows: int
    read_mb_s: float  # cold read of the warehouse device, the whole device (several reads in flight)
    decode_mb_s_per_core: float  # on-disk MB decoded per second on one core (pyarrow, one thread)
    decode_rows_s_per_core: float
    encode_rows_s_per_core: dict[str, float] = Field(default_factory=dict)  # per output codec
    join_rows_s_per_core: float  # build + probe rows per second, one thread (the faster library measured)
    join_library: str = ""
    # the same per CPU-second of the measuring process (decode_mb, encode_rows_<codec>, join_rows): what a core
    # does when it is not shared, for the bound of an idle machine
    cpu: dict[str, float] = Field(default_factory=dict)
    rounds: int = 1
    notes: list[str] = Field(default_factory=list)


def rates_path(state_dir: str | Path, table: str) -> Path:
    return Path(state_dir) / "datasets" / f"{table.split('.')[-1]}{RATES_SUFFIX}"


def save_rates(state_dir: str | Path, rates: TableRates) -> Path:
    return write_atomic(rates_path(state_dir, rates.table), rates.model_dump_json(indent=1) + "\n")


def load_rates(state_dir: str | Path, table: str) -> TableRates | None:
    try:
        return TableRates.model_validate_json(rates_path(state_dir, table).read_text())
    except (OSError, ValueError):
        return None


def physical_bound(rates: TableRates, cores: float, read_bytes: int, data_bytes: int, rows_out: int,
                   codec: str, join_rows: int = 0) -> PhysicalBound:
    """The least time (seconds) `read_bytes` read (all input: data and delete files), `data_bytes` of
    data files decoded, `rows_out` rows encoded with `codec` and `join_rows` rows built and probed can
    take on `cores` cores; with its terms."""
    cores = max(float(cores), 1e-9)
    enc = rates.encode_rows_s_per_core.get(codec)
    if enc is None:
        raise ValueError(f"no encode rate for codec {codec!r} (measured: {sorted(rates.encode_rows_s_per_core)})")
    read_s = read_bytes / 1e6 / rates.read_mb_s
    decode_cpu = data_bytes / 1e6 / rates.decode_mb_s_per_core
    encode_cpu = rows_out / enc
    join_cpu = join_rows / rates.join_rows_s_per_core
    cpu_s = (decode_cpu + encode_cpu + join_cpu) / cores
    c = rates.cpu
    idle = None
    if c.get("decode_mb") and c.get(f"encode_rows_{codec}") and c.get("join_rows"):
        idle = max(read_s, (data_bytes / 1e6 / c["decode_mb"] + rows_out / c[f"encode_rows_{codec}"]
                            + join_rows / c["join_rows"]) / cores)
    return PhysicalBound(
        seconds=max(read_s, cpu_s), idle_seconds=idle, limited_by="device read" if read_s >= cpu_s else "CPU",
        read_s=read_s, cpu_s=cpu_s, decode_cpu_s=decode_cpu, encode_cpu_s=encode_cpu, join_cpu_s=join_cpu,
        cores=cores, read_bytes=read_bytes, data_bytes=data_bytes, rows_out=rows_out, join_rows=join_rows,
        codec=codec, rates=BoundRates(read_mb_s=rates.read_mb_s, decode_mb_s_per_core=rates.decode_mb_s_per_core,
                                      encode_rows_s_per_core=enc, join_rows_s_per_core=rates.join_rows_s_per_core,
                                      measured_at=rates.measured_at, table=rates.table))
