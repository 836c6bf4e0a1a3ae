"""The user's own table: `bench inspect` on a foreign table (made with plain pyiceberg in a catalog and
directory of its own), and `bench run` on its zero-copy clone with the original byte-identical after."""

import json

import pytest
from click.testing import CliRunner

from bench.cli import main
from tests.helpers import run_bench
from tests.runner.foreign import make_foreign_table, tree_hashes


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    return root, make_foreign_table(root / "src")


def test_inspect_describes_a_foreign_table_and_what_a_scenario_would_rewrite(foreign):
    root, cfg = foreign
    r = run_bench("inspect", "bin-packing", "--source-catalog", cfg, "--source-table", "shop.orders", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["table"] == "shop.orders" and d["snapshots"] == 4
    assert "4: amount decimal(12, 2) (optional)" in d["schema"]
    assert d["partition_spec"] == "placed_on: identity(placed_on)" and d["partitions"]["count"] == 3
    assert d["data_files"]["count"] == 12 and d["data_files"]["rows"] == 1200
    assert d["data_files"]["histogram"]["< 1 MiB"] == 12
    assert d["delete_files"]["position"]["count"] == 0 and d["delete_files"]["equality"]["count"] == 0
    assert d["scenario"]["small_data_files"] == 12 and d["scenario"]["partitions_with_two_or_more_small_files"] == 3
    cli = CliRunner()  # in-process: the text and the bad inputs
    text = cli.invoke(main, ["inspect", "--source-catalog", str(cfg), "--source-table", "shop.orders"])
    assert text.exit_code == 0 and "partition spec: placed_on: identity(placed_on)" in text.output, text.output
    for args, says in ((["--source-table", "shop.nope"], "not found"),
                       (["--source-table", "shop.orders", "--source-snapshot", "5"], "not a snapshot")):
        bad = cli.invoke(main, ["inspect", "--source-catalog", str(cfg), *args])
        assert bad.exit_code == 2 and says in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
    missing = cli.invoke(main, ["inspect", "--source-catalog", str(root / "none.yaml"), "--source-table", "shop.orders"])
    assert missing.exit_code == 2 and "cannot read it" in missing.output
