#!/usr/bin/env bash
# The training loop's dependencies (docs/train.md: python -m steptp.train, scripts/serve_model.sh and
# the heavy tests under tests/train/): PyPI torch, transformers with its serving extra (`transformers
# serve`, an OpenAI-compatible server), trl, peft, datasets and accelerate in a venv of their own,
# .venv-train, made from /usr/bin/python3 WITHOUT system site packages: they pull numpy 2, which
# Debian's torch 1.13 in the project venv cannot use. The Linux torch wheel on PyPI pulls the CUDA
# wheels (about 6 GB installed, the only torch build PyPI serves), so free disk is checked first.
# Idempotent: a complete venv makes no network call. Not run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-train
PY_PACKAGES=(torch==2.15.0 "transformers[serving]==5.25.0" trl==1.16.0 peft==0.21.2 datasets==5.2.0
  accelerate==1.16.0 tokenizers==0.23.3 pytest==9.2.0)
check='import torch, transformers, trl, peft, datasets, accelerate, tokenizers, pytest, fastapi, uvicorn
assert int(transformers.__version__.split(".")[0]) >= 5, transformers.__version__'
if ! { [ -x "$V/bin/python3" ] && "$V/bin/python3" -c "$check" >/dev/null 2>&1; }; then
  # The wheels are downloaded and unpacked once (no pip cache), so the venv's size is what is needed.
  need_gb=10
  free_gb=$(df -P --block-size=1G . | awk 'NR == 2 {print $4}')
  if ((free_gb < need_gb)); then
    echo "deps-train: $V needs about $need_gb GB free disk here (torch pulls the CUDA wheels); only $free_gb GB" \
      "free in $(pwd)" >&2
    exit 1
  fi
fi
source scripts/lib.sh
venv_ensure "$V" "" "$check" --no-cache-dir "${PY_PACKAGES[@]}"
