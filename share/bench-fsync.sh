#!/usr/bin/env bash
# Benchmark of durable writes (never part of the tests): `amp send` into a
# fresh task with git config amp.fsync true (the default) and false, runs
# alternating, whole process, median and p90 of AMP_BENCH_FSYNC_ROUNDS
# (default 100) each, on the file system of TMPDIR.
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
rounds=${AMP_BENCH_FSYNC_ROUNDS:-100}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-fsync.XXXXXX")
trap 'rm -rf "$work"' EXIT
export AMP_NOW=2026-03-01T00:00:00+00:00 HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git init -q "$work/repo"
cat > "$work/d.json" <<JSON
{"description": "bench", "repo": "$work/repo", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "T-2026-044-S1", "description": "s", "estimated_lines": 1}],
 "acceptance_criteria": ["ok"], "risk_level": "low"}
JSON
for m in on off; do
	git init -q "$work/$m"
	(cd "$work/$m" && amp init > /dev/null)
	[ $m = on ] || git -C "$work/$m" config amp.fsync false
done
# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
a=0 b=0 # set by stamp
for ((r = 0; r < rounds; r++)); do
	for m in on off; do
		cd "$work/$m"
		stamp a
		amp send task_dispatch --task "T-2026-$((1000 + r))" --from coordinator --payload "$work/d.json" > /dev/null
		stamp b
		echo $(((b - a) / 1000)) >> "$work/$m.us"
	done
done
summary() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.2f %.2f\n", v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9)] / 1000 }'; }
read -r on50 on90 < <(summary "$work/on.us")
read -r off50 off90 < <(summary "$work/off.us")
echo
echo "## Durable writes: amp send with amp.fsync true (default) and false ($rounds rounds each, $(df -T "$work" | awk 'NR == 2 { print $2 }'))"
echo
echo "| figure | fsync on | fsync off | on/off |"
echo "|---|---|---|---|"
awk -v a="$on50" -v b="$off50" 'BEGIN { printf "| amp send, median ms | %s | %s | %.2f |\n", a, b, a / b }'
awk -v a="$on90" -v b="$off90" 'BEGIN { printf "| amp send, p90 ms | %s | %s | %.2f |\n", a, b, a / b }'
