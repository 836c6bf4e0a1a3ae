"""Bad input: one clear line, exit status 2, nothing written."""

import os
import socket
from pathlib import Path

import pytest

from tests.helpers import bench_env, run_bench


def _one_line_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr  # one line, not a traceback wall
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("args,needles", [
    (["run", "no-such-scenario"], ["unknown scenario", "bin-packing"]),
    (["run", "bin-packing", "--engines", "spark,flink"], ["unknown engine", "flink"]),
    (["run", "bin-packing", "--scale", "0"], ["--scale"]),
    (["run", "bin-packing", "--scale", "-1"], ["--scale"]),
    (["run", "bin-packing", "--memory-budget", "lots"], ["--memory-budget"]),
    (["run", "bin-packing", "--cache", "lukewarm"], ["--cache"]),
    (["run", "bin-packing", "--engines", "spark,spark"], ["twice"]),
    (["run", "bin-packing", "--instance-type", "m9.huge"], ["unknown instance type"]),
    (["datagen", "nope"], ["unknown scenario"]),
    (["run", "bin-packing", "--strategy", "sort"], ["--strategy sort", "no sort_order"]),
    (["run", "daily-recent", "--where", "event_date >>= 3"], ["--where", "cannot parse", "Iceberg expression"]),
    (["run", "bin-packing", "--where", "event_date >= '2025-12-29'"], ["--where", "needs a partitioned table"]),
    (["run", "bin-packing", "--storage-cap", "fast"], ["--storage-cap", "125MiB/s"]),
    (["run", "bin-packing", "--cores", "999"], ["--cores 999", "give 1 to"]),
    (["run", "bin-packing", "--stream-mode", "concurrent"], ["--stream-mode", "not a streaming scenario"]),
    (["run", "streaming-cdc", "--reps", "2"], ["streaming run", "no --reps"]),
    (["run", "deletes-high", "--scale", "0.00001", "--file-scale", "1"], ["--file-scale 1", "less than one row"]),
    (["datagen", "bin-packing", "--file-scale", "0"], ["--file-scale"]),
    (["sweep", "deletes-high", "--scale", "0.005", "--file-scales", "0.005"], ["--file-scales", "at least 2"]),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needles):
    if args[0] == "run":
        args = [*args, "--results-dir", tmp_path / "results"]
    p = run_bench(*args, "--warehouse", tmp_path / "wh")
    _one_line_error(p, *needles)
    assert not (tmp_path / "results").exists() and not (tmp_path / "wh").exists()


def test_selfcheck_telemetry_bad_work_dir_is_one_line(tmp_path):
    """The lazily loaded `selfcheck telemetry` turns a UserError into one line and exit 2 like every command."""
    p = run_bench("selfcheck", "telemetry", "--work-dir", tmp_path / "nope")
    _one_line_error(p, "--work-dir", "is not a directory")


def test_a_scenario_asking_for_a_layout_its_table_cannot_have_is_one_line(tmp_path):
    src = (Path(__file__).resolve().parents[2] / "scenarios" / "bin-packing.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(src + "rewrite: {strategy: zorder}\n")
    p = run_bench("run", bad, "--results-dir", tmp_path / "results", "--warehouse", tmp_path / "wh")
    _one_line_error(p, "invalid scenario file", "rewrite", "zorder_columns")


def test_unwritable_results_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores permission bits: use a path under a file instead
            target = tmp_path / "a-file"
            target.write_text("x")
            target = target / "results"
        else:
            target = ro / "results"
        p = run_bench("run", "bin-packing", "--results-dir", target, "--warehouse", tmp_path / "wh")
        _one_line_error(p, "cannot be written", "--results-dir")
        assert not (tmp_path / "wh").exists()
    finally:
        ro.chmod(0o700)


def test_catalog_uri_that_does_not_answer(tmp_path):
    uri = f"http://127.0.0.1:{_free_port()}"
    p = run_bench("run", "bin-packing", "--catalog-uri", uri, "--results-dir", tmp_path / "r",
                  "--warehouse", tmp_path / "wh")
    _one_line_error(p, uri, "does not answer")
    assert not (tmp_path / "r").exists()


def test_missing_java_is_reported(tmp_path):
    from tests.helpers import bench_env

    env = bench_env()
    env["PATH"] = str(Path(os.sys.executable).parent)  # the venv only: no java
    env.pop("JAVA_HOME", None)
    p = run_bench("run", "bin-packing", "--engines", "spark", "--results-dir", tmp_path / "r",
                  "--warehouse", tmp_path / "wh", env=env)
    _one_line_error(p, "java")
    assert not (tmp_path / "r").exists()


def test_list_shows_scenarios_and_engines():
    p = run_bench("list")
    assert p.returncode == 0, p.stderr
    for name in ("bin-packing", "bin-packing-zstd", "spark", "risingwave", "repark"):
        assert name in p.stdout
    # where each engine runs: the harness's environment, or its own (built or not, and how to build it)
    assert "runs in: the harness's environment" in p.stdout
    assert "runs in: own environment" in p.stdout


def test_a_scenario_file_with_bad_engine_options_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    src = (Path(__file__).resolve().parents[2] / "scenarios" / "bin-packing.yaml").read_text()
    bad.write_text(src.replace("    profile: local", "    profile: local\n    executor_cores: 4"))
    p = run_bench("run", bad, "--results-dir", tmp_path / "r", "--warehouse", tmp_path / "wh")
    _one_line_error(p, "invalid scenario file", "engines.spark", "executor_cores")
    assert not (tmp_path / "wh").exists()  # refused before any data is generated


# --- outputs that cannot be written, options checked before any work: one line, exit 2, nothing left ---------------
REFERENCE_RUN = Path(__file__).resolve().parents[2] / "docs" / "reference" / "20261202-075441-bin-packing"


def _under_a_file(tmp_path: Path, name: str) -> Path:
    """A path no one can write, root included: its parent is a file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    return blocker / name


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("args,needles", [
    (["export", REFERENCE_RUN, "--csv", "{bad}/runs.csv"], ["--csv", "cannot be written"]),
    (["export", REFERENCE_RUN, "--csv", "{ok}/runs.csv", "--parquet", "{bad}/runs.parquet"],
     ["--parquet", "cannot be written"]),
    (["export", REFERENCE_RUN, "--csv", "/proc/nope/runs.csv"], ["--csv", "/proc/nope"]),
    (["report", REFERENCE_RUN, "--out", "{bad}/report.html"], ["--out", "cannot be written"]),
    (["report", REFERENCE_RUN, "--out", "/proc/nope/report.html"], ["--out", "/proc/nope"]),
    (["report", REFERENCE_RUN, "--markdown", "{bad}/tables.md"], ["--markdown", "cannot be written"]),
    (["report", REFERENCE_RUN], ["reference run kept in the repository", "--out"]),
    (["run", "bin-packing", "--engines", "arrow-floor", "--results-dir", "/proc/nope", "--warehouse", "{ok}/wh"],
     ["results directory /proc/nope", "--results-dir"]),
    (["conformance", "--engines", "arrow-floor", "--results-dir", "{bad}/results", "--warehouse", "{ok}/wh"],
     ["results directory", "--results-dir"]),
    (["datagen", "bin-packing", "--file-scale", "1e-7", "--warehouse", "{ok}/wh"],
     ["--file-scale 0.0000001", "under the table's floor of 16", "0.00092"]),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, args, needles):
    ok = tmp_path / "ok"
    ok.mkdir()
    bad = _under_a_file(tmp_path, "out")
    before = REFERENCE_RUN.stat().st_mtime_ns, _files(REFERENCE_RUN)
    p = run_bench(*(str(a).format(ok=ok, bad=bad) for a in args), cwd=tmp_path)
    _one_line_error(p, *needles)
    assert _files(ok) == [] and (REFERENCE_RUN.stat().st_mtime_ns, _files(REFERENCE_RUN)) == before


def test_a_source_catalog_whose_sqlite_file_is_missing_is_refused_not_created(tmp_path):
    cfg = tmp_path / "cat.yaml"
    db = tmp_path / "catalog.db"
    cfg.write_text(f"type: sql\nuri: sqlite:///{db}\nwarehouse: file://{tmp_path / 'wh'}\n")
    p = run_bench("inspect", "--source-catalog", cfg, "--source-table", "shop.orders", cwd=tmp_path)
    _one_line_error(p, "--source-catalog", f"its SQL catalog {db} does not exist")
    assert not db.exists() and not (tmp_path / "wh").exists()


def test_setup_refuses_an_unknown_engine_before_fetching_anything(tmp_path):
    p = run_bench("setup", "--engines", "nosuch", env=bench_env(BENCH_CACHE_DIR=str(tmp_path / "cache")), fresh=True)
    _one_line_error(p, "unknown engine 'nosuch'")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("var,needles", [("bad", ["--var must be NAME=VALUE"]),
                                         ("no_such_variable=1", ["--var no_such_variable", "variables.tf"])])
def test_aws_up_refuses_a_bad_var_before_packing_the_checkout(tmp_path, var, needles):
    state = tmp_path / "state"
    p = run_bench("aws", "up", "--var", var, "--plan-from", tmp_path, env=bench_env(BENCH_AWS_STATE_DIR=str(state)),
                  fresh=True, cwd=tmp_path)
    _one_line_error(p, *needles)
    assert not state.exists()


def test_doctor_counts_a_jar_the_harness_and_an_engine_both_need_once(tmp_path):
    p = run_bench("doctor", "--engines", "spark", env=bench_env(BENCH_CACHE_DIR=str(tmp_path / "cache")), fresh=True)
    assert p.returncode == 1, p.stdout + p.stderr
    failed = {ln.split("]", 1)[1].split(":")[0].strip() for ln in p.stdout.splitlines() if "[FAIL]" in ln}
    assert failed >= {"jar iceberg-spark-runtime-4.1_2.13 1.12.0", "jar sqlite-jdbc 3.54.1.0"}, p.stdout
    assert p.stdout.strip().splitlines()[-1] == f"{len(failed)} problem(s) found", p.stdout
