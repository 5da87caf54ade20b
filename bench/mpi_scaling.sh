#!/usr/bin/env bash
# records/min of `steptp generate` on 1 and 2 MPI ranks (and, for comparison, one process with
# --jobs 2), measured one after the other in one run with the same options, then the projection
# to 64 nodes from the 1-rank run's per-root costs (bench/mpi_projection.py; docs/mpi.md).
#
#   bench/mpi_scaling.sh [-e STEPTP] [-o OUT] [-r ROUNDS] [-- GENERATE OPTIONS...]
#
# Default options: the main job's default run with --cost model (--seed 0). Each rank and each
# process runs one worker (--jobs 1) except the --jobs 2 row. ROUNDS (1) repeats the three runs
# in turn; the table gives each run. The output folders stay in OUT (default
# /tmp/steptp-mpi-scaling) for mpi_projection.py.
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=build/src/steptp OUT=/tmp/steptp-mpi-scaling ROUNDS=1
while getopts "e:o:r:" opt; do
  case $opt in
    e) EXE=$OPTARG ;;
    o) OUT=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--cost model --seed 0)
command -v mpirun >/dev/null || { echo "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
MPIRUN=(mpirun -n 2 --bind-to none --mca btl self,vader)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
[ "$(nproc)" -ge 2 ] || MPIRUN+=(--oversubscribe)
export OMPI_MCA_btl_vader_single_copy_mechanism=none

rm -rf "$OUT"
mkdir -p "$OUT"
run() {  # NAME JOBS COMMAND...: one generate run into OUT/NAME, its --json summary into OUT/NAME.json
  local name=$1 jobs=$2
  shift 2
  echo "mpi_scaling: $name ..." >&2
  "$@" generate --out "$OUT/$name" --jobs "$jobs" "${ARGS[@]}" --json >"$OUT/$name.log" 2>&1
  grep '^{' "$OUT/$name.log" | tail -1 >"$OUT/$name.json"
}
for ((k = 1; k <= ROUNDS; ++k)); do
  run "r$k-1rank" 1 "$EXE"
  run "r$k-2ranks" 1 "${MPIRUN[@]}" "$EXE"
  run "r$k-1proc-jobs2" 2 "$EXE"
done

# Same work everywhere: the same roots, and (normally) the same bytes. Said, not fatal: a root
# whose search depends on the process's history (the roots searched before it in the same
# process) gives other bytes under another split of the roots, whatever the split's cause.
for d in "$OUT"/r*/; do
  for f in train.jsonl eval.jsonl steps.jsonl manifest.json stats.json; do
    cmp -s "$OUT/r1-1rank/$f" "$d/$f" || echo "mpi_scaling: warning: $d$f differs from r1-1rank" >&2
  done
done

echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "options: ${ARGS[*]}"
python3 - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = sorted(out.glob("r*.json"), key=lambda p: (p.stem.split("-", 1)[0], p.stat().st_mtime))
print("| run | ranks | jobs/rank | roots | records | wall s | records/min |")
print("|---|---:|---:|---:|---:|---:|---:|")
for p in rows:
    j = json.loads(p.read_text())
    jobs = 2 if p.stem.endswith("jobs2") else 1
    print(f"| {p.stem} | {j['ranks']} | {jobs} | {j['roots']} | {j['records']} | {j['wall_s']:.1f} | "
          f"{j['records_per_minute']:.0f} |")
EOF
echo
python3 bench/mpi_projection.py "$OUT/r1-1rank" --ranks 1,2,64
