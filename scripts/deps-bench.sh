#!/usr/bin/env bash
# The baselines of bench/tune_panel.py that need PyPI packages pulling numpy 2 (docs/benchmarks.md):
# TVM MetaSchedule (apache-tvm with its XGBoost cost model; xgboost-cpu: the same module without
# the CUDA NCCL wheel). They get their own venv, .venv-bench,
# made from /usr/bin/python3 WITHOUT system site packages, so Debian's torch 1.13 (numpy < 2) is
# neither seen nor broken; PyTorch eager runs in the project venv instead.
# apache-tvm-ffi is pinned to 0.1.14.post1: the 0.1.15.post2 that pip pairs with apache-tvm 0.27.0.post1
# segfaults in tvm.ir.save_json on any s_tir module, so MetaSchedule dies at its first record.
# Idempotent: a complete venv makes no network call. Heavy benchmarks only (not run by test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-bench
PY_PACKAGES=(apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 xgboost-cpu==3.2.0 psutil==7.2.2 cloudpickle==3.1.2)
check='import tvm, tvm_ffi, xgboost, psutil, cloudpickle
from tvm.s_tir import meta_schedule
assert tvm_ffi.__version__.startswith("0.1.14"), tvm_ffi.__version__'
source scripts/lib.sh
venv_ensure "$V" "" "$check" "${PY_PACKAGES[@]}"
