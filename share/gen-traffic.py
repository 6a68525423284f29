#!/usr/bin/env python3
# gen-traffic.py RECORDS LINES STREAM PARENT [TASK0]: real AMP traffic (per
# task: dispatch, ACK, result, ACK, review_request, ACK, verdict, ACK; tasks
# T-2026-<TASK0>, T-2026-<TASK0+1>, ...) as JSON lines for amp import
# (LINES), and as a git fast-import stream of one commit per record on
# PARENT with the bytes and paths amp writes (STREAM; /dev/null to skip).
# The paths are layout AMP_GEN_LAYOUT's (1 by default; 2: store.h "Layout").
# Used by share/bench-import.sh, share/bench-table.sh and test/89-import.bats.
import datetime, json, os, sys
layout = int(os.environ.get("AMP_GEN_LAYOUT", "1"))
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
n = int(sys.argv[5]) if len(sys.argv) > 5 else 0
written = 0
while written < records:
    task = f"T-2026-{n:04d}"
    shard = f"{n:04d}"[:-2]  # amp_store_task_dir: the number but its last two digits
    if layout == 1:
        d = f"tasks/2026/{shard}/{task}"
    elif len(shard) <= 2:
        d = f"tasks/2026/0/{shard}/{task}"
    else:
        d = f"tasks/2026/{shard[:-2]}/{shard[-2:]}/{task}"
    def rec(seq):
        s = f"{seq:06d}"
        return f"{d}/{s}" if layout == 1 else f"{d}/{s[0:2]}/{s[2:4]}/{s}"
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
        commit(f"{rec(seq)}.msg.{mid}.json", doc, frm, f"{kind} {task} {frm} -> {to}", ms)
        seq += 1
        ack = {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": mid, "task_id": task,
               "from": to, "to": frm, "timestamp": ts(ms + 5000)}
        commit(f"{rec(seq)}.ack.{mid}.json", ack, to, f"ack {mid} {to} -> {frm}", ms + 5000)
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
