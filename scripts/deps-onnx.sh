#!/usr/bin/env bash
# ONNX Runtime, the oracle of the importer's tests (tests/import), in its own venv .venv-onnx:
# the onnxruntime wheels pull numpy 2 and protobuf 5+, which must not shadow Debian's numpy 1 /
# protobuf 3 that Debian's python3-torch and python3-onnx (used to export the test models) need.
# Idempotent; called by scripts/deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-onnx/bin/python3 ]; then
  /usr/bin/python3 -m venv .venv-onnx
fi
if ! .venv-onnx/bin/python3 -c "import onnxruntime, numpy" >/dev/null 2>&1; then
  echo "deps: installing onnxruntime into .venv-onnx" >&2
  .venv-onnx/bin/pip install -q --disable-pip-version-check onnxruntime==1.20.1
fi
