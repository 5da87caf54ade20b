#!/usr/bin/env bash
# The heavy sweeps (label "heavy"): every strategy on every workload, composition chains, ...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps-test.sh
scripts/deps-tvm-legacy.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" -L heavy --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 3600
