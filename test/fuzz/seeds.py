#!/usr/bin/python3
"""Writes the raw seed inputs of the fuzz targets, made from the test
fixtures, into OUT/<target>/ (default build/fuzz/seeds).  `make fuzz-seed`
then keeps, with libFuzzer's -merge=1, only those that add coverage to
test/fuzz/corpus/<target>/.

  validate  every fixture file as it is
  send      every message fixture alone, and the seed conversation (dispatch,
            ACK-less result, review request, verdicts, escalation) as one
            input of envelopes separated by lines "@@"
  store     the same messages as records of one task directory: "<file
            name>\\n<content>" parts separated by lines "@@"
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
SEP = b"\n@@\n"
CONVERSATION = ["seed-task_dispatch.json", "seed-task_result.json",
                "seed-review_request.json", "seed-review_verdict-rejected.json",
                "seed-escalation-hallucination-lock.json", "verdict-approved.json"]


def put(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def read(*path):
    with open(os.path.join(FIXTURES, *path), "rb") as f:
        return f.read()


def record(seq, data):
    """A stored record of a fixture, named the way amp names it."""
    try:
        doc = json.loads(data)
    except ValueError:
        return b"%06d.msg.junk.json\n" % seq + data
    if not isinstance(doc, dict):
        return b"%06d.msg.junk.json\n" % seq + data
    if doc.get("type") == "ack":
        kind, ident = "ack", doc.get("ack_for", "x")
    else:
        kind, ident = "msg", doc.get("msg_id", "x")
    return ("%06d.%s.%s.json\n" % (seq, kind, ident)).encode() + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/fuzz/seeds"
    files = []
    for sub in ("valid", "invalid", "python-differs", "lines"):
        for name in sorted(os.listdir(os.path.join(FIXTURES, sub))):
            if name.endswith((".json", ".jsonl")):
                files.append((sub, name))
    for sub, name in files:
        data = read(sub, name)
        put(out, "validate", data)
        if sub != "lines":
            put(out, "send", data)
            put(out, "store", record(1, data))
    convo = [read("valid", n) for n in CONVERSATION]
    put(out, "send", SEP.join(convo))
    put(out, "send", SEP.join([convo[0], convo[0]]))  # a duplicate
    acks = [read("valid", "ack-task_dispatch-by-executor.json")]
    put(out, "store", SEP.join(record(i + 1, d) for i, d in enumerate(convo[:1] + acks + convo[1:])))
    put(out, "store", SEP.join(record(i + 1, d) for i, d in enumerate(convo[:1])))
    put(out, "store", b"000001.ctl.resume.json\n{\"type\":\"resume\"}" + SEP + b"000002.msg.bad.json\n\xff")


main()
