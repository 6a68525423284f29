#!/usr/bin/env bash
# Benchmark of amp dashboard (never part of the tests): an SSOT of real
# traffic (share/gen-traffic.py, 8 records per task, committed by amp
# import), then, whole process:
#   1. the first generation of the site (every page);
#   2. a pass after one new message (an escalation on one task): its task
#      page, its group's page and the overview are rewritten, nothing else;
#   3. a pass with nothing new.
# At 1,000 and at AMP_BENCH_DASHBOARD_RECORDS (10,000; try 100000: a few
# minutes to build) messages, so that the cost of a regeneration can be
# compared with the size of the history (it should not grow with it):
# median of AMP_BENCH_DASHBOARD_ROUNDS (5) rounds for 2 and 3.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
RECORDS=${AMP_BENCH_DASHBOARD_RECORDS:-10000}
ROUNDS=${AMP_BENCH_DASHBOARD_ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-dashboard.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
export AMP_NOW=2026-03-01T00:00:00+00:00

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# bench N: N records; prints the three figures.
bench() {
	local n=$1 repo=$work/repo-$1 site=$work/site-$1 t0 t1 first i written
	git init -q "$repo" && git -C "$repo" config amp.checkRepo false
	(cd "$repo" && amp init > /dev/null)
	/usr/bin/python3 "$src/share/gen-traffic.py" "$n" "$work/records-$n.jsonl" /dev/null \
		"$(git -C "$repo" rev-parse refs/amp/messages)"
	amp import --repo "$repo" "$work/records-$n.jsonl" > /dev/null
	stamp t0; amp dashboard --repo "$repo" --out "$site" > /dev/null; stamp t1
	first=$(((t1 - t0) / 1000))
	: > "$work/one.times"; : > "$work/none.times"
	for ((i = 0; i < ROUNDS; i++)); do
		(cd "$repo" && amp escalate "$(printf 'T-2026-%04d' $((i * 7)))" --from coordinator \
			--type conflict --severity info --description "bench $i" > /dev/null)
		stamp t0
		amp dashboard --repo "$repo" --out "$site" --json > "$work/report.json"
		stamp t1
		written=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["written"]))' < "$work/report.json")
		echo $(((t1 - t0) / 1000)) >> "$work/one.times"
		[ "$written" = 3 ] || echo "bench-dashboard: WARNING: $written pages written after one message (want 3)" >&2
		stamp t0; amp dashboard --repo "$repo" --out "$site" > /dev/null; stamp t1
		echo $(((t1 - t0) / 1000)) >> "$work/none.times"
	done
	awk -v n="$n" -v tasks="$(find "$site/tasks" -name '*.html' | wc -l)" -v f="$first" -v o="$(med "$work/one.times")" \
		-v z="$(med "$work/none.times")" -v r="$ROUNDS" 'BEGIN {
		printf "amp dashboard, %d messages (%d task pages): first %.0f ms, after one new message %.1f ms, nothing new %.1f ms (median of %d)\n",
			n, tasks, f / 1000, o / 1000, z / 1000, r }'
}

bench 1000
bench "$RECORDS"
