#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: dependencies, build, then `steptp generate` on the
# built-in suite (small default: tiny workloads, the shared examples and a few composites),
# writing the dataset to out/ (override with OUT=dir; extra arguments go to generate).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
STEPTP_TESTS=OFF scripts/build.sh steptp
build/src/steptp generate --out "${OUT:-out}" --jobs "$(nproc)" "$@"
