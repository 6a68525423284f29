#!/usr/bin/env bash
# Benchmark of amp show and amp log (never part of the tests).  For each
# size, an SSOT of N messages (N/2 tasks, each a dispatch and a result,
# each ACKed: 2N records, one commit each) is written with git
# fast-import, then the whole-process median of 20 runs of:
#   amp show MSG --json       one blob of one task directory
#   amp show MSG              the task's records, for the ACK state
#   amp show MSG --context    the result and the dispatch it names
#   amp log -n 20             the newest records: the walk stops early
#   amp log --task T          every commit, comparing one task's directory
#                             (3 runs: it walks the whole history)
# Sizes: AMP_BENCH_SHOW_SIZES (default "1000 100000" messages).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
export AMP_NOW=2026-03-01T00:00:00+00:00
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-show.XXXXXX")
trap 'rm -rf "$work"' EXIT

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
now_ns() { stamp REPLY; echo "$REPLY"; }

# median_ms RUNS CMD...: the median whole-process time of RUNS runs, in ms.
median_ms() {
	local i t0 runs=$1
	shift
	for ((i = 0; i < runs; i++)); do
		stamp t0
		"$@" > /dev/null
		echo $((($(now_ns) - t0) / 1000))
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'
}

# ssot N: a repository holding N messages; prints a task id and its result's msg_id.
ssot() {
	git init -q "$work/$1" && cd "$work/$1"
	amp init > /dev/null
	/usr/bin/python3 - "$(($1 / 2))" "$(git rev-parse refs/amp/messages)" <<'PY' | git fast-import --quiet
import datetime, json, sys
tasks, parent = int(sys.argv[1]), sys.argv[2]
t0 = 1772116327000
out = sys.stdout.buffer
mark = 0
def ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
def commit(path, doc, subject, ms):
    global mark
    data = (json.dumps(doc, indent=2) + "\n").encode()
    mark += 1
    out.write(b"commit refs/amp/messages\nmark :%d\ncommitter amp <amp@amp.invalid> %d +0000\n" % (mark, ms // 1000))
    out.write(b"data %d\n%s\n" % (len(subject), subject.encode()))
    if mark == 1:
        out.write(b"from %s\n" % parent.encode())
    out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
for n in range(tasks):
    task = f"T-2026-{n:05d}"
    d = f"tasks/2026/{task[7:-2]}/{task}"
    ms = t0 + n * 1000
    disp = f"task_dispatch-{task}-{ms}"
    res = f"task_result-{task}-{ms + 500}"
    env = {"protocol_version": "AMP/1.0", "task_id": task, "requires_ack": True}
    commit(f"{d}/000001.msg.{disp}.json", dict(env, msg_id=disp, type="task_dispatch", **{"from": "coordinator", "to": "executor"},
           timestamp=ts(ms), ack_timeout_sec=300, payload={"description": "bench", "repo": "/nowhere", "branch": "feature/b",
           "subtasks": [{"subtask_id": f"{task}-S1", "description": "b", "estimated_lines": 1}],
           "acceptance_criteria": ["ok"], "risk_level": "low"}), f"task_dispatch {task}", ms)
    commit(f"{d}/000002.ack.{disp}.json", {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": disp, "task_id": task,
           "from": "executor", "to": "coordinator", "timestamp": ts(ms + 100)}, f"ack {disp}", ms + 100)
    commit(f"{d}/000003.msg.{res}.json", dict(env, msg_id=res, type="task_result", **{"from": "executor", "to": "coordinator"},
           timestamp=ts(ms + 500), ack_timeout_sec=120, context_ref=[disp], payload={"subtask_id": f"{task}-S1",
           "completion_status": "complete", "diff_summary": {"files_changed": ["a"], "lines_added": 1, "lines_removed": 0},
           "self_assessment": {"criteria_met": [True]}, "commit_hash": "abc1234"}), f"task_result {task}", ms + 500)
    commit(f"{d}/000004.ack.{res}.json", {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": res, "task_id": task,
           "from": "coordinator", "to": "executor", "timestamp": ts(ms + 600)}, f"ack {res}", ms + 600)
PY
	amp log -n 1 --type task_result --json | /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["task_id"], r["id"])'
}

for n in ${AMP_BENCH_SHOW_SIZES:-1000 100000}; do
	stamp t0
	read -r task msg < <(ssot "$n")
	cd "$work/$n"
	echo "amp show/log, $n messages ($((2 * n)) commits, written in $((($(now_ns) - t0) / 1000000)) ms), median of 20 runs (3 for log --task):"
	echo "  amp show --json            $(median_ms 20 amp show "$msg" --json) ms"
	echo "  amp show                   $(median_ms 20 amp show "$msg") ms"
	echo "  amp show --context         $(median_ms 20 amp show "$msg" --context) ms"
	echo "  amp log -n 20              $(median_ms 20 amp log -n 20) ms"
	echo "  amp log --task $task  $(median_ms 3 amp log --task "$task") ms"
	cd "$work"
	rm -rf "${work:?}/$n"
done
