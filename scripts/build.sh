#!/usr/bin/env bash
# Configures and builds steptp into build/ (Release: -O2, no debug info; BUILD_TYPE=RelWithDebInfo
# for a debuggable build; with ccache when present): every target,
# or only those named as arguments (e.g. `scripts/build.sh steptp`). STEPTP_TESTS=OFF leaves the
# test executables out of the configuration (no GoogleTest needed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Let ccache reuse objects across checkouts in different folders (CI clones afresh).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# Objects compiled with a precompiled header (cmake/modules.cmake) are cached only with these
# (ccache(1), PRECOMPILED HEADERS); without them ccache compiles them uncached.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DSTEPTP_TESTS="${STEPTP_TESTS:-ON}" >/dev/null
ninja -C "$BUILD_DIR" -j"${JOBS:-$(nproc)}" "$@"
