#!/usr/bin/env bash
# Sets up .venv-schemathesis (gitignored) with PyPI schemathesis, the OpenAPI fuzzer that drives
# `steptp serve` from docs/openapi.yaml (tests/serve/fuzz_openapi.sh). Its own venv: schemathesis
# pulls versions of hypothesis/jsonschema/etc. the project venv (numpy<2, torch) does not need.
# Pinned: schemathesis 3.39 breaks with hypothesis >= 6.13x ("many object has no attribute more").
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
venv_ensure .venv-schemathesis "" "import schemathesis, hypothesis; assert hypothesis.__version__ == '6.124.0'" \
  "schemathesis==3.39.16" "hypothesis==6.124.0"
