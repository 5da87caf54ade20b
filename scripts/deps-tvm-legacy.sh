#!/usr/bin/env bash
# The TVM that checks the legacy TVMScript dialect (T.block, as the Step-TP paper's TVM 0.21):
# no apache-tvm on PyPI reads it any more (0.25-0.27 spell blocks T.sblock), but tilelang
# 0.1.6.post1 bundles TVM 0.22.dev0, which does. That build has no LLVM: tests build its modules
# for the C target and compile them with the system compiler, against the TVM/FFI headers of the
# project venv's apache-tvm (its wheel carries none). Its libtvm links the CUDA 12 runtime and
# NVRTC (PyPI wheels) and libcuda.so.1 (the toolkit's stub; nothing runs on a GPU).
# Creates .venv-tvm-old idempotently (needs scripts/deps-test.sh first); heavy tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-tvm-old
if [ -x "$V/bin/tvm-python" ] && "$V/bin/tvm-python" -c "import tilelang; from tvm.script import tir as T; assert hasattr(T, 'block')" >/dev/null 2>&1; then
  exit 0
fi
stub=""
for d in /usr/local/cuda/lib64/stubs /usr/lib/x86_64-linux-gnu/stubs; do
  [ -e "$d/libcuda.so" ] && stub="$d/libcuda.so" && break
done
if [ -z "$stub" ]; then
  echo "deps-tvm-legacy: no libcuda.so stub (CUDA toolkit) found; the legacy-dialect test will skip" >&2
  exit 0
fi
echo "deps-tvm-legacy: creating $V (tilelang 0.1.6.post1 with TVM 0.22.dev0)" >&2
/usr/bin/python3 -m venv --system-site-packages "$V"
# --no-deps: tilelang asks for torch, which Debian's python3-torch provides (never the PyPI wheel).
"$V/bin/pip" install -q --disable-pip-version-check --no-deps tilelang==0.1.6.post1
"$V/bin/pip" install -q --disable-pip-version-check Cython==3.3.1 tqdm==4.70.1 typing_extensions==4.12.2 cloudpickle==3.1.3 \
  ml_dtypes==0.7.0 nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79
mkdir -p "$V/stubs" "$V/tvm-home/include" "$V/tvm-home/3rdparty"
ln -sf "$stub" "$V/stubs/libcuda.so.1"
site=$(.venv/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cp -r "$site/tvm/include/." "$site/tvm_ffi/include/." "$V/tvm-home/include/"
cat > "$V/bin/tvm-python" <<'LAUNCH'
#!/bin/sh
# python3 with tilelang's TVM importable as `tvm` (tests/backend/tvm_check.py reads the variables).
D=$(cd "$(dirname "$0")/.." && pwd)
SP=$("$D/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
export LD_LIBRARY_PATH="$SP/nvidia/cuda_nvrtc/lib:$SP/nvidia/cuda_runtime/lib:$D/stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TVM_HOME="$D/tvm-home" STEPTP_TVM_TARGET=c STEPTP_TVM_PRELOAD=tilelang
exec "$D/bin/python3" "$@"
LAUNCH
chmod +x "$V/bin/tvm-python"
"$V/bin/tvm-python" -c "import tilelang; from tvm.script import tir as T; assert hasattr(T, 'block')"
