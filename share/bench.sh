#!/usr/bin/env bash
# make bench: speed figures, never part of the tests.
#   amp send, whole process, median wall time of 50 sends, with 1k and then
#   10k messages already in the SSOT (10 messages per task, so 1,000 tasks
#   at 10k): the cost must not grow with history.
#   Then any share/bench-*.sh the other parts add.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
git init -q "$work/repo" && cd "$work/repo"
amp init > /dev/null
# the bench dispatches name a repository on another machine
git config amp.checkRepo false
cat > dispatch.json <<'JSON'
{"description": "bench", "repo": "/srv/bench", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
 "acceptance_criteria": ["it works"], "risk_level": "low"}
JSON

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }

# fill FROM TO: sends dispatches FROM..TO-1, ten per task.
fill() {
	local i
	for ((i = $1; i < $2; i++)); do
		amp send task_dispatch --task "$(printf 'T-2026-%04d' $((i / 10)))" \
			--from coordinator --payload dispatch.json > /dev/null
	done
}

# measure LABEL: median and p90 of 50 timed sends on a task of their own.
measure() {
	local i t0 t1 task
	: > "times"
	for ((i = 0; i < 50; i++)); do
		task=$(printf 'T-2027-%03d' $((i % 10)))
		stamp t0
		amp send task_dispatch --task "$task" --from coordinator --payload dispatch.json > /dev/null
		stamp t1
		echo $(( (t1 - t0) / 1000 )) >> "times"
	done
	sort -n times | awk -v label="$1" '{ v[NR] = $1 } END {
		printf "amp send with %s messages in the SSOT: median %.2f ms, p90 %.2f ms (%d sends)\n",
			label, v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9)] / 1000, NR }'
}

stamp t0; fill 0 1000; stamp t1
echo "filled 1,000 messages in $(((t1 - t0) / 1000000)) ms ($(((t1 - t0) / 1000000000)) s, sequential sends)"
measure 1k
fill 1000 10000
measure 10k
echo "objects: $(git count-objects -v | awk '/^count|^size:/ { printf "%s %s ", $1, $2 }')"

# contention: 8 concurrent writers x 500 messages (4,000), counting the
# compare-and-swap retries that the jittered backoff needed.
contend() {
	local i
	for ((i = 0; i < 500; i++)); do
		AMP_TRACE=1 amp send task_dispatch --task "$(printf 'T-2028-%03d' "$1")" \
			--from coordinator --payload dispatch.json 2>&1 > /dev/null |
			sed -n 's/^amp send: trace: retries=\([0-9]*\).*/\1/p'
	done > "retries.$1"
}
stamp t0
for w in 1 2 3 4 5 6 7 8; do contend $w & done
wait
stamp t1
cat retries.* | awk -v ms=$(((t1 - t0) / 1000000)) '{ n++; r += $1; if ($1 > m) m = $1 }
	END { printf "8 writers x 500 messages: %d sent in %.1f s, %d CAS retries in all (%.2f per message, worst %d)\n", n, ms / 1000, r, r / n, m }'
echo "history linear: $(git rev-list --min-parents=2 --count refs/amp/messages) merge commits, $(git rev-list --count refs/amp/messages) commits"

for extra in "$src"/share/bench-*.sh; do
	# the table is make bench's own
	[ "${extra##*/}" = bench-table.sh ] && continue
	[ -x "$extra" ] && "$extra"
done
exit 0
