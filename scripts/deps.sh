#!/usr/bin/env bash
# Installs what steptp needs on Debian 12, idempotently: Debian packages (only those missing,
# so a configured machine makes no network call) and the project venv (.venv) with the PyPI
# oracles. Safe to run any number of times.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  # libc6-dev (with build-essential anyway): libm.so links glibc's libmvec, the vector math of CPU kernels
  build-essential libc6-dev cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libginac-dev libpcre2-dev libicu-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev python3-requests
  libcurl4-openssl-dev
  libonnx-dev libprotobuf-dev python3-onnx
  libopenblas0-pthread libopenblas-pthread-dev
  libxgboost-dev
  python3 python3-venv python3-pip python3-numpy python3-torch
  clang
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# PyPI oracles in a project-local venv that also sees Debian's python3-torch. Pinned versions:
# the TVMScript dialect and tokenizer behaviour the tests check against.
PY_PACKAGES=(apache-tvm==0.27.0.post1 tokenizers==0.23.3 sympy)
if [ ! -x .venv/bin/python3 ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python3 -c "import tvm, tokenizers, sympy" >/dev/null 2>&1; then
  echo "deps: installing PyPI packages into .venv: ${PY_PACKAGES[*]}" >&2
  .venv/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
fi

# ONNX Runtime for the importer's tests, in its own venv (numpy 2; see the script).
scripts/deps-onnx.sh
