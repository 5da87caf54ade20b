#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: dependencies, build, then the pipeline on the
# built-in programs, writing results under out/ (override with OUT=dir).
#
# Until `steptp generate` lands this runs the demonstration pipeline over ../shared/examples:
# validate every program, run it on seeded inputs, apply every strategy and verify the results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
OUT=${OUT:-out}
STEPTP=build/src/steptp
mkdir -p "$OUT/outputs" "$OUT/steps"
"$STEPTP" check ../shared/examples/*.json | tee "$OUT/check.txt"
for f in ../shared/examples/*.json; do
  name=$(basename "$f" .json)
  "$STEPTP" run "$f" --seed 0 --out "$OUT/outputs/$name.json"
  : > "$OUT/steps/$name.jsonl"
  for s in $("$STEPTP" strategies | cut -f2); do
    "$STEPTP" apply "$f" --strategy "$s" --all --samples 1 --seed 0 >> "$OUT/steps/$name.jsonl"
  done
done
echo "wrote $OUT/check.txt, $OUT/outputs/*.json and $(cat "$OUT"/steps/*.jsonl | wc -l) verified strategy results in $OUT/steps/"
