#!/usr/bin/env bash
# Benchmark of the coordination reads (never part of the tests), on an SSOT
# of AMP_BENCH_AGENTS_RECORDS records (20000: 10,000 messages and their
# ACKs, 2,500 tasks, one commit each) built by share/gen-traffic.py and
# amp import, plus a few named instances (a dispatch by planner, alice's
# claim, two register records):
#   1. amp agents with no cache (the whole history walked, every task's
#      summary built), then on the unchanged SSOT (agents.json of the tip,
#      status.cache: no commit and no record read), then after one write
#      (the one commit since walked);
#   2. amp status (all tasks) on the unchanged SSOT (claims and waits_for
#      from status.cache);
#   3. amp show of the newest and of the oldest message (one walk of its
#      task's directory through the commits since it was added);
#   4. amp inbox executor with no cache (the writers of what waits found by
#      walking from the tip until found) and on the unchanged SSOT.
# Whole process, median of 9 runs (one run for the cold ones).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
RECORDS=${AMP_BENCH_AGENTS_RECORDS:-20000}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-agents.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }

# once CMD...: wall time of one run, in ms.
once() {
	local a b
	stamp a; "$@" > /dev/null; stamp b
	echo $(((b - a) / 1000000))
}

# median CMD...: median wall time of 9 runs, in ms.
median() {
	local i
	for ((i = 0; i < 9; i++)); do once "$@"; done | sort -n | sed -n 5p
}

git init -q ssot && cd ssot
amp init > /dev/null
git config amp.checkRepo false
/usr/bin/python3 "$src/share/gen-traffic.py" "$RECORDS" ../records.jsonl /dev/null \
	"$(git rev-parse refs/amp/messages)"
t=$(once amp import ../records.jsonl)
echo "SSOT of $RECORDS records ($(git rev-list --count refs/amp/messages) commits) imported in $t ms"
export AMP_NOW=2026-06-01T00:00:00+00:00
head -1 ../records.jsonl | /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["payload"]))' > ../dispatch.json
D=$(amp send task_dispatch --task T-2026-900001 --from coordinator --agent planner --payload ../dispatch.json)
amp claim T-2026-900001 --agent alice > /dev/null
amp register --agent alice --role executor --capability go > /dev/null
amp register --agent bob --role reviewer --from admin > /dev/null
OLD=$(head -1 ../records.jsonl | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["msg_id"])')
rm -f .git/amp/*.json
echo "  amp agents, no cache: $(once amp agents) ms; unchanged SSOT: median $(median amp agents) ms"
amp heartbeat T-2026-900001 --from executor --agent alice > /dev/null
echo "  amp agents after one write: $(once amp agents) ms"
amp status > /dev/null
echo "  amp status (all tasks), unchanged SSOT: median $(median amp status) ms"
echo "  amp show, newest message: median $(median amp show "$D") ms; oldest: median $(median amp show "$OLD") ms"
rm -f .git/amp/inbox.json
echo "  amp inbox executor, no cache: $(once amp inbox executor) ms; unchanged SSOT: median $(median amp inbox executor) ms"
