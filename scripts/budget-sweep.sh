#!/usr/bin/env bash
# Memory-budget sweep: run a scenario on every engine under a series of budgets and print, per budget,
# each engine's status and peak memory.  Shows the budget at which each engine first fails.
#   scripts/budget-sweep.sh [SCENARIO] [SCALE] [BUDGETS...]
#   e.g. scripts/budget-sweep.sh deletes-high 0.005 12G 6G 3G 1500M 1G 768M
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-deletes-high}; scale=${2:-0.005}; shift 2 || true
budgets=("$@"); [ ${#budgets[@]} -gt 0 ] || budgets=(12G 6G 3G 1500M 1G 768M)
out=${SWEEP_DIR:-results/sweep-$(date -u +%Y%m%d-%H%M%S)-$scenario}
for b in "${budgets[@]}"; do
  .venv/bin/bench run "$scenario" --scale "$scale" --engines "${ENGINES:-spark,risingwave}" \
    --memory-budget "$b" --timeout "${TIMEOUT:-1800}" --results-dir "$out" --run-id "budget-$b" \
    ${WAREHOUSE:+--warehouse "$WAREHOUSE"} | grep -E "\] (ok|failed|oom|heap-oom|timeout)|speedup" || true
done
.venv/bin/python - "$out" <<'PY'
import sys
from bench.core.results import read_results
rows = sorted(read_results(sys.argv[1]), key=lambda r: (-(r.memory_budget_bytes or 0), r.engine))
print(f"{'budget':>10} {'engine':<11} {'status':<8} {'verified':<8} {'duration':>9} {'peak RSS':>10}  enforcement / error")
for r in rows:
    peak = r.telemetry.peak_rss_bytes or 0
    dur = f"{r.duration_s:.1f} s" if r.duration_s else "-"
    why = (r.error or "")[:90] if r.status != "ok" else r.engine_settings.get("heap_requested_bytes", "")
    print(f"{(r.memory_budget_bytes or 0) / 2**30:>9.2f}G {r.engine:<11} {r.status:<8} {str(r.verified):<8} "
          f"{dur:>9} {peak / 2**30:>9.2f}G  {why}")
PY
