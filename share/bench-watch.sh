#!/usr/bin/env bash
# Benchmark of amp watch (never part of the tests): an SSOT of 10,000
# messages (2,500 tasks, each dispatch -> result -> review_request ->
# approved verdict, every one ACKed: 20,000 records, one commit each, dated
# as its record, as amp writes them) is written with git fast-import, then:
#   1. the first `amp watch --once`: a full scan, every message checked and
#      every commit of the history walked (when each record arrived);
#   2. `amp watch --once` on the unchanged SSOT: whole-process median of 20
#      runs (hyperfine when installed, else date +%s%N);
#   3. `amp watch --once` after one new message: median of 20 runs;
#   4. `amp fsck` on the same SSOT (every commit checked).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
TASKS=${AMP_BENCH_TASKS:-2500}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-watch.XXXXXX")
trap 'rm -rf "$work"' EXIT
git init -q "$work/repo" && cd "$work/repo"
amp init > /dev/null
# the bench dispatches name a repository on another machine
git config amp.checkRepo false
export AMP_NOW=2026-03-01T00:00:00+00:00

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
t0=0 t1=0 # set by stamp

stamp t0
/usr/bin/python3 - "$TASKS" "$(git rev-parse refs/amp/messages)" <<'PY' | git fast-import --quiet
import json, sys
tasks, parent = int(sys.argv[1]), sys.argv[2]
t0 = 1772116327000  # 2026-02-26T14:32:07Z
def ts(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
out = sys.stdout
mark = 0
def commit(path, doc, author, subject, ms):
    global mark, parent
    data = (json.dumps(doc, indent=2) + "\n").encode()
    mark += 1
    msg = subject.encode()
    out.write(f"commit refs/amp/messages\nmark :{mark}\ncommitter amp <amp@amp.invalid> {ms // 1000} +0000\n")
    out.write(f"data {len(msg)}\n"); out.flush(); sys.stdout.buffer.write(msg); out.write("\n")
    if mark == 1:
        out.write(f"from {parent}\n")
    out.write(f"M 100644 inline {path}\ndata {len(data)}\n"); out.flush()
    sys.stdout.buffer.write(data); out.write("\n")
for n in range(tasks):
    task = f"T-2026-{n:04d}"
    d = f"tasks/2026/{n // 100:02d}/{task}"  # amp_store_task_dir: S is the number but its last two digits
    seq = 0
    base = t0 + n * 1000
    def msg(kind, frm, to, ms, payload, extra=None):
        global seq
        seq += 1
        mid = f"{kind}-{task}-{ms}"
        doc = {"msg_id": mid, "protocol_version": "AMP/1.0", "type": kind, "from": frm, "to": to,
               "task_id": task, "timestamp": ts(ms), "requires_ack": True}
        doc.update(extra or {})
        doc["payload"] = payload
        commit(f"{d}/{seq:06d}.msg.{mid}.json", doc, frm, f"{kind} {task} {frm} -> {to}", ms)
        seq += 1
        ack = {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": mid, "task_id": task,
               "from": to, "to": frm, "timestamp": ts(ms + 5000)}
        commit(f"{d}/{seq:06d}.ack.{mid}.json", ack, to, f"ack {mid} {to} -> {frm}", ms + 5000)
        return mid
    D = msg("task_dispatch", "coordinator", "executor", base, {
        "description": "bench", "repo": "/srv/bench", "branch": "feature/bench",
        "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
        "acceptance_criteria": ["it works"], "risk_level": "low"})
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
        "confidence": 0.95}, {"context_ref": [Q]})
PY
stamp t1
msgs=$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')
echo "SSOT: $msgs messages, $(git rev-list --count refs/amp/messages) commits, written in $(((t1 - t0) / 1000000)) ms"

stamp t0
out=$(amp watch --once)
stamp t1
echo "amp watch --once, first pass (full scan of $msgs messages): $(((t1 - t0) / 1000000)) ms, $(printf '%s' "$out" | grep -c . || true) escalations"

median_ms() {  # median_ms CMD...: median wall time of 20 runs, in ms
	if command -v hyperfine > /dev/null; then
		hyperfine -N --warmup 2 --runs 20 --export-json "$work/h.json" "$*" > /dev/null 2>&1
		/usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1000))' "$work/h.json"
	else
		local i a b
		for ((i = 0; i < 20; i++)); do stamp a; "$@" > /dev/null; stamp b; echo $(((b - a) / 1000)); done |
			sort -n | sed -n 10p | awk '{printf "%.2f\n", $1 / 1000}'
	fi
}
echo "amp watch --once, unchanged SSOT of $msgs messages: median $(median_ms amp-watch --once) ms (whole process, 20 runs)"
if command -v strace > /dev/null; then
	strace -f -e trace=openat -o "$work/trace" amp-watch --once > /dev/null 2>&1 || true
	echo "  files opened by one unchanged pass: $(grep -v ENOENT "$work/trace" | grep -c 'openat') ($(grep -c '/objects/' "$work/trace" || true) in the object database)"
fi
stamp t0; amp fsck > /dev/null || true; stamp t1
echo "amp fsck, whole history of $msgs messages ($(git rev-list --count refs/amp/messages) commits): $(((t1 - t0) / 1000000)) ms"
amp send task_dispatch --task T-2027-001 --from coordinator --payload <(echo '{"description": "bench", "repo": "/srv/bench", "branch": "feature/bench", "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}], "acceptance_criteria": ["it works"], "risk_level": "low"}') > /dev/null
stamp t0; amp watch --once > /dev/null; stamp t1
echo "amp watch --once after one new message: $(((t1 - t0) / 1000000)) ms (reads that task only)"
