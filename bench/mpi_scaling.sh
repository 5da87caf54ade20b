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
# /tmp/steptp-mpi-scaling) for mpi_projection.py. Measured runs (--cost measured, the tuned
# profiles): the roots are sized once (OUT/sizing, stopped before the search) and every run
# starts from a copy of that store (OUT/NAME.sqlite), so all runs hold the same roots (the
# headroom screen is a measurement too); after them a replay of the first 1-rank run's store on
# one process (OUT/replay: it times nothing, so what it spends outside the tuner's replay is
# rank 0's serial part, which mpi_projection.py --tuned reads). $STEPTP_TIMING_LOCK, when set,
# is passed on to the ranks.
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
[ -z "${STEPTP_TIMING_LOCK:-}" ] || MPIRUN+=(-x STEPTP_TIMING_LOCK)
export OMPI_MCA_btl_vader_single_copy_mechanism=none

rm -rf "$OUT"
mkdir -p "$OUT"
MEASURED=1
[[ " ${ARGS[*]} " != *" --cost model "* ]] || MEASURED=0
if [ $MEASURED = 1 ]; then
  echo "mpi_scaling: sizing ..." >&2
  rc=0
  "$EXE" generate --out "$OUT/sizing" "${ARGS[@]}" --stop-after 0 >"$OUT/sizing.log" 2>&1 || rc=$?
  [ $rc = 3 ] || { cat "$OUT/sizing.log" >&2; exit 1; }
fi
run() {  # NAME JOBS COMMAND...: one generate run into OUT/NAME (options ARGS, then EXTRA), its --json summary into OUT/NAME.json
  local name=$1 jobs=$2 store=()
  shift 2
  echo "mpi_scaling: $name ..." >&2
  if [ $MEASURED = 1 ] && [ -z "${EXTRA:-}" ]; then
    cp "$OUT/sizing/measurements.sqlite" "$OUT/$name.sqlite"
    store=(--measurements "$OUT/$name.sqlite")
  fi
  "$@" generate --out "$OUT/$name" --jobs "$jobs" "${ARGS[@]}" "${store[@]}" ${EXTRA:-} --json >"$OUT/$name.log" 2>&1
  grep '^{' "$OUT/$name.log" | tail -1 >"$OUT/$name.json"
}
for ((k = 1; k <= ROUNDS; ++k)); do
  run "r$k-1rank" 1 "$EXE"
  run "r$k-2ranks" 1 "${MPIRUN[@]}" "$EXE"
  run "r$k-1proc-jobs2" 2 "$EXE"
done

[ $MEASURED = 0 ] || EXTRA="--measurements $OUT/r1-1rank.sqlite" run replay 1 "$EXE"

# Same work everywhere: the same roots, and (normally) the same bytes. Said, not fatal: a root
# whose search depends on the process's history (the roots searched before it in the same
# process) gives other bytes under another split of the roots, whatever the split's cause.
# A measured run's bytes differ from run to run (other timings); its replay must equal the run.
[ $MEASURED = 0 ] || for f in train.jsonl eval.jsonl steps.jsonl manifest.json stats.json; do
  cmp -s "$OUT/r1-1rank/$f" "$OUT/replay/$f" || echo "mpi_scaling: warning: replay/$f differs from r1-1rank" >&2
done
[ $MEASURED = 1 ] || for d in "$OUT"/r*/; do
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
if [ $MEASURED = 1 ]; then
  python3 bench/mpi_projection.py "$OUT/r1-1rank" --ranks 1,2,64 --tuned "$OUT/replay.log"
else
  python3 bench/mpi_projection.py "$OUT/r1-1rank" --ranks 1,2,64
fi
