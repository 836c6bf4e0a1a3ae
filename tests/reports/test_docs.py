"""The docs: their measured tables are what the reference runs render, the user guide names every
option of the CLI, and the README stays a short entry page.  Tiny and fast: no engine runs."""

from __future__ import annotations

import re
import shutil

import click
import pytest
from click.testing import CliRunner

from bench.cli import main
from bench.core.errors import UserError
from reports.markdown import BLOCK, render_markdown, update_pages
from tests.helpers import ROOT

REFERENCE = ROOT / "docs" / "reference"


def test_docs_pages_are_what_their_reference_runs_render():
    diffs = update_pages(ROOT, check=True)
    assert not diffs, ("a docs page differs from what its reference runs render; run `make docs` "
                       "(or `make reference` for new runs):\n" + "\n".join(diffs))


def test_results_page_quotes_reference_runs_only():
    page = (ROOT / "docs" / "results.md").read_text()
    blocks = list(BLOCK.finditer(page))
    assert blocks, "docs/results.md has no generated block"
    outside = BLOCK.sub("", page)
    # outside the generated blocks, no measured time or speedup may stand as prose
    assert not re.search(r"\b\d+(\.\d+)?\s?(s|×|x)\b(?![a-z])", outside.replace("0.005", "")), \
        "a number like a measured time or ratio stands outside the generated blocks of docs/results.md"
    for b in blocks:
        body = b.group("body")
        # a block of one committing engine against the floor has no headline: its statement is engine, floor, bound;
        # a streaming run's is its totals per engine, a conformance run's its matrix
        statements = ("**Headline:", "Engine, floor and bound:", "| engine | verified | safe cycles |",
                      "| case | covers |", "| preset (batch, interval, roll at) |", "| engine | file scale |",
                      "Runs that ended without a result:")
        assert any(s in body for s in statements) and "Run `" in body, \
            f"block {b.group('src')} names no run, headline, floor, streaming totals or matrix"


def test_reference_runs_are_small_and_complete():
    runs = [d for d in REFERENCE.iterdir() if d.is_dir() and d.name != "plan"]
    assert runs
    for d in runs:
        files = list(d.iterdir())
        # a run, a conformance run, or a count sweep's summary (its runs are reference runs of their own)
        assert any((d / f).exists() for f in ("run.json", "conformance.json", "counts.json")), d
        assert all(f.suffix == ".json" for f in files), f"{d}: only result JSON is kept, not {files}"
        assert sum(f.stat().st_size for f in files) < 1_000_000, f"{d} is too large for the repository"


def test_a_changed_number_is_caught_and_rewritten(tmp_path):
    run = next(d for d in sorted(REFERENCE.iterdir()) if d.is_dir())
    shutil.copytree(run, tmp_path / "docs" / "reference" / run.name)
    page = tmp_path / "docs" / "page.md"
    page.write_text(f"# x\n\n<!-- BEGIN generated: docs/reference/{run.name} -->\n<!-- END generated -->\nafter\n")
    assert update_pages(tmp_path) and "**Headline:" in page.read_text()  # rendered
    assert update_pages(tmp_path, check=True) == []  # and stable
    good = page.read_text()
    m = re.search(r"\d+\.\d\d s", good)
    assert m and "999.99 s" not in good
    page.write_text(good.replace(m.group(0), "999.99 s", 1))
    diffs = update_pages(tmp_path, check=True)
    assert len(diffs) == 1 and "-" in diffs[0] and "999.99 s" in diffs[0]
    assert page.read_text() != good  # --check writes nothing
    update_pages(tmp_path)
    assert page.read_text() == good and page.read_text().endswith("<!-- END generated -->\nafter\n")


def test_one_scenario_at_one_scale_has_one_headline(tmp_path):
    run = next(d for d in sorted(REFERENCE.iterdir()) if d.is_dir())
    for name in ("a", "b"):
        shutil.copytree(run, tmp_path / name)
    with pytest.raises(UserError, match="one headline"):
        render_markdown([tmp_path / "a", tmp_path / "b"], one_per_scale=True)


def test_docs_cli_check_exits_1_with_the_diff(tmp_path, monkeypatch):
    run = next(d for d in sorted(REFERENCE.iterdir()) if d.is_dir())
    shutil.copytree(run, tmp_path / "docs" / "reference" / run.name)
    (tmp_path / "docs" / "results.md").write_text(
        f"<!-- BEGIN generated: docs/reference/{run.name} -->\nstale\n<!-- END generated -->\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["docs", "--check"])
    assert r.exit_code == 1 and "-stale" in r.output, r.output
    r = CliRunner().invoke(main, ["docs"])
    assert r.exit_code == 0 and "1 page(s) updated" in r.output
    assert CliRunner().invoke(main, ["docs", "--check"]).exit_code == 0
    (tmp_path / "docs" / "results.md").write_text("<!-- BEGIN generated: docs/reference/nothing -->\n"
                                                  "<!-- END generated -->\n")
    r = CliRunner().invoke(main, ["docs", "--check"])
    assert r.exit_code == 2 and "no reference run matches docs/reference/nothing" in r.output, r.output


def _options(cmd: click.Command, path: str):
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _options(sub, f"{path} {name}")
        return
    for p in cmd.params:
        if isinstance(p, click.Option):
            for opt in p.opts + p.secondary_opts:
                if opt.startswith("--") and opt != "--help":
                    yield path, opt


def test_user_guide_names_every_command_and_option():
    guide = (ROOT / "docs" / "user-guide.md").read_text()
    missing = [f"{path}: {opt}" for path, opt in _options(main, "bench")
               if not re.search(re.escape(opt) + r"(?![\w-])", guide)]
    commands = [name for name in main.commands if f"`bench {name}" not in guide]
    assert not missing and not commands, f"not in docs/user-guide.md: {missing + commands}"


def test_readme_is_short_and_links_into_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 180
    assert "make run" in readme and "make test" in readme
    assert "FIELD-NOTES" not in readme and not any("FIELD-NOTES" in p.read_text()
                                                   for p in (ROOT / "docs").glob("*.md"))
    for link in re.findall(r"\]\(((?:docs/|terraform/)[^)#]+)", readme):
        assert (ROOT / link).exists(), f"README links to a missing file: {link}"
    for page in (ROOT / "docs").glob("*.md"):
        for link in re.findall(r"\]\(([^)#:]+\.md)", page.read_text()):
            assert (page.parent / link).exists(), f"{page.name} links to a missing file: {link}"


def test_a_reference_run_renders_as_html_without_its_samples():
    from reports.render import render_html

    run = next(d for d in sorted(REFERENCE.iterdir()) if d.is_dir())
    html = render_html([run])
    assert "samples file missing" in html  # said, not fatal: the timelines are left out
    # ... once for the set, not once per run, when none of its runs has its samples here
    assert re.search(r"Missing samples: none of the \d+ runs has its samples here \(the first: ", html)
    assert html.count("samples file missing") == 1
    assert "<svg" in html
    counts = render_html(sorted(REFERENCE.glob("*-deletes-high-filescale")))  # --file-scale: both scales shown
    assert "scale 0.002 · file counts of scale 0.02" in counts and "0.02 of file counts (--file-scale)" in counts


PLANNED = ["bin-packing", "bin-packing-zstd", "deletes-standard", "deletes-high"]


def test_the_plan_docs_aws_quotes_is_what_its_kept_measurements_give():
    """docs/aws.md quotes `bench plan` of the four published scenarios from the measurements kept in
    docs/reference/plan (sweeps, the memory frontier, 1 -> 2 core runs, the harness's scaling): JSON only, small,
    and each quoted total and cost is what the plan computes from them today."""
    from bench.campaigns.plan import make_plan
    from bench.core.storage import storage_option

    kept = [f for f in (REFERENCE / "plan").rglob("*") if f.is_file()]
    assert kept and all(f.suffix == ".json" for f in kept), "docs/reference/plan keeps result and summary JSON only"
    assert sum(f.stat().st_size for f in kept) < 6_000_000
    page = (ROOT / "docs" / "aws.md").read_text()
    quoted = re.findall(r"<!-- plan: --storage (\S+) --nodes (\d+) --timeout (\d+) -->\s*([\d,.]+) min and "
                        r"\$([\d.]+)", page)
    assert len(quoted) >= 2, "docs/aws.md quotes no plan"
    for storage, nodes, timeout, minutes, usd in quoted:
        p = make_plan(PLANNED, 1.0, "m5.4xlarge", 1, [REFERENCE], storage_option(storage), 90, 1.5, nodes=int(nodes),
                      timeout_s=float(timeout))
        assert p.complete and p.total_s and p.cost_usd is not None
        assert (f"{p.total_s / 60:,.0f}", f"{p.cost_usd:.2f}") == (minutes, usd), (storage, nodes)


DOC_PATH = re.compile(r"(?<![\w./-])((?:bench|datagen|reports|tests|scripts|scenarios|terraform|docs)/[\w./*-]*)")


def named_paths(doc, text: str) -> list[tuple[str, bool]]:
    """(path, exists) for each repository path `text` names: relative to the repository, or to the doc's own
    folder (terraform/README.md's tests/...); an all-capital segment (ENGINE, PROFILE) is a placeholder."""
    out = []
    for m in DOC_PATH.finditer(text):
        path = m.group(1).rstrip(".,:;")
        if path.endswith("/"):
            path = path.rstrip("/")
        pattern = "/".join("*" if re.fullmatch(r"[A-Z_]+", seg.split(".")[0]) else seg for seg in path.split("/"))
        out.append((path, any(any(base.glob(pattern)) if "*" in pattern else (base / pattern).exists()
                               for base in (ROOT, doc.parent))))
    return out


def test_every_file_a_doc_names_exists():
    docs = [ROOT / "README.md", ROOT / "terraform" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = [f"{doc.relative_to(ROOT)}: {path}" for doc in docs for path, ok in named_paths(doc, doc.read_text())
               if not ok]
    assert not missing, "docs name files that do not exist:\n" + "\n".join(missing)
    # the check itself: a moved file is caught, a placeholder and a glob are not
    assert named_paths(ROOT / "docs" / "aws.md", "(`tests/test_bootstrap.py`)") == [("tests/test_bootstrap.py", False)]
    assert all(ok for _, ok in named_paths(ROOT / "README.md", "scenarios/profiles/ENGINE/PROFILE.yaml, tests/*/"))


def test_the_layout_map_names_every_room_and_only_rooms_that_exist():
    """docs/scenarios-and-engines.md's map: each entry an existing path; every package and top-level module of
    bench/, every engine module and every top-level directory of the repository's code and data in it."""
    page = (ROOT / "docs" / "scenarios-and-engines.md").read_text()
    block = page[page.index("## The layout"):]
    block = block[block.index("```\n") + 4:]
    block = block[:block.index("```")]
    listed = {ln.split()[0] for ln in block.splitlines() if ln and not ln.startswith(" ")}
    assert all((ROOT / p).exists() for p in listed), sorted(p for p in listed if not (ROOT / p).exists())
    rooms = {f"bench/{p.name}" + ("/" if p.is_dir() else "") for p in (ROOT / "bench").iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    rooms |= {f"{d}/" for d in ("datagen", "reports", "scenarios", "docs", "scripts", "terraform", "tests")}
    assert rooms <= listed, sorted(rooms - listed)
    engines = [p.stem for p in (ROOT / "bench" / "engines").iterdir()
               if p.stem not in ("__init__", "__pycache__", "base", "worker", "environment", "procedure")]
    named = block[block.index("bench/engines/"):block.index("bench/telemetry/")]
    missing = [e for e in engines if not re.search(rf"\b{e}\b", named)]
    assert not missing, missing
