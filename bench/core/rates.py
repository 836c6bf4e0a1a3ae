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
from bench.core.records.engine_run import BoundRates, Phase, PhysicalBound

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
    # the library each rate is of (decode, encode_<codec>): the faster of pyarrow and DuckDB measured
    libraries: dict[str, str] = Field(default_factory=dict)
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


def _cpu_terms(rates: TableRates, data_bytes: int, rows_out: int, codec: str, join_rows: int,
               per_cpu_second: bool) -> tuple[float, float, float] | None:
    """(decode, encode, join) CPU-seconds at the wall-clock rates, or at the rates per CPU-second (None: not
    measured)."""
    if per_cpu_second:
        c = rates.cpu
        if not (c.get("decode_mb") and c.get(f"encode_rows_{codec}") and c.get("join_rows")):
            return None
        return data_bytes / 1e6 / c["decode_mb"], rows_out / c[f"encode_rows_{codec}"], join_rows / c["join_rows"]
    enc = rates.encode_rows_s_per_core[codec]
    return data_bytes / 1e6 / rates.decode_mb_s_per_core, rows_out / enc, join_rows / rates.join_rows_s_per_core


def physical_bound(rates: TableRates, cores: float, read_bytes: int, data_bytes: int, rows_out: int,
                   codec: str, join_rows: int = 0, covers: list[str] | None = None) -> PhysicalBound:
    """The least time (seconds) `read_bytes` read (all input: data and delete files), `data_bytes` of
    data files decoded, `rows_out` rows encoded with `codec` and `join_rows` rows built and probed can
    take on `cores` cores; with its terms.  Of the two ways to count the CPU (the wall-clock rates, as the
    machine delivered them when measured; the rates per CPU-second, a core to itself) the smaller: a bound
    holds whatever the load.  `covers`: the phases of the run that do this work (bench.core.rates.check_bound)."""
    cores = max(float(cores), 1e-9)
    if codec not in rates.encode_rows_s_per_core:
        raise ValueError(f"no encode rate for codec {codec!r} (measured: {sorted(rates.encode_rows_s_per_core)})")
    read_s = read_bytes / 1e6 / rates.read_mb_s
    wall = _cpu_terms(rates, data_bytes, rows_out, codec, join_rows, per_cpu_second=False)
    idle = _cpu_terms(rates, data_bytes, rows_out, codec, join_rows, per_cpu_second=True)
    assert wall is not None
    terms = min((t for t in (wall, idle) if t is not None), key=sum)
    decode_cpu, encode_cpu, join_cpu = terms
    cpu_s = sum(terms) / cores
    return PhysicalBound(
        seconds=max(read_s, cpu_s), idle_seconds=None if idle is None else max(read_s, sum(idle) / cores),
        limited_by="device read" if read_s >= cpu_s else "CPU",
        read_s=read_s, cpu_s=cpu_s, decode_cpu_s=decode_cpu, encode_cpu_s=encode_cpu, join_cpu_s=join_cpu,
        cores=cores, read_bytes=read_bytes, data_bytes=data_bytes, rows_out=rows_out, join_rows=join_rows,
        codec=codec, covers=list(covers or []),
        basis="rates per CPU-second" if terms is idle else "wall-clock rates",
        rates=BoundRates(read_mb_s=rates.read_mb_s, decode_mb_s_per_core=rates.decode_mb_s_per_core,
                         encode_rows_s_per_core=rates.encode_rows_s_per_core[codec],
                         join_rows_s_per_core=rates.join_rows_s_per_core, measured_at=rates.measured_at,
                         table=rates.table, libraries=dict(rates.libraries)))


def check_bound(bound: PhysicalBound | None, phases: list[Phase], duration_s: float | None) -> None:
    """The bound's self-check on the run that recorded it: the time of the phases it covers (`bound.covers`;
    none named: the whole compaction) below the bound means the bound is not one (its rates are not the
    fastest this machine reads and writes): said in `bound.beaten`, which the result and the report show."""
    if bound is None or bound.seconds is None or duration_s is None:
        return
    covered = [p for p in phases if p.name in bound.covers]
    bound.measured_s = sum(p.seconds for p in covered) if covered else duration_s
    what = f"its phases {', '.join(p.name for p in covered)}" if covered else "its compaction"
    if bound.measured_s < bound.seconds:
        bound.beaten = (f"BOUND BEATEN: {what} took {bound.measured_s:.2f} s, below the physical bound of "
                        f"{bound.seconds:.2f} s: the rates it was built from are not the fastest here")
