#!/usr/bin/env bash
# Benchmark of amp import (never part of the tests): the same records,
# real traffic (per task: dispatch, ACK, result, ACK, review_request, ACK,
# verdict, ACK), written two ways into fresh SSOTs, one commit per record in
# the layout tasks/<YYYY>/<S>/<task>/<seq>.<kind>.<id>.json:
#   1. git fast-import, from a stream of those commits (the floor: no
#      checks, one pack);
#   2. amp import, from the same records as JSON lines (every record checked
#      by the schema and the write-time rules).
# Whole process, median of AMP_BENCH_IMPORT_ROUNDS rounds side by side;
# prints msgs/s for both and their ratio (target: amp import at least 0.5x).
# AMP_BENCH_IMPORT_RECORDS (10000) sets the size; 8 records per task.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
RECORDS=${AMP_BENCH_IMPORT_RECORDS:-10000}
ROUNDS=${AMP_BENCH_IMPORT_ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-import.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
export AMP_NOW=2026-03-01T00:00:00+00:00

now_ns() { date +%s%N; }

# fresh DIR: an SSOT made by amp init, whose dispatches may name a
# repository on another machine.
fresh() {
	rm -rf "$1" && git init -q "$1" && git -C "$1" config amp.checkRepo false &&
		(cd "$1" && amp init > /dev/null)
}

# gen RECORDS LINES STREAM PARENT: the records as JSON lines (for amp
# import) and as a fast-import stream of one commit each on PARENT, with
# the same bytes as amp writes them.
gen() {
	/usr/bin/python3 - "$@" <<'PY'
import datetime, json, sys
records, lines_path, stream_path, parent = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
t0 = 1772116327000  # 2026-02-26T14:32:07Z
def ts(ms):
    # amp_time_format: milliseconds only when there are some
    t = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return t + (".%03d" % (ms % 1000) if ms % 1000 else "") + "+00:00"
lines = open(lines_path, "w")
stream = open(stream_path, "wb")
mark = 0
def commit(path, doc, author, subject, ms):
    global mark
    line = json.dumps(doc, separators=(",", ":"))
    lines.write(line + "\n")
    data = (json.dumps(doc, indent=2) + "\n").encode()
    mark += 1
    msg = subject.encode()
    s = stream
    s.write(b"commit refs/amp/messages\n")
    s.write(f"author {author} <{author}@amp.invalid> {ms // 1000} +0000\n".encode())
    s.write(f"committer amp <amp@amp.invalid> {ms // 1000} +0000\n".encode())
    s.write(f"data {len(msg)}\n".encode() + msg + b"\n")
    if mark == 1:
        s.write(f"from {parent}\n".encode())
    s.write(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
n = 0
written = 0
while written < records:
    task = f"T-2026-{n:04d}"
    d = f"tasks/2026/{n:04d}"[:-2] + f"/{task}"  # amp_store_task_dir: the number but its last two digits
    seq = 0
    base = t0 + n * 1000
    def msg(kind, frm, to, ms, payload, extra=None):
        global seq, written
        seq += 1
        mid = f"{kind}-{task}-{ms}"
        doc = {"protocol_version": "AMP/1.0", "msg_id": mid, "type": kind, "from": frm, "to": to,
               "task_id": task, "timestamp": ts(ms), "requires_ack": True}
        doc.update(extra or {})
        doc["payload"] = payload
        commit(f"{d}/{seq:06d}.msg.{mid}.json", doc, frm, f"{kind} {task} {frm} -> {to}", ms)
        seq += 1
        ack = {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": mid, "task_id": task,
               "from": to, "to": frm, "timestamp": ts(ms + 5000)}
        commit(f"{d}/{seq:06d}.ack.{mid}.json", ack, to, f"ack {mid} {to} -> {frm}", ms + 5000)
        written += 2
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
        "confidence": 0.875}, {"context_ref": [Q]})  # exact in binary: jansson prints %.17g
    n += 1
PY
}

fresh base
parent=$(git -C base rev-parse refs/amp/messages)
gen "$RECORDS" records.jsonl records.fi "$parent"
records=$(wc -l < records.jsonl)

: > fi.times
: > amp.times
for ((r = 0; r < ROUNDS; r++)); do
	rm -rf fi amp && cp -a base fi && cp -a base amp
	t0=$(now_ns); git -C fi fast-import --quiet < records.fi; t1=$(now_ns)
	echo $(((t1 - t0) / 1000)) >> fi.times
	t0=$(now_ns); amp import --repo amp records.jsonl > /dev/null; t1=$(now_ns)
	echo $(((t1 - t0) / 1000)) >> amp.times
done
# The same records, in the same places.
[ "$(git -C fi ls-tree -r refs/amp/messages | awk '{print $4}' | sort | md5sum)" = \
  "$(git -C amp ls-tree -r refs/amp/messages | awk '{print $4}' | sort | md5sum)" ] ||
	echo "bench-import: WARNING: the two SSOTs differ" >&2
(cd amp && amp fsck > /dev/null) || echo "bench-import: WARNING: amp fsck is not clean" >&2
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
fi_us=$(med fi.times)
amp_us=$(med amp.times)
awk -v n="$records" -v f="$fi_us" -v a="$amp_us" -v r="$ROUNDS" 'BEGIN {
	printf "git fast-import, %d records (one commit each): %.0f ms, %.0f msgs/s\n", n, f / 1000, n / (f / 1e6)
	printf "amp import, the same records (checked): %.0f ms, %.0f msgs/s: %.2fx fast-import (target 0.5x; median of %d rounds)\n",
		a / 1000, n / (a / 1e6), f / a, r }'
