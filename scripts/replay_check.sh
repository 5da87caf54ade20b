#!/usr/bin/env bash
# The replayed-job check (docs/dataset.md, "The main job": replaying a run): do two steptp
# binaries write the same dataset from one measurement store? BIN_A generates once into WORK/A,
# timing what it needs; A's store is copied (sqlite3 .backup) into two fresh folders; BIN_A
# replays into WORK/B and BIN_B into WORK/C with the same options; B and C must be identical:
# every exported file byte for byte (diff -r), the measurement stores' facts, and the
# checkpoints' per-root results without their wall times ("timing": search_s, verify_s, ...). A
# replay that had to time a comparison A's store lacks re-draws it, so B may then differ from A
# (reported, not an error); B vs C is the check.
#
# Usage: scripts/replay_check.sh BIN_A BIN_B [generate options, without --out]
#   e.g. scripts/replay_check.sh /tmp/steptp-main build/src/steptp --profile tuned --programs 6 --composites 1 --seed 2
# Environment: WORK=DIR (default: a new mktemp folder; kept for inspection), STORE=PATH (start from
# this measurement store instead of running BIN_A into WORK/A).
# Exit status: 0 identical, 1 a difference (listed), 2 bad usage or a failed run.
set -uo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin_a=$1 bin_b=$2
shift 2
for b in "$bin_a" "$bin_b"; do
  [ -x "$b" ] || { echo "replay_check: $b is not an executable" >&2; exit 2; }
done
for arg in "$@"; do
  case $arg in --out|--out=*|--measurements|--measurements=*)
    echo "replay_check: $arg is set by the script (each run writes its own folder and store)" >&2; exit 2;; esac
done
# The binaries find ../shared beside the checkout (as the tests do) wherever this is run from.
if [ -z "${STEPTP_SHARED:-}" ] && [ -d "$(dirname "$0")/../../shared" ]; then
  STEPTP_SHARED=$(cd "$(dirname "$0")/../../shared" && pwd)
  export STEPTP_SHARED
fi
command -v sqlite3 >/dev/null || { echo "replay_check: needs sqlite3 (Debian: sqlite3)" >&2; exit 2; }
work=${WORK:-$(mktemp -d /tmp/replay-check.XXXXXX)}
mkdir -p "$work"
folders="A B C"
[ -n "${STORE:-}" ] && folders="B C"
for d in $folders; do
  [ -e "$work/$d" ] && { echo "replay_check: $work/$d exists: use a fresh WORK" >&2; exit 2; }
done

run() {  # BIN DIR: one generate run into DIR, its output in DIR.log
  local bin=$1 dir=$2
  echo "replay_check: $bin generate ${*:3} --out $dir" >&2
  if ! "$bin" generate "${@:3}" --out "$dir" --quiet >"$dir.log" 2>&1; then
    echo "replay_check: the run into $dir failed:" >&2
    tail -5 "$dir.log" >&2
    exit 2
  fi
}

if [ -n "${STORE:-}" ]; then
  [ -f "$STORE" ] || { echo "replay_check: STORE=$STORE does not exist" >&2; exit 2; }
  store=$STORE
else
  run "$bin_a" "$work/A" "$@"
  store=$work/A/measurements.sqlite
fi
# SQLite's own copy: it includes what a store's write-ahead log still holds.
for d in B C; do
  mkdir -p "$work/$d"
  [ -f "$store" ] && sqlite3 "$store" ".backup '$work/$d/measurements.sqlite'"
done
run "$bin_a" "$work/B" "$@"
run "$bin_b" "$work/C" "$@"

# A store's facts (key, payload), sorted: the file's bytes depend on SQLite's page layout.
facts() { [ -f "$1" ] && sqlite3 "$1" 'SELECT key, payload FROM measurements ORDER BY key'; }
# A checkpoint's finished roots without their wall times.
roots() { sqlite3 "$1" "SELECT idx, key, json_remove(payload, '$.timing') FROM roots ORDER BY idx"; }

status=0
echo "replay_check: exported files (diff -r, stores and checkpoints apart):"
if diff -r -q -x '*.sqlite' -x '*.sqlite-*' "$work/B" "$work/C"; then
  echo "  identical: $(cd "$work/C" && find . -type f ! -name '*.sqlite*' | wc -l) files"
else
  status=1
fi
if [ "$(facts "$work/B/measurements.sqlite" | sha256sum)" = "$(facts "$work/C/measurements.sqlite" | sha256sum)" ]; then
  echo "  measurement stores: the same $(facts "$work/C/measurements.sqlite" | wc -l) facts"
else
  echo "  measurement stores differ" && status=1
fi
if [ "$(roots "$work/B/checkpoint.sqlite" | sha256sum)" = "$(roots "$work/C/checkpoint.sqlite" | sha256sum)" ]; then
  echo "  checkpoints: the same $(roots "$work/C/checkpoint.sqlite" | wc -l) roots (timings apart)"
else
  echo "  checkpoints differ (timings apart)" && status=1
fi
new=$(comm -13 <(facts "$store" | sort) <(facts "$work/B/measurements.sqlite" | sort) | wc -l)
[ "$new" -gt 0 ] && echo "replay_check: note: the replay timed $new fact(s) the store lacked (re-drawn), so B may differ from A"
[ $status -eq 0 ] && echo "replay_check: B ($bin_a) and C ($bin_b) are identical ($work)" ||
  echo "replay_check: B ($bin_a) and C ($bin_b) DIFFER ($work)"
exit $status
