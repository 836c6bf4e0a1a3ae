import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY = "0.00005"  # 16 files, ~10 MB: seconds per scenario
# the required checks that a compaction left the same table (bench.verify.integrity)
INTEGRITY_CHECKS = ("same_table", "same_schema", "same_partitioning", "same_sort_order", "same_properties",
                    "input_is_ancestor", "history_kept", "commits_are_replace", "summary_totals")
TEST_ENGINES = ",".join([
    "rewrite=tests.engines.corrupt:RewriteEngine",
    "corrupt=tests.engines.corrupt:CorruptEngine",
    "partial=tests.engines.corrupt:PartialEngine",
    "wrongcodec=tests.engines.corrupt:WrongCodecEngine",
    "altered=tests.engines.corrupt:AlteredEngine",
    "noids=tests.engines.corrupt:NoFieldIdsEngine",
    "leaky=tests.engines.corrupt:LeakyEngine",
    "overwrite=tests.engines.corrupt:OverwriteEngine",
    "recreate=tests.engines.corrupt:RecreateEngine",
    "expire=tests.engines.corrupt:ExpireEngine",
    "misstate=tests.engines.corrupt:MisstateEngine",
    "evolve-props=tests.engines.corrupt:EvolveEngine",
    "evolve-schema=tests.engines.corrupt:EvolveSchemaEngine",
    "evolve-spec=tests.engines.corrupt:EvolveSpecEngine",
    "evolve-sort=tests.engines.corrupt:EvolveSortEngine",
    "setupwork=tests.engines.corrupt:SetupWorkEngine",
    "setuppeek=tests.engines.corrupt:SetupPeekEngine",
    "crash=tests.engines.faulty:CrashEngine",
    "hang=tests.engines.faulty:HangEngine",
    "hog=tests.engines.faulty:HogEngine",
    "heap=tests.engines.faulty:HeapEngine",
    "lossyfloor=tests.engines.floors:LossyFloor",
    "committingfloor=tests.engines.floors:CommittingFloor",
    "ghostfloor=tests.engines.floors:GhostFloor",
    "knobby=tests.engines.knobby:KnobbyEngine",
])


def bench_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["BENCH_EXTRA_ENGINES"] = TEST_ENGINES
    env["BENCH_READERS"] = "off"  # reader queries only where a test asks for them (--readers on): suite time
    env.update(extra)
    return env


def run_bench(*args, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    exe = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    return subprocess.run([exe, *map(str, args)], cwd=cwd, env=env or bench_env(), capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="session")
def shared_warehouse(tmp_path_factory) -> Path:
    """One warehouse for the session: datasets are generated once and reused, as users would."""
    return tmp_path_factory.mktemp("warehouse")
