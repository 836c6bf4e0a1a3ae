"""The user's own table: `bench inspect` on a foreign table (made with plain pyiceberg in a catalog and
directory of its own, with position and equality deletes committed by Iceberg's Java library), and
`bench run` of every engine on its zero-copy clone with the original byte-identical after."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import main
from tests.core.test_s3_warehouse import (  # noqa: F401 - s3_endpoint: its S3 server
    BUCKET,
    SECRET,
    _client,
    _env,
    _keys,
    _objects,
    s3_endpoint,
)
from tests.helpers import run_bench
from tests.runner.foreign import (
    Writer,
    add_deletes,
    add_refs,
    duckdb_deletes,
    make_foreign_table,
    tree_hashes,
)


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    """shop.orders: 12 data files over 3 day partitions, then 44 rows deleted by position (2 files) and
    34 by equality (1 file, on the last day): 1,122 live rows."""
    root = tmp_path_factory.mktemp("foreign")
    cfg = make_foreign_table(root / "src")
    assert add_deletes(root / "src") == {"position": 44, "equality": 34}
    add_refs(root / "src")  # tag audited at the 2nd snapshot, branch backfill at the 3rd: carried by the clone
    return root, cfg


def test_inspect_describes_a_foreign_table_and_what_a_scenario_would_rewrite(foreign):
    root, cfg = foreign
    r = run_bench("inspect", "bin-packing", "--source-catalog", cfg, "--source-table", "shop.orders", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["table"] == "shop.orders" and d["snapshots"] == 5 and d["snapshot"]["operation"] == "delete"
    assert "4: amount decimal(12, 2) (optional)" in d["schema"]
    assert d["partition_spec"] == "placed_on: identity(placed_on)" and d["partitions"]["count"] == 3
    assert d["data_files"]["count"] == 12 and d["data_files"]["rows"] == 1200
    assert d["data_files"]["histogram"]["< 1 MiB"] == 12
    assert d["delete_files"]["position"]["count"] == 2 and d["delete_files"]["equality"]["count"] == 1
    assert d["delete_files"]["position"]["dangling"] == 0 and d["manifests"]["by_content"] == {"data": 4, "deletes": 1}
    assert d["scenario"]["small_data_files"] == 12 and d["scenario"]["partitions_with_two_or_more_small_files"] == 3
    assert d["scenario"]["delete_files"] == 3
    touched = [t["case"] for t in d["touches"]]  # the conformance cases its shape touches (cases.yaml `touches`)
    assert {"identity-date", "primitive-types", "equality-delete-sequence",
            "position-deletes-branch-tag"} <= set(touched)
    assert d["shape"]["partition-identity-date"] == "placed_on" and d["shape"]["equality-deletes"] == "order_id"
    cli = CliRunner()  # in-process: the text and the bad inputs
    text = cli.invoke(main, ["inspect", "--source-catalog", str(cfg), "--source-table", "shop.orders"])
    assert text.exit_code == 0 and "partition spec: placed_on: identity(placed_on)" in text.output, text.output
    assert "\n  identity-date  " in text.output
    assert "snapshot expiry: the pinned snapshot is safe for the run (" in text.output  # a fresh table, 5 days
    assert f"conformance cases its shape touches: {len(touched)} " in text.output
    for args, says in ((["--source-table", "shop.nope"], "not found"),
                       (["--source-table", "shop.orders", "--source-snapshot", "5"], "not a snapshot")):
        bad = cli.invoke(main, ["inspect", "--source-catalog", str(cfg), *args])
        assert bad.exit_code == 2 and says in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
    _expected_time_and_memory_from_the_fits(cli, root, cfg, d["data_files"]["logical_bytes"])
    missing = cli.invoke(main, ["inspect", "--source-catalog", str(root / "none.yaml"), "--source-table", "x.y"])
    assert missing.exit_code == 2 and "cannot read it" in missing.output
    for args, says in ((["--source-table", "shop.nope"], "not found"), (["--scale", "0.1"], "--scale: shape the"),
                       (["--source-snapshot", "5"], "not a snapshot")):  # bench run: the same, before anything runs
        bad = cli.invoke(main, ["run", "bin-packing", "--engines", "arrow-floor", "--source-catalog", str(cfg),
                                "--source-table", "shop.orders", *args, "--results-dir", str(root / "nores")])
        assert bad.exit_code == 2 and says in bad.output, bad.output
    assert not (root / "nores").exists()


def _expected_time_and_memory_from_the_fits(cli, root, cfg, logical_bytes):
    """With SCENARIO, `bench inspect` gives each engine's expected time and peak memory on this table from the
    latest fitted sweep (and frontier) of the scenario, labelled a model; without one it says so."""
    from bench.core.campaign import FrontierPoint, FrontierSummary, Point, SweepSummary, write_summary
    from bench.core.fit import fit_line
    from bench.core.spread import Spread

    args = ["inspect", "bin-packing", "--source-catalog", str(cfg), "--source-table", "shop.orders", "--from"]
    (root / "nofits").mkdir()
    none = cli.invoke(main, [*args, str(root / "nofits")])
    assert none.exit_code == 0 and "expected time and memory: no fitted model of bin-packing under" in none.output \
        and "run bench sweep bin-packing --scales ... first" in none.output, none.output
    xs = [0.2, 0.4, 1.0, 1.0]
    write_summary(root / "fits" / "sw", SweepSummary(
        sweep_id="sw1", scenario="bin-packing", scales=[0.001, 0.002, 0.005], reps=1, engines=["risingwave"],
        state="complete", started_at="2026-11-23T00:00:00Z", cores=2,
        time_fits={"risingwave": fit_line(xs, [1 + 4 * x for x in xs], "duration_s", "s")},
        memory_fits={"risingwave": fit_line(xs, [2e8 + 1e9 * x for x in xs], "peak_rss_bytes", "bytes")},
        points=[Point(engine="risingwave", scale=sc, gb=x, disk_gb=x, runs=1, verified=1, duration_s=Spread(median=1))
                for sc, x in ((0.001, 0.2), (0.002, 0.4), (0.005, 1.0))]))
    write_summary(root / "fits" / "fr", FrontierSummary(
        frontier_id="fr1", scenario="bin-packing", scales=[0.005], engines=["risingwave"], state="complete",
        started_at="2026-11-23T01:00:00Z",
        points=[FrontierPoint(engine="risingwave", scale=0.005, gb=1.0, lowest_bytes=0, ceiling_bytes=0,
                              precision_bytes=0, min_budget_bytes=int(8e8))]))
    d = json.loads(cli.invoke(main, [*args, str(root / "fits"), "--json"]).output)["expected"]
    gb = logical_bytes / 1e9
    rw = d["engines"]["risingwave"]
    assert d["model"].startswith("sweep sw1 of bin-packing") and "frontier fr1" in d["model"] and "MODEL" in d["note"]
    assert rw["seconds"] == pytest.approx(1 + 4 * gb) and rw["peak_rss_bytes"] == pytest.approx(2e8 + 1e9 * gb)
    assert rw["min_budget_bytes"] == pytest.approx(8e8 * gb) and rw["extrapolated"] is True  # 0.2-1 GB measured
    text = cli.invoke(main, [*args, str(root / "fits")]).output
    assert "a MODEL from sweep sw1 of bin-packing" in text and "  risingwave   ~1.0 s" in text, text
    assert "extrapolated beyond the measured 0.2-1 GB" in text


def test_every_engine_on_the_clone_of_a_live_table_applies_the_deletes_and_leaves_the_pin_byte_identical(foreign):
    """deletes-standard (delete compaction: Spark's delete-file-threshold, RisingWave's files_with_deletes)
    on the clone of a table with position and equality deletes, a tag and a branch, while a writer keeps appending
    to it (every ~1 s): Spark, RisingWave and the floor, each verified against the ground truth of the pinned
    snapshot read with the deletes applied; others' commits recorded on every result, the refs carried and
    checked; every file of the pinned snapshot (all that was there before) byte-identical afterwards."""
    from bench.core.source import SourceRef, load_source

    root, cfg = foreign
    before = tree_hashes(cfg.parent)
    pinned = load_source(SourceRef(catalog_file=str(cfg), table="shop.orders")).current_snapshot().snapshot_id
    with Writer(cfg.parent, every_s=1.0) as writer:  # pinned explicitly: the writer commits from the start
        r = run_bench("run", "deletes-standard", "--source-catalog", cfg, "--source-table", "shop.orders",
                      "--source-snapshot", pinned, "--engines", "spark,risingwave,arrow-floor", "--warehouse",
                      root / "wh", "--results-dir", root / "res", "--run-id", "own", "--cache", "warm")
    assert r.returncode == 0, r.stdout + r.stderr
    assert writer.commits >= 3 and not writer.errors, writer.errors
    print(f"writer: {writer.commits} commits, {writer.cpu_s:.1f} s CPU")
    after = tree_hashes(cfg.parent)  # the catalog's database changes with the writer's commits, nothing else
    assert {k: v for k, v in before.items() if k != "catalog.db"} == \
        {k: after.get(k) for k in before if k != "catalog.db"}
    results = [json.loads(p.read_text()) for p in sorted((root / "res" / "own").glob("deletes-standard--*.json"))]
    assert [x["engine"] for x in results] == ["arrow-floor", "risingwave", "spark"]
    for x in results:
        assert x["status"] == "ok" and x["verified"], x["verification"]["differences"]
        src = x["source"]
        assert src["table"] == "shop.orders" and src["unchanged"] is True and src["snapshot_id"] == pinned
        # the pin: metadata file, 3 manifest lists (main, the tag's, the branch's), 5 manifests, 15 live files
        assert src["files"] == 24 and src["fingerprint_before"] and not src["gone"]
        assert len(src["commits_by_others"]) >= 1 and {c["operation"] for c in src["commits_by_others"]} == {"append"}
        assert pinned not in {c["snapshot_id"] for c in src["commits_by_others"]}
        refs = {ref["name"]: ref for ref in src["refs"]}
        assert set(refs) == {"main", "audited", "backfill"}
        for name in ("audited", "backfill"):
            assert refs[name]["after_snapshot_id"] == refs[name]["snapshot_id"] != pinned
        moved = x["commits"] == "table"  # main advanced by a compaction that committed, in place otherwise
        assert (refs["main"]["after_snapshot_id"] != pinned) == moved and refs["main"]["snapshot_id"] == pinned
        checks = {c["name"]: c["ok"] for c in x["verification"]["checks"]}
        assert checks["source_unchanged"] and checks["refs_kept"] and checks["content_duckdb_merge_on_read"]
        assert checks["input_identical"] and checks["no_live_delete_files"] and x["after"]["delete_files"] == 0
        assert x["before"]["rows"] == x["after"]["rows"] == 1122 and x["files_in"] == 15  # 12 data + 3 delete files
        assert x["before"]["position_delete_files"] == 2 and x["before"]["equality_delete_files"] == 1
    assert {x["engine"]: x["files_out"] for x in results if x["engine"] != "arrow-floor"} == \
        {"risingwave": 3, "spark": 3}  # one file per day
    clone = results[0]["source"]["clone"].split(".")[-1]
    manifest = json.loads((root / "wh" / "datasets" / f"{clone}.json").read_text())
    truth = manifest["ground_truth"]  # pyiceberg cannot apply equality deletes: DuckDB's two code paths
    assert truth["computed_by"] == "read: duckdb-iceberg + duckdb-merge-on-read" and truth["rows"] == 1122
    assert truth["rows_written"] == 1200 and truth["equality_delete_files"] == 1
    # the clone's location holds only its own metadata after the restore; the source's files are referenced
    assert [p.name for p in (root / "wh" / "bench" / clone).rglob("*") if p.is_file()][0].endswith(".metadata.json")
    assert len([p for p in (root / "wh" / "bench" / clone).rglob("*") if p.is_file()]) == 1
    assert all(f.startswith(f"file://{cfg.parent}/") for f in manifest["live_files"])
    out = r.stderr + r.stdout
    assert "refs carried: audited, backfill" in out and f"the pinned snapshot {pinned}" in out
    assert "others committed" in out
    rep = CliRunner().invoke(main, ["report", str(root / "res" / "own"), "--out", str(root / "own.html")])
    page = (root / "own.html").read_text()
    assert rep.exit_code == 0 and "your own table shop.orders" in page and 'data-table="published"' not in page, \
        rep.output
    assert "data-source-header" in page and f"snapshot {pinned}" in page and "scale 0" not in page
    assert "tag audited" in page and "branch backfill" in page and "committed by others" in page


def test_frontier_on_the_clone(foreign):
    """`bench frontier` takes --source-*: its probes run on the clone (scale 0, the source checked unchanged
    after each), the summary names the table and fits nothing against size.  (`bench tune` passes the same
    options to the same runs: only its refusal of --scale is run here, for the suite's time.)"""
    from bench.core.source import SourceRef, load_source

    root, cfg = foreign
    tbl = load_source(SourceRef(catalog_file=str(cfg), table="shop.orders"))
    deletes = max((s for s in tbl.metadata.snapshots if s.summary and s.summary.operation.value != "append"),
                  key=lambda s: s.sequence_number or 0)  # the table as the fixture made it, before others' appends
    src = ["--source-catalog", cfg, "--source-table", "shop.orders", "--source-snapshot", deletes.snapshot_id,
           "--warehouse", root / "wh"]
    fr = run_bench("frontier", "deletes-standard", *src, "--engines", "arrow-floor", "--floor", "256M", "--ceiling",
                   "512M", "--precision", "512M", "--results-dir", root / "fr", "--run-id", "fr")
    assert fr.returncode == 0, fr.stdout + fr.stderr
    s = json.loads((root / "fr" / "fr" / "frontier.json").read_text())
    assert s["source_table"] == "shop.orders" and s["predictions"] == [] and s["fits"] == {}
    point = s["points"][0]
    assert point["min_budget_bytes"] == 256 * 2**20 and len(point["probes"]) == 2  # the ceiling, then the floor
    runs = [json.loads(p.read_text()) for p in (root / "fr" / "fr").rglob("deletes-standard--*.json")]
    assert len(runs) == 2 and all(r["source"]["unchanged"] and r["verified"] and r["scale"] == 0 for r in runs)
    # each result records the source's shape and the conformance cases it touches (the report's note)
    assert all("equality-delete-sequence" in [t["case"] for t in r["source"]["touches"]] for r in runs)
    for cmd in (["frontier", "deletes-standard", "--scale", "0.1"], ["tune", "risingwave", "deletes-standard",
                                                                     "--scale", "0.1"]):
        bad = CliRunner().invoke(main, [*cmd, "--source-catalog", str(cfg), "--source-table", "shop.orders",
                                        "--results-dir", str(root / "nores")])
        assert bad.exit_code == 2 and "with --source-table your table is the input" in bad.output, bad.output
    assert not (root / "nores").exists()


def test_the_pin_reads_only_the_pinned_snapshot_and_tells_others_commits_from_changes(tmp_path):
    """A source with 30 snapshots: the pin opens one manifest list (the pinned snapshot's, not the other 29) and
    only its manifests.  Then: others' appends are recorded, not differences; a pinned data file rewritten in place
    is a change, named; a pinned file deleted (the owner's maintenance) is gone, not a change; a changed source
    ends a run in one line, exit 1."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from bench.core.errors import RunFailed, UserError, one_line_errors
    from bench.core.pin import observe, pin_source
    from bench.core.source import SourceRef, check_disjoint, fingerprint_source, load_source
    from bench.core.uri import local_path
    from tests.runner.foreign import Writer, make_foreign_table

    cfg = make_foreign_table(tmp_path / "other", commits=30, rows=3)
    ref = SourceRef(catalog_file=str(cfg), table="shop.orders")
    tbl = load_source(ref)
    assert len(tbl.metadata.snapshots) == 30
    opened: list[str] = []
    new_input = PyArrowFileIO.new_input

    def counting(self, location):
        opened.append(location)
        return new_input(self, location)

    PyArrowFileIO.new_input = counting  # type: ignore[method-assign]
    try:
        pin = pin_source(tbl, None)
    finally:
        PyArrowFileIO.new_input = new_input  # type: ignore[method-assign]
    current = tbl.current_snapshot()
    manifests = {m.manifest_path for m in current.manifests(tbl.io)}
    assert [p for p in opened if "snap-" in p] == [current.manifest_list]  # one manifest list of 30
    assert set(opened) - {current.manifest_list} == manifests and len(manifests) == 30
    assert len(pin.files) == 1 + 1 + 30 + len([p for p in pin.files if p.endswith(".parquet")])
    writer = Writer(tmp_path / "other")
    writer.thread.start()
    while writer.commits < 2 and not writer.errors:
        writer.stop.wait(0.1)
    writer.__exit__()
    ob = observe(pin, load_source(ref), str(tmp_path / "wh"))
    assert not ob.failures and not ob.gone and len(ob.others) >= 2 and ob.others[0].operation == "append"
    assert ob.refs_moved and ob.refs_moved[0].startswith(f"branch main: {current.snapshot_id} -> ")
    mine = observe(pin, load_source(ref), str(tmp_path / "other" / "lake"))  # as if written from the clone's place
    assert len(mine.harness_commits) == len(ob.others) and mine.failures[0].startswith(
        f"snapshot {ob.others[0].snapshot_id} committed to the source from the harness's clone location")
    data = sorted(p for p in pin.files if p.endswith(".parquet"))
    first = Path(local_path(data[0]))
    raw = bytearray(first.read_bytes())
    raw[4] ^= 0xFF
    first.write_bytes(bytes(raw))  # a data file of the pin rewritten in place, same size
    Path(local_path(data[1])).unlink()  # another removed by the owner
    ob = observe(pin, load_source(ref), str(tmp_path / "wh"))
    assert len(ob.changed) == 1 and ob.changed[0].startswith(f"{data[0]}: size ") and "content changed" in ob.changed[0]
    assert ob.gone == [data[1]]
    assert fingerprint_source(ref).snapshot_id != pin.snapshot_id  # a new pin: the writer's head
    # the owner's expiry: a 60 s max age and a 120 s run could remove the pin (no longer main's head); a tag holds it
    from bench.runner.expiry import expiry_risk

    with load_source(ref).transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "60000"})
    risk = expiry_risk(load_source(ref), current.snapshot_id, 120.0)
    assert "becomes expirable in" in risk["warning"] and "expected 120 s" in risk["warning"], risk
    assert not expiry_risk(load_source(ref), current.snapshot_id, 10.0)["warning"]
    load_source(ref).manage_snapshots().create_tag(current.snapshot_id, "held").commit()
    assert expiry_risk(load_source(ref), current.snapshot_id, 120.0)["retained_by"] == ["held"]

    @one_line_errors
    def failing():
        raise RunFailed("THE SOURCE TABLE shop.orders CHANGED during the run (1 difference(s), e.g. x)")

    with pytest.raises(SystemExit) as ex:
        failing()
    assert ex.value.code == 1
    check_disjoint("file:///w/bench/clone_a", ["file:///w/bench/clone_ab/x.parquet", "/lake/t/x.parquet"])
    with pytest.raises(UserError, match="lie under the clone's location"):  # a restore would delete them
        check_disjoint("file:///w/bench/clone_a", ["/w/bench/clone_a/data/x.parquet"])
    with pytest.raises(UserError, match="cannot read it"):
        fingerprint_source(SourceRef(catalog_file=str(tmp_path / "none.yaml"), table="shop.orders"))


def test_a_renamed_column_reads_by_field_id_and_a_table_no_reader_can_read_is_one_line(tmp_path):
    """A column renamed after its files were written: every reader resolves it by field id, so they agree on a
    ground truth.  A data file gone from disk: no reader can read the snapshot, nor the reference reader (here
    without catalog settings to open it with), and that alone is refused, in one line, before any engine."""
    from pathlib import Path

    from bench.core.errors import UserError
    from bench.core.source import SourceRef, load_source
    from bench.core.table.entries import live_files
    from bench.core.uri import local_path
    from bench.runner.source import ground_truth
    from tests.runner.foreign import make_foreign_table

    cfg = make_foreign_table(tmp_path / "renamed", commits=1, rows=20)
    tbl = load_source(SourceRef(catalog_file=str(cfg), table="shop.orders"))
    with tbl.update_schema() as update:
        update.rename_column("note", "remark")
    tbl = load_source(SourceRef(catalog_file=str(cfg), table="shop.orders"))
    gt = ground_truth(tbl, tbl.current_snapshot().snapshot_id, None)
    assert gt.rows == 20 and gt.computed_by == "read: pyiceberg-scan + duckdb-read-parquet" and not gt.findings
    Path(local_path(live_files(tbl).data[0].data_file.file_path)).unlink()
    with pytest.raises(UserError, match="cannot read shop.orders") as e:
        ground_truth(tbl, tbl.current_snapshot().snapshot_id, None)
    assert "\n" not in str(e.value) and "reference reader (Iceberg's Java library) cannot read it either" \
        in str(e.value) and "No files found" in str(e.value), str(e.value)


def _bucket_hashes(endpoint: str, prefix: str) -> dict[str, str]:
    import hashlib

    client = _client(endpoint)
    return {k: hashlib.sha256(client.get_object(Bucket=BUCKET, Key=k)["Body"].read()).hexdigest()
            for k in _keys(endpoint, prefix)}


def test_a_source_on_s3_is_cloned_in_the_bucket_compacted_and_left_unchanged(s3_endpoint, tmp_path, monkeypatch):  # noqa: F811
    """A foreign table on the local S3 server behind a SQL catalog (pyiceberg's SqlCatalog; its catalog file takes
    the S3 settings from the environment, `${VAR}`), with position deletes written by DuckDB: its clone in another
    prefix of the bucket, compacted by Spark (Iceberg's S3FileIO through the REST catalog) and by RisingWave's engine
    on S3, each verified; every object of the source as the server lists it (size, ETag, last modified) and its
    content unchanged.  The floor (it reads local files only) and a local warehouse for an S3 source are refused
    in one line."""
    env = _env(s3_endpoint, tmp_path / "state")
    for k, v in env.items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)
    io = {"s3.endpoint": "${AWS_ENDPOINT_URL_S3}", "s3.region": "${AWS_REGION}",
          "s3.access-key-id": "${AWS_ACCESS_KEY_ID}", "s3.secret-access-key": "${AWS_SECRET_ACCESS_KEY}"}
    src = tmp_path / "src"
    cfg = make_foreign_table(src, commits=3, rows=100, warehouse=f"s3://{BUCKET}/shop", io=io)
    duckdb_deletes(src, f"s3://{BUCKET}/shop", "order_id % 11 = 0")
    assert SECRET not in cfg.read_text()
    listed, objects, db = _objects(s3_endpoint, "shop/"), _bucket_hashes(s3_endpoint, "shop/"), tree_hashes(src)
    assert len(listed) >= 3 * 3 + 1 and set(listed) == set(objects)  # 3 days x 3 commits of data, deletes, metadata
    cli = CliRunner()
    for engines, warehouse, says in (("arrow-floor", f"s3://{BUCKET}/wh", "arrow-floor reads local files only"),
                                     ("risingwave", str(tmp_path / "local"), "lives on S3 (s3://bench-wh/shop/")):
        with monkeypatch.context() as m:
            m.setenv("BENCH_STATE_DIR", str(tmp_path / "state"))
            bad = cli.invoke(main, ["run", "deletes-standard", "--source-catalog", str(cfg), "--source-table",
                                    "shop.orders", "--engines", engines, "--warehouse", warehouse,
                                    "--results-dir", str(tmp_path / "nores")])
        assert bad.exit_code == 2 and says in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
    r = run_bench("run", "deletes-standard", "--source-catalog", cfg, "--source-table", "shop.orders",
                  "--engines", "spark,risingwave", "--warehouse", f"s3://{BUCKET}/wh", "--results-dir",
                  tmp_path / "res", "--run-id", "s3", "--storage-cap", "64MiB/s", env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _objects(s3_endpoint, "shop/") == listed and _bucket_hashes(s3_endpoint, "shop/") == objects
    assert tree_hashes(src) == db
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "res" / "s3").glob("deletes-standard--*.json"))]
    assert [x["engine"] for x in results] == ["risingwave", "spark"] and not (tmp_path / "nores").exists()
    for x in results:
        assert x["status"] == "ok" and x["verified"], x["verification"]["differences"]
        assert x["source"]["unchanged"] is True and x["environment"]["warehouse"]["storage"] == "s3"
        assert x["before"]["rows"] == x["after"]["rows"] == 300 - len(range(0, 300, 11))
        assert x["before"]["position_delete_files"] >= 1 and x["after"]["delete_files"] == 0
        # --storage-cap on an S3 server on the loopback: its traffic shaped per direction, counted by the shaper
        cap = x["storage_cap"]
        assert "tc htb" in cap["mechanism"] and cap["read_bytes_per_s"] == 64 * 2**20
        assert cap["device_read_bytes"] >= x["bytes_in"] and cap["device_write_bytes"] >= x["bytes_out"] > 0
    spark = results[1]
    assert spark["engine_settings"]["spark_conf"]["spark.sql.catalog.bench.io-impl"] == \
        "org.apache.iceberg.aws.s3.S3FileIO"
    written = [k for k in _keys(s3_endpoint, "wh/") if k.endswith(".parquet")]
    # new files only under the clone's prefix
    assert written and all("/clone_" in k for k in written), [k for k in written if "/clone_" not in k]
    clone = results[0]["source"]["clone"].split(".")[-1]
    state = next(p for p in (tmp_path / "state").iterdir() if p.is_dir())
    manifest = json.loads((state / "datasets" / f"{clone}.json").read_text())
    assert all(f.startswith(f"s3://{BUCKET}/shop/") for f in manifest["live_files"])  # referenced in place


def test_pinned_files_gone_leave_the_later_runs_not_verified_saying_which_and_when(tmp_path):
    """The owner's maintenance mid-run (bench.runner.source_watch, on the run's context): the engine run during
    which pinned files went is not verified, says which and between which times, and every later run is recorded
    not run with the same line; the engine card says why in one line."""
    from types import SimpleNamespace

    from bench.core.pin import SourceFingerprint, SourceWatch
    from bench.core.records.scenario import SourceRecord
    from bench.core.records.verification import Check
    from bench.core.results import RunResult
    from bench.core.source import SourceRef
    from bench.runner.source_watch import check_source, record_gone
    from reports.source import why_not_verified

    kept, gone = tmp_path / "kept.parquet", tmp_path / "gone.parquet"
    kept.write_bytes(b"PAR1 kept")
    gone.write_bytes(b"PAR1 gone")
    cfg = make_foreign_table(tmp_path / "src", commits=1, rows=3)
    pin = SourceFingerprint(snapshot_id=1, files={str(kept): 9, str(gone): 9}, taken_unix=1.0e9)
    from bench.core.pin import sample_hash

    pin.samples = {p: sample_hash(p)[1] for p in pin.files}
    from bench.core.source import load_source

    pin.snapshot_ids = [s.snapshot_id for s in load_source(SourceRef(catalog_file=str(cfg), table="shop.orders"))
                        .metadata.snapshots]
    ctx = SimpleNamespace(source=SourceRef(catalog_file=str(cfg), table="shop.orders"), source_before=pin,
                          source_watch=SourceWatch(seen_unix=pin.taken_unix),
                          dataset=SimpleNamespace(location=str(tmp_path / "wh" / "clone")))

    def result(engine):
        return RunResult(run_id="x", scenario="deletes-standard", engine=engine, engine_name=engine,
                         scale=0, seed=0, status="ok",
                         verified=True, source=SourceRecord(table="shop.orders", snapshot_id=1, files=2))

    first = check_source(ctx, result("spark"))  # type: ignore[arg-type]
    assert first.verified and first.source.unchanged and not first.source.gone
    gone.unlink()
    second = result("risingwave")
    second = second.model_copy(update={"verification": second.verification.with_checks(
        Check(name="rows", ok=True, message="same rows"))})
    second = check_source(ctx, second)  # type: ignore[arg-type]
    assert not second.verified and second.source.gone == [str(gone)] and second.source.unchanged is False
    assert second.source.gone_between[0] <= second.source.gone_between[1]
    said = second.error or ""
    assert said.startswith("not verified: 1 of the 2 files of the pinned snapshot 1 of shop.orders disappeared "
                           "from the source between ") and "the table owner's maintenance" in said and str(gone) in said
    third = record_gone(ctx, result("arrow-floor"))  # type: ignore[arg-type]
    assert third.status == "failed" and not third.verified and third.error == "not run: " + said[len("not verified: "):]
    assert why_not_verified([first, second]) == " ".join(said.split())[:200] and why_not_verified([first]) == ""
