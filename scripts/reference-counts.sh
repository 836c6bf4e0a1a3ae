#!/usr/bin/env bash
# A count sweep as reference runs: `bench sweep SCENARIO --scale S --file-scales F1,F2,...`, then
#   docs/reference/<id>-<scenario>-counts/counts.json          the sweep's summary (a `counts:` block renders it)
#   docs/reference/<id>-<scenario>-counts-files-<F>/*.json     each file scale's run (result files and run.json)
# (named so that no block's `*-<scenario>` glob matches them)
# replacing the earlier ones of the same scenario; then re-render the docs' measured tables (`bench docs`).
#   scripts/reference-counts.sh deletes-high 0.005 0.005,0.02,0.05,0.1
#   COUNTS_FROM=results/<sweep-id> scripts/reference-counts.sh deletes-high   # keep a sweep that already ran
# Run it on a quiet machine: every number in docs/results.md comes from these runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-.venv/bin/bench}
scenario=$1
id="$(date -u +%Y%m%d-%H%M%S)"
if [[ -n ${COUNTS_FROM:-} ]]; then
  sweep=$COUNTS_FROM
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-reference.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  read -r -a extra <<< "${REF_RUN_ARGS:-}"
  "$BENCH" sweep "$scenario" --scale "$2" --file-scales "$3" --reps "${REF_REPS:-1}" \
    --engines "${REF_ENGINES:-spark,risingwave}" --run-id "counts-$scenario" --results-dir "$WORK/results" \
    "${extra[@]}"
  sweep=$WORK/results/counts-$scenario
fi
for old in docs/reference/*-"$scenario"-counts docs/reference/*-"$scenario"-counts-files-*; do
  [ -d "$old" ] && git rm -rq --ignore-unmatch "$old" && rm -rf "$old"
done
mkdir -p "docs/reference/$id-$scenario-counts"
cp "$sweep/counts.json" "docs/reference/$id-$scenario-counts/"
for run in "$sweep"/files-*; do
  [ -d "$run" ] || continue
  dest="docs/reference/$id-$scenario-counts-$(basename "$run")"
  mkdir -p "$dest"
  find "$run" -maxdepth 1 -name '*.json' -exec cp {} "$dest/" \;
done
echo "reference count sweep: docs/reference/$id-$scenario-counts"
"$BENCH" docs
