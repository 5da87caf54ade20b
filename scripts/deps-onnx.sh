#!/usr/bin/env bash
# ONNX Runtime, the oracle of the importer's tests (tests/import), in its own venv .venv-onnx:
# the onnxruntime wheels pull numpy 2 and protobuf 5+, which must not shadow Debian's numpy 1 /
# protobuf 3 that Debian's python3-torch and python3-onnx (used to export the test models) need.
# Idempotent; called by scripts/deps-test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
venv_ensure .venv-onnx "" "import onnxruntime, numpy" onnxruntime==1.20.1
