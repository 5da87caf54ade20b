#!/usr/bin/env bash
# The whole default test suite on a fresh Debian 12 machine: dependencies, build, ctest.
# Heavy sweeps are excluded here; run them with scripts/test-heavy.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/deps-python.sh  # test-only: the Python package's build and test tools
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" -LE heavy --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 900
