#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: dependencies, build, then `steptp generate
# --profile tuned` on a seeded sample of the built-in suite (bench shapes in f32, every root at
# least 1 ms naive on one core here, each tuned with measurement in the loop, every exported step
# re-measured), writing the dataset to out/ (override with OUT=dir; extra arguments go to
# generate and win over these, e.g. `--programs 80`; `--profile quick --programs -1` is the fast
# tiny-shape beam-search run over the whole suite).
# The root count keeps the whole job within 18 minutes on 2 cores, set-up included (docs/dataset.md,
# "The main job": the measured fresh-clone timing and the records it writes). The per-strategy
# caps are off (1000): they only dropped measured loop records, and issue 35 balances strategies by
# exploring others, never by dropping good records.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
STEPTP_TESTS=OFF scripts/build.sh steptp
build/src/steptp generate --profile tuned --programs 140 --composites 4 --per-strategy-cap 1000 --multi-per-strategy-cap 1000 --out "${OUT:-out}" --jobs "$(nproc)" "$@"
