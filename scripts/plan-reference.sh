#!/usr/bin/env bash
# The measurements the docs' full-reproduction plan is made from, kept in docs/reference/plan/ (summaries and
# result JSON only: no samples, logs or work files), so that anyone can re-plan offline:
#   bench plan bin-packing bin-packing-zstd deletes-standard deletes-high --reps 1 --from docs/reference \
#     --storage s3-sustained --budget-minutes 90 --budget-usd 1.50 [--nodes N]
#   scripts/plan-reference.sh                    # all: sweeps, frontier, 1 -> 2 cores, harness scaling
#   scripts/plan-reference.sh sweeps scaling     # some of them; each replaces its earlier reference
# Run it on a quiet machine (nothing else running): about 1.5 hours on 2 cores (the frontier alone 1 hour).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-.venv/bin/bench}
OUT=${PLAN_REF_DIR:-docs/reference/plan}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-plan-reference.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export BENCH_WAREHOUSE=${BENCH_WAREHOUSE:-$WORK/warehouse}
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(sweeps frontier cores scaling)

keep() {  # keep one campaign's JSON (not its work/ files) as docs/reference/plan/<name>
  local name=$1
  rm -rf "${OUT:?}/$name"
  mkdir -p "$OUT/$name"
  (cd "$WORK/results/$name" && find . -path '*/work' -prune -o -name '*.json' -print) | while read -r f; do
    mkdir -p "$OUT/$name/$(dirname "$f")"
    cp "$WORK/results/$name/$f" "$OUT/$name/$f"
  done
  echo "reference: $OUT/$name"
}

for step in "${STEPS[@]}"; do
  case $step in
    sweeps)
      # three scales each, where both engines take seconds to minutes here (a fit of three points: a model)
      for spec in bin-packing:0.005,0.01,0.02:1 bin-packing-zstd:0.005,0.01,0.02:1 \
                  deletes-standard:0.002,0.005,0.01:1 deletes-high:0.002,0.005,0.01:1; do
        IFS=: read -r scenario scales reps <<<"$spec"
        "$BENCH" sweep "$scenario" --scales "$scales" --reps "$reps" --results-dir "$WORK/results" \
          --run-id "sweep-$scenario"
        keep "sweep-$scenario"
      done ;;
    frontier)
      "$BENCH" frontier deletes-high --scales 0.001,0.002,0.005,0.01 --engines spark,risingwave --precision 256M \
        --results-dir "$WORK/results" --run-id frontier-deletes-high
      keep frontier-deletes-high ;;
    cores)
      # the 1 -> 2 core efficiency of the scenario whose Spark run is the longest (ZSTD compresses on every
      # core); bin-packing's is kept in docs/reference/20261125-bin-packing-cores-*
      for n in 1 2; do
        "$BENCH" run bin-packing-zstd --scale 0.005 --cores "$n" --reps 3 --cache warm --engines spark,risingwave \
          --readers off --results-dir "$WORK/results" --run-id "cores-zstd-$n"
        keep "cores-zstd-$n"
      done ;;
    scaling)
      "$BENCH" selfcheck scaling --rounds 3 --results-dir "$WORK/results" --run-id harness-scaling
      keep harness-scaling ;;
    *) echo "unknown step $step (sweeps, frontier, cores, scaling)" >&2; exit 2 ;;
  esac
done
