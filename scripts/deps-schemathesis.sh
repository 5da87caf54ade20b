#!/usr/bin/env bash
# Sets up .venv-schemathesis (gitignored) with PyPI schemathesis, the OpenAPI fuzzer that drives
# `steptp serve` from docs/openapi.yaml (tests/serve/fuzz_openapi.sh). Its own venv: schemathesis
# pulls versions of hypothesis/jsonschema/etc. the project venv (numpy<2, torch) does not need.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-schemathesis/bin/python3 ]; then
  /usr/bin/python3 -m venv .venv-schemathesis
fi
if ! .venv-schemathesis/bin/python3 -c "import schemathesis" >/dev/null 2>&1; then
  echo "deps: installing schemathesis into .venv-schemathesis" >&2
  .venv-schemathesis/bin/pip install -q --disable-pip-version-check "schemathesis==3.39.16"
fi
