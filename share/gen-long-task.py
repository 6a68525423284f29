#!/usr/bin/env python3
"""A git fast-import stream of one commit on refs/amp/messages (on top of
PARENT) adding task TASK of N records (a commit per record, at its time) in LAYOUT (1 or 2, store.h "Layout"):
dispatches each ACKed, then (with --review) a task_result and a
review_request, each ACKed, so that a review_verdict can follow.  For
test/35-layout.bats and share/bench-layout.sh: a long task in seconds,
where amp import of 10,000 records into one task takes many minutes.

usage: gen-long-task.py LAYOUT N TASK PARENT [--review] | git fast-import
       gen-long-task.py LAYOUT N --tasks PARENT | git fast-import
The second form adds N tasks T-2026-000001.. of one dispatch each instead:
an SSOT of N tasks, whose year tree is what layout 2 fans out.
"""
import datetime
import json
import sys

layout, n, task, parent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
review = "--review" in sys.argv[5:]
many = task == "--tasks"
t0 = 1772000000000
out = sys.stdout.buffer


def ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S+00:00")


def task_dir():
    year, digits = task[2:6], task[7:]
    shard = digits[:-2]
    if layout == 1:
        return "tasks/%s/%s/%s" % (year, shard, task)
    if len(shard) <= 2:
        return "tasks/%s/0/%s/%s" % (year, shard, task)
    return "tasks/%s/%s/%s/%s" % (year, shard[:-2], shard[-2:], task)


def path(seq, kind, rid):
    name = "%06d.%s.%s.json" % (seq, kind, rid)
    if layout == 1:
        return "%s/%s" % (task_dir(), name)
    d = "%06d" % seq
    return "%s/%s/%s/%s" % (task_dir(), d[0:2], d[2:4], name)


first = [True]


def put(seq, kind, rid, rec):
    data = json.dumps(rec).encode()
    if not many:
        # a commit per record, at the record's own time: no record is far
        # from the commit that brought it (amp watch's clock check,
        # amp.maxClockSkew, would escalate each one)
        when = int(datetime.datetime.fromisoformat(rec["timestamp"]).timestamp())
        subject = b"planted %s" % rid.encode()
        out.write(b"commit refs/amp/messages\ncommitter amp <amp@amp.invalid> %d +0000\n"
                  b"data %d\n%s\n" % (when, len(subject), subject))
        if first[0]:
            out.write(b"from %s\n" % parent.encode())
            first[0] = False
    out.write(b"M 100644 inline %s\ndata %d\n" % (path(seq, kind, rid).encode(), len(data)))
    out.write(data + b"\n")


def msg(mtype, ms, frm, to, payload, ack=True):
    return {"protocol_version": "AMP/1.0", "msg_id": "%s-%s-%d" % (mtype, task, ms),
            "type": mtype, "from": frm, "to": to, "task_id": task, "timestamp": ts(ms),
            "requires_ack": ack, "payload": payload}


def ack(m, ms):
    return {"protocol_version": "AMP/1.0", "type": "ack", "ack_for": m["msg_id"],
            "task_id": task, "from": m["to"], "to": m["from"], "timestamp": ts(ms)}


dispatch = {"description": "long", "repo": "/tmp/amp-layout1-work", "branch": "feature/long",
            "subtasks": [{"subtask_id": task + "-S1", "description": "one", "estimated_lines": 1}],
            "acceptance_criteria": ["it works"], "risk_level": "low"}
if many:
    out.write(b"commit refs/amp/messages\ncommitter amp <amp@amp.invalid> 1772000000 +0000\n"
              b"data 17\nplanted long task\nfrom %s\n" % parent.encode())
seq, ms = 0, t0
pairs = 0 if many else (n - (4 if review else 0)) // 2
for i in range(n if many else 0):
    task = "T-2026-%06d" % (i + 1)
    d = msg("task_dispatch", t0 + i, "coordinator", "executor",
            dict(dispatch, subtasks=[dict(dispatch["subtasks"][0], subtask_id=task + "-S1")]))
    put(1, "msg", d["msg_id"], d)
for i in range(pairs):
    ms = t0 + i * 60000
    d = msg("task_dispatch", ms, "coordinator", "executor", dispatch)
    put(seq + 1, "msg", d["msg_id"], d)
    put(seq + 2, "ack", d["msg_id"], ack(d, ms + 5000))
    seq += 2
if review:
    ms += 60000
    r = msg("task_result", ms, "executor", "coordinator", {
        "subtask_id": task + "-S1", "completion_status": "complete",
        "diff_summary": {"files_changed": ["a.c"], "lines_added": 1, "lines_removed": 0},
        "self_assessment": {"criteria_met": [True], "notes": ["ok"]},
        "work_log": [{"timestamp": ts(ms), "action": "edit", "file": "a.c", "detail": "done"}],
        "commit_hash": "a3f8d21"})
    put(seq + 1, "msg", r["msg_id"], r)
    put(seq + 2, "ack", r["msg_id"], ack(r, ms + 5000))
    ms += 60000
    q = msg("review_request", ms, "coordinator", "reviewer", {
        "original_dispatch_ref": d["msg_id"], "task_result_ref": r["msg_id"],
        "review_scope": "full", "diff_url": "https://example.invalid/compare", "reject_count": 0})
    put(seq + 3, "msg", q["msg_id"], q)
    put(seq + 4, "ack", q["msg_id"], ack(q, ms + 5000))
out.write(b"\n")
