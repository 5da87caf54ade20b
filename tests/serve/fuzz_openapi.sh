#!/usr/bin/env bash
# Fuzzes `steptp serve` from its OpenAPI spec (docs/openapi.yaml) with PyPI schemathesis
# (.venv-schemathesis, scripts/deps-schemathesis.sh): positive and negative examples for every
# operation; fails on any 5xx (check not_a_server_error) or a response that breaks the spec's
# status codes/content types. The server binds 127.0.0.1 on a free port and is always stopped.
# Usage: fuzz_openapi.sh STEPTP_EXE [MAX_EXAMPLES per operation, default 25]
set -euo pipefail
EXE=$1
MAX=${2:-25}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
"$ROOT/scripts/deps-schemathesis.sh"
out=$(mktemp)
"$EXE" serve --host 127.0.0.1 --port 0 --workers 2 --queue 256 --job-timeout 10 --measure-timeout 10 \
  --measure-min-time 0.002 --peaks none >"$out" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$out")
"$ROOT/.venv-schemathesis/bin/schemathesis" run "$ROOT/docs/openapi.yaml" --base-url "$url" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance \
  --data-generation-method all --hypothesis-max-examples "$MAX" --hypothesis-seed 17 \
  --hypothesis-derandomize --request-timeout 60000 --workers 2 --no-color
