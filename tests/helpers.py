"""What tests share that is not a fixture: the repository root, the tiny scale, the test-only engines
and running the real `bench` CLI in a subprocess."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
TINY = "0.00005"  # 16 files, ~10 MB: seconds per scenario
# the required checks that a compaction left the same table (bench.verify.integrity)
INTEGRITY_CHECKS = ("same_table", "same_schema", "same_partitioning", "same_sort_order", "same_properties",
                    "input_is_ancestor", "history_kept", "commits_are_replace", "summary_totals")
TEST_ENGINES = ",".join([
    "rewrite=tests.fakes.corrupt:RewriteEngine",
    "corrupt=tests.fakes.corrupt:CorruptEngine",
    "partial=tests.fakes.corrupt:PartialEngine",
    "wrongcodec=tests.fakes.corrupt:WrongCodecEngine",
    "altered=tests.fakes.corrupt:AlteredEngine",
    "noids=tests.fakes.corrupt:NoFieldIdsEngine",
    "leaky=tests.fakes.corrupt:LeakyEngine",
    "overwrite=tests.fakes.corrupt:OverwriteEngine",
    "recreate=tests.fakes.corrupt:RecreateEngine",
    "expire=tests.fakes.corrupt:ExpireEngine",
    "misstate=tests.fakes.corrupt:MisstateEngine",
    "evolve-props=tests.fakes.corrupt:EvolveEngine",
    "evolve-schema=tests.fakes.corrupt:EvolveSchemaEngine",
    "evolve-spec=tests.fakes.corrupt:EvolveSpecEngine",
    "evolve-sort=tests.fakes.corrupt:EvolveSortEngine",
    "setupwork=tests.fakes.corrupt:SetupWorkEngine",
    "setuppeek=tests.fakes.corrupt:SetupPeekEngine",
    "crash=tests.fakes.faulty:CrashEngine",
    "hang=tests.fakes.faulty:HangEngine",
    "restrewrite=tests.fakes.faulty:RestRewriteEngine",
    "hog=tests.fakes.faulty:HogEngine",
    "heap=tests.fakes.faulty:HeapEngine",
    "lossyfloor=tests.fakes.floors:LossyFloor",
    "committingfloor=tests.fakes.floors:CommittingFloor",
    "ghostfloor=tests.fakes.floors:GhostFloor",
    "unsortedfloor=tests.fakes.floors:UnsortedFloor",
    "knobby=tests.fakes.knobby:KnobbyEngine",
    "ignorefilter=tests.fakes.partitioned:IgnoreFilterEngine",
    "losingfilter=tests.fakes.partitioned:LosingFilterEngine",
])


def bench_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["BENCH_EXTRA_ENGINES"] = TEST_ENGINES
    env["BENCH_READERS"] = "off"  # reader queries only where a test asks for them (--readers on): suite time
    # no page cache dropped before each engine run (the other pytest worker's libraries and jars with it):
    # suite time; the cold default is tested where a test asks for it (tests/runner/test_run.py)
    env["BENCH_CACHE"] = "warm"
    env.update(extra)
    return env


def run_bench(*args, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    exe = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    return subprocess.run([exe, *map(str, args)], cwd=cwd, env=env or bench_env(), capture_output=True,
                          text=True, timeout=timeout)
