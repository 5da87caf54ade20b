#!/usr/bin/env bash
# scripts/replay_check.sh (docs/dataset.md): one binary against itself replays into identical
# folders (exit 0); a binary whose stats.json gains a byte is caught, the file named (exit 1); a
# missing binary or an --out of the caller's is refused (exit 2). Needs STEPTP_EXE.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../../scripts/replay_check.sh
exe=${STEPTP_EXE:?set STEPTP_EXE to the steptp executable}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--profile quick --programs 1 --composites 0 --no-examples --cost model --seed 1)
fail() { echo "FAIL: $*" >&2; exit 1; }

WORK=$tmp/same "$check" "$exe" "$exe" "${args[@]}" >"$tmp/same.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/same.log" >&2; fail "the same binary twice: exit $rc, want 0"; }
grep -q "are identical" "$tmp/same.log" || fail "no verdict in: $(cat "$tmp/same.log")"

# A test double: steptp, then one byte more in the stats.json of the folder it wrote.
cat >"$tmp/changed.sh" <<EOS
#!/usr/bin/env bash
"$exe" "\$@"; rc=\$?
prev=""; for a in "\$@"; do [ "\$prev" = --out ] && out=\$a; prev=\$a; done
echo >>"\$out/stats.json"; exit \$rc
EOS
chmod +x "$tmp/changed.sh"
WORK=$tmp/changed "$check" "$exe" "$tmp/changed.sh" "${args[@]}" >"$tmp/changed.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/changed.log" >&2; fail "a changed stats.json: exit $rc, want 1"; }
grep -q "stats.json differ" "$tmp/changed.log" || fail "stats.json not named in: $(cat "$tmp/changed.log")"

"$check" "$tmp/no-such-binary" "$exe" "${args[@]}" 2>/dev/null
[ $? -eq 2 ] || fail "a missing binary: want exit 2"
"$check" "$exe" "$exe" "${args[@]}" --out "$tmp/x" 2>/dev/null
[ $? -eq 2 ] || fail "--out given: want exit 2"
echo "replay_check_test: ok"
