"""`bench selfcheck rates`: this machine's rates measured on a dataset's own files, stored where
arrow-floor finds them (bench.core.rates); a table that is not a dataset is a one-line error, exit 2."""

import re

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.rates import TableRates, load_rates, physical_bound
from tests.helpers import TINY, run_bench


def test_rates_of_a_dataset_and_the_bound_they_give(shared_warehouse):
    p = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", shared_warehouse)
    assert p.returncode == 0, p.stderr[-3000:]
    # the dataset this datagen made (the shared warehouse holds other tests' datasets too)
    table = re.search(r"dataset (bench\.smallfiles_\w+)", p.stderr + p.stdout).group(1)
    # a run killed while the table was out of the catalog (parked): the next datagen restores it
    load_sql_catalog(CatalogSettings.for_warehouse(str(shared_warehouse))).drop_table(table)
    p = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", shared_warehouse)
    assert p.returncode == 0, p.stderr[-3000:]
    p = run_bench("selfcheck", "rates", "--warehouse", shared_warehouse, "--table", table, "--files", "4",
                  "--rounds", "1")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith(f"{table} (uncompressed, 4 files") and "cold read" in p.stdout
    rates = load_rates(shared_warehouse, table)
    assert isinstance(rates, TableRates) and rates.files == 4 and rates.rows > 0
    assert rates.bytes > 0 and rates.input_codec == "uncompressed"
    for v in (rates.read_mb_s, rates.decode_mb_s_per_core, rates.join_rows_s_per_core,
              *rates.encode_rows_s_per_core.values(), *rates.cpu.values()):
        assert v > 0
    assert set(rates.encode_rows_s_per_core) == {"snappy", "zstd", "uncompressed"}
    b = physical_bound(rates, 2, rates.bytes, rates.bytes, rates.rows, "snappy")
    # the bound of the measured files: at least the cold read, at least the CPU work on 2 cores
    assert b.seconds >= b.read_s > 0 and b.seconds >= b.cpu_s > 0
    assert b.idle_seconds is not None and b.idle_seconds > 0

    p = run_bench("selfcheck", "rates", "--warehouse", shared_warehouse, "--table", "bench.nope")
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "no dataset 'nope'" in p.stderr
