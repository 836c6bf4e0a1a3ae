#!/usr/bin/env bash
# The floor's reference runs (docs/results.md, "A floor that is a floor"): for each scenario, its dataset
# generated, this machine's rates measured on the dataset's own files (`bench selfcheck rates`, what the
# physical bound is built from), then the engines and the floor with repetitions; the result JSON kept in
# docs/reference/<date>-<scenario>-floorcheck/ (replacing the earlier floorcheck of that scenario), then
# the docs re-rendered.  Run it on a quiet machine: the bound assumes every core is the run's.
#   scripts/floorcheck.sh                                  # the defaults below
#   FLOOR_ENGINES=spark,arrow-floor scripts/floorcheck.sh sorted-smallfiles
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-.venv/bin/bench}
SCALE=${FLOOR_SCALE:-0.005}
REPS=${FLOOR_REPS:-3}
ENGINES=${FLOOR_ENGINES:-risingwave,arrow-floor}
WAREHOUSE=${FLOOR_WAREHOUSE:-warehouse}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(deletes-high deletes-standard bin-packing bin-packing-zstd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-floorcheck.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for scenario in "${SCENARIOS[@]}"; do
  run_id="$(date -u +%Y%m%d)-$scenario-floorcheck"
  table=$("$BENCH" datagen "$scenario" --scale "$SCALE" --warehouse "$WAREHOUSE" 2>&1 \
          | sed -n 's/.*dataset \(bench\.[A-Za-z0-9_]*\):.*/\1/p' | tail -1)
  [ -n "$table" ] || { echo "error: no dataset for $scenario" >&2; exit 2; }
  "$BENCH" selfcheck rates --warehouse "$WAREHOUSE" --table "$table"
  "$BENCH" run "$scenario" --scale "$SCALE" --reps "$REPS" --engines "$ENGINES" --warehouse "$WAREHOUSE" \
    --run-id "$run_id" --results-dir "$WORK/results" ${FLOOR_RUN_ARGS:-}
  for old in docs/reference/*-"$scenario"-floorcheck; do  # one floorcheck per scenario
    [ -d "$old" ] && git rm -rq --ignore-unmatch "$old" && rm -rf "$old"
  done
  mkdir -p "docs/reference/$run_id"
  find "$WORK/results/$run_id" -maxdepth 1 -name '*.json' -exec cp {} "docs/reference/$run_id/" \;
  echo "floorcheck run: docs/reference/$run_id"
done
"$BENCH" docs
