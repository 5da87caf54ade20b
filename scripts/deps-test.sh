#!/usr/bin/env bash
# What the default test suite (scripts/test.sh) needs beyond the main job's scripts/deps.sh:
# GoogleTest/Benchmark, OpenMPI, the independent oracles (Debian's PyTorch, OpenBLAS, real TVM, ONNX
# Runtime) and the Python clients the tests drive. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/deps.sh

apt_ensure \
  libgtest-dev libgmock-dev libbenchmark-dev \
  python3 python3-venv python3-pip python3-numpy python3-torch python3-requests python3-onnx \
  libopenblas0-pthread libopenblas-pthread-dev \
  clang \
  openmpi-bin libopenmpi-dev
# OpenMPI: `mpirun -n 2 steptp generate` in tests/mpi (docs/mpi.md). The main job does not need
# it: without libopenmpi-dev steptp builds single-process (src/driver/mpi/without_mpi.cc).

# `steptp report` draws its figures with Debian's matplotlib; its test opens the page in headless
# Chromium. Users of the report command need only python3-matplotlib (README).
apt_ensure python3-matplotlib chromium

# PyPI oracles in the project venv, which also sees Debian's python3-torch (numpy < 2). Pinned:
# the TVMScript dialect and tokenizer behaviour the tests check against.
venv_ensure .venv --system-site-packages "import tvm, tokenizers, sympy" \
  apache-tvm==0.27.0.post1 tokenizers==0.23.3 sympy

# ONNX Runtime for the importer's tests, in its own venv (numpy 2; see the script).
scripts/deps-onnx.sh

# The Python package's build and test tools (nanobind, pytest, datasets in .venv-datasets).
scripts/deps-python.sh
