#!/usr/bin/env bash
# Benchmark of the read side (never part of the tests): `amp inbox` on an
# unchanged SSOT of 1,000 and of 100,000 messages, and how soon `amp wait`
# wakes after a send.  Each SSOT is written with git fast-import: tasks of
# four messages (dispatch -> result -> review_request -> approved verdict),
# each ACKed except 25 dispatches (evenly spread), which stay in the
# executor's inbox at both sizes: an inbox holds what waits now, not a
# share of the history; one commit per task.  (The cost of an unchanged
# answer grows with the messages waiting for all roles, which the cache
# holds: about 12 us of CPU each, mostly parsing inbox.json.)
#   1. `amp inbox executor` once with no cache (built from the whole SSOT);
#   2. `amp inbox executor` on the unchanged SSOT: whole-process median of
#      20 runs (the targets: < 10 ms at 100k, at most 1.5x the 1k figure);
#   3. after one new message, one run (the cache caught up by a tree diff);
#   4. `amp wait admin` woken by an escalation: the time from the ref's
#      update (the loose ref file's mtime) to the waiting process's exit,
#      median of 10 (the target: < 100 ms).
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-read.XXXXXX")
trap 'rm -rf "$work"' EXIT
export AMP_NOW=2026-03-01T00:00:00+00:00

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
t0=0 t1=0 # set by stamp
now_ns() { stamp REPLY; echo "$REPLY"; }

# median_ms CMD...: median wall time of 20 runs, in ms.
median_ms() {
	local i a b
	for ((i = 0; i < 20; i++)); do stamp a; "$@" > /dev/null; stamp b; echo $(((b - a) / 1000)); done |
		sort -n | sed -n 10p | awk '{printf "%.2f\n", $1 / 1000}'
}

# ssot TASKS: a repository in $work/<TASKS> holding 4 x TASKS messages.
ssot() {
	git init -q "$work/$1" && cd "$work/$1"
	amp init > /dev/null
	git config amp.checkRepo false
	/usr/bin/python3 - "$1" "$(git rev-parse refs/amp/messages)" <<'PY' | git fast-import --quiet
import datetime, json, sys
tasks, parent = int(sys.argv[1]), sys.argv[2]
t0 = 1772116327000  # 2026-02-26T14:32:07Z
out = sys.stdout.buffer
def ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
def data(b):
    out.write(b"data %d\n" % len(b) + b + b"\n")
for n in range(tasks):
    num = f"{n:05d}"
    task = f"T-2026-{num}"
    d = f"tasks/2026/{num[:-2]}/{task}"  # the shard: the number without its last two digits
    base = t0 + n * 1000
    files, seq = [], 0
    def msg(kind, frm, to, ms, payload, acked=True, extra=None):
        global seq
        seq += 1
        mid = f"{kind}-{task}-{ms}"
        doc = {"msg_id": mid, "protocol_version": "AMP/1.0", "type": kind, "from": frm, "to": to,
               "task_id": task, "timestamp": ts(ms), "requires_ack": True, "ack_timeout_sec": 300}
        doc.update(extra or {})
        doc["payload"] = payload
        files.append((f"{d}/{seq:06d}.msg.{mid}.json", doc))
        if acked:
            seq += 1
            files.append((f"{d}/{seq:06d}.ack.{mid}.json",
                          {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": mid, "task_id": task,
                           "from": to, "to": frm, "timestamp": ts(ms + 5000)}))
        return mid
    D = msg("task_dispatch", "coordinator", "executor", base, {
        "description": "bench", "repo": "/srv/bench", "branch": "feature/bench",
        "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
        "acceptance_criteria": ["it works"], "risk_level": "low"}, acked=n % (tasks // 25) != 0)
    R = msg("task_result", "executor", "coordinator", base + 60000, {
        "subtask_id": "S1", "completion_status": "complete",
        "diff_summary": {"files_changed": ["a.c"], "lines_added": 1, "lines_removed": 0},
        "self_assessment": {"criteria_met": [True], "notes": ["ok"]},
        "work_log": [{"timestamp": ts(base + 30000), "action": "edit", "file": "a.c", "detail": "x"}]})
    Q = msg("review_request", "coordinator", "reviewer", base + 120000, {
        "original_dispatch_ref": D, "task_result_ref": R, "review_scope": "full",
        "diff_url": "https://example.invalid/compare", "reject_count": 0})
    msg("review_verdict", "reviewer", "coordinator", base + 180000, {
        "decision": "approved", "criteria_results": [{"criterion": "it works", "passed": True, "evidence": "ok"}],
        "confidence": 0.95}, extra={"context_ref": [Q]})
    subject = f"task {task}".encode()
    out.write(b"commit refs/amp/messages\ncommitter amp <amp@amp.invalid> %d +0000\n" % ((base + 185000) // 1000))
    data(subject)
    if n == 0:
        out.write(f"from {parent}\n".encode())
    for path, doc in files:
        out.write(f"M 100644 inline {path}\n".encode())
        data((json.dumps(doc, indent=2) + "\n").encode())
PY
}

declare -A unchanged
for tasks in 250 25000; do
	stamp t0; ssot $tasks; stamp t1
	msgs=$((tasks * 4))
	echo "SSOT of $msgs messages ($tasks tasks, $(git rev-list --count refs/amp/messages) commits) written in $(((t1 - t0) / 1000000)) ms"
	stamp t0; n=$(amp inbox executor --json | grep -c '"msg_id"'); stamp t1
	echo "  amp inbox executor, no cache (built from the whole SSOT): $(((t1 - t0) / 1000000)) ms, $n messages waiting"
	unchanged[$tasks]=$(median_ms amp-inbox executor)
	echo "  amp inbox executor, unchanged SSOT: median ${unchanged[$tasks]} ms (whole process, 20 runs; cache $(stat -c %s .git/amp/inbox.json) bytes)"
	amp escalate T-2027-001 --type conflict --severity info --description bench --from executor --no-suspend > /dev/null
	stamp t0; amp inbox admin > /dev/null; stamp t1
	echo "  amp inbox admin after one new message: $(((t1 - t0) / 1000000)) ms (the cache caught up by a tree diff)"
	if [ "$tasks" = 25000 ]; then
		: > "$work/wake"
		for ((i = 0; i < 10; i++)); do
			amp inbox admin --json | /usr/bin/python3 -c 'import json,sys; [print(m["msg_id"]) for m in json.load(sys.stdin)["messages"]]' |
				while read -r id; do amp ack "$id" --from admin > /dev/null; done
			( amp-wait admin > /dev/null; now_ns > "$work/woke" ) &
			sleep 0.3
			amp escalate T-2027-001 --type conflict --severity info --description "bench $i" --from executor --no-suspend > /dev/null
			wait
			/usr/bin/python3 -c 'import os,sys; print((int(open(sys.argv[1]).read()) - os.stat(sys.argv[2]).st_mtime_ns) / 1e6)' \
				"$work/woke" .git/refs/amp/messages >> "$work/wake"
		done
		echo "  amp wait admin woken by a send: median $(sort -n "$work/wake" | sed -n 5p | awk '{printf "%.2f", $1}') ms from the ref's update to the waiter's exit (10 runs; max $(sort -n "$work/wake" | tail -1 | awk '{printf "%.2f", $1}') ms)"
	fi
	cd "$work"
done
awk -v a="${unchanged[250]}" -v b="${unchanged[25000]}" 'BEGIN { printf "amp inbox, unchanged SSOT: 100k / 1k = %.2fx\n", b / a }'
