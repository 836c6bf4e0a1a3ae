#!/usr/bin/env bash
# Run the reference benchmarks the docs quote and keep their result JSON in docs/reference/<run-id>/
# (result files and run.json only: no samples, logs or work files), replacing the earlier reference
# run of each scenario; then re-render the docs' measured tables (`bench docs`).
#   scripts/reference.sh                      # the defaults below
#   REF_SCALE=0.0002 REF_REPS=2 scripts/reference.sh bin-packing
#   REF_SUFFIX=-concurrent REF_RUN_ARGS="--stream-mode concurrent" ...   # a second reference run of a scenario
#     (run id <date>-<scenario><suffix>: it replaces only the earlier run with the same suffix)
# Run it on a quiet machine: every number in docs/results.md comes from these runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-.venv/bin/bench}
SCALE=${REF_SCALE:-0.005}
REPS=${REF_REPS:-3}
ENGINES=${REF_ENGINES:-spark,spark-3.5,risingwave,arrow-floor,gluten,repark}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(bin-packing deletes-high)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-reference.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for scenario in "${SCENARIOS[@]}"; do
  run_id="$(date -u +%Y%m%d-%H%M%S)-$scenario${REF_SUFFIX:-}"
  "$BENCH" run "$scenario" --scale "$SCALE" --reps "$REPS" --engines "$ENGINES" \
    --run-id "$run_id" --results-dir "$WORK/results" ${REF_RUN_ARGS:-}
  # the new run replaces the earlier reference run of this scenario (one scenario, one headline)
  for old in docs/reference/*-"$scenario${REF_SUFFIX:-}"; do
    [ -d "$old" ] && git rm -rq --ignore-unmatch "$old" && rm -rf "$old"
  done
  mkdir -p "docs/reference/$run_id"
  find "$WORK/results/$run_id" -maxdepth 1 -name '*.json' -exec cp {} "docs/reference/$run_id/" \;
  echo "reference run: docs/reference/$run_id"
done
"$BENCH" docs
