#!/usr/bin/env bash
# eval_model.sh MANIFEST OUT BUDGET N SEARCH NAME=MODEL_DIR...: trained model folders in the loop (docs/train.md).
# Each folder is served in turn by scripts/serve_model.sh on a free loopback port and driven by
# `steptp optimize --policy llm` over the first N eval roots of MANIFEST with SEARCH (chain, greedy...) at BUDGET
# measured candidates, into OUT/NAME-SEARCH; then bench/optimize_bench.sh runs the `random` and `model` policies
# with the same search and budget and `steptp tune` at BUDGET trials on the same roots, and prints one table with
# every run (funnel rates, pass@1, fast_p, geomean/median speedup) and the sample-efficiency curves.
# MAX_TOKENS (768) caps each answer, MAX_CALLS (4 x BUDGET) the requests per program, TEMPERATURE (0.7) samples the
# answers; MEASURE=model skips timing.
set -euo pipefail
if [ $# -lt 6 ]; then
  echo "usage: scripts/eval_model.sh MANIFEST OUT BUDGET N SEARCH NAME=MODEL_DIR..." >&2
  exit 2
fi
MANIFEST=$1 OUT=$2 BUDGET=$3 N=$4 SEARCH=$5
shift 5
cd "$(dirname "$0")/.."
STEPTP=${STEPTP:-build/src/steptp}
MEASURE=${MEASURE:-cpu}
mkdir -p "$OUT"
for spec in "$@"; do
  name=${spec%%=*} dir=${spec#*=}
  dir=$(cd "$dir" && pwd)  # transformers serve answers only requests that name its folder by this path
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  setsid scripts/serve_model.sh 127.0.0.1 "$port" "$dir" > "$OUT/$name-serve.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null && break
    kill -0 "$server" 2> /dev/null || { echo "eval_model: the server of $dir exited:" >&2; tail "$OUT/$name-serve.log" >&2; exit 1; }
    sleep 1
  done
  status=0
  "$STEPTP" optimize "$MANIFEST" --limit "$N" --policy llm --base-url "http://127.0.0.1:$port/v1" --model "$dir" \
    --search "$SEARCH" --measure "$MEASURE" --max-measured "$BUDGET" --max-calls "${MAX_CALLS:-$((4 * BUDGET))}" \
    --max-tokens "${MAX_TOKENS:-768}" --temperature "${TEMPERATURE:-0.7}" --timeout 600 --depth 4 --proposals 4 --out "$OUT/$name-$SEARCH" --json \
    > "$OUT/$name-$SEARCH.json" || status=$?
  kill -- -"$server" 2> /dev/null || true
  wait "$server" 2> /dev/null || true
  [ "$status" -eq 0 ] || exit "$status"
done
POLICIES="random model" SEARCHES="$SEARCH" STEPTP="$STEPTP" bench/optimize_bench.sh "$MANIFEST" "$OUT" "$MEASURE" "$BUDGET" "$N"
