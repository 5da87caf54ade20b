#!/usr/bin/env bash
# What the main job (scripts/generate.sh: build and run the `steptp` CLI) needs on Debian 12,
# installed idempotently (only missing packages, so a configured machine makes no network call).
# The tests need more: scripts/deps-test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

apt_ensure \
  build-essential libc6-dev cmake ninja-build ccache pkg-config git \
  nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libginac-dev libpcre2-dev libicu-dev \
  libcpp-httplib-dev libonnx-dev libprotobuf-dev libxgboost-dev libcurl4-openssl-dev libseccomp-dev libboost-dev
# libc6-dev (with build-essential anyway): libm.so links glibc's libmvec, the vector math of CPU
# kernels; libcpp-httplib: `steptp serve`; libseccomp-dev: the seccomp filters of its sandbox;
# libonnx/libprotobuf: `steptp import`; libxgboost: the cost model of `steptp tune`; libcurl: the
# Chat Completions client of `steptp optimize`; libboost-dev (header-only Boost.Math): Student's t
# quantile of the dataset's speedup confidence intervals (src/apps/dataset/measurement.h).
