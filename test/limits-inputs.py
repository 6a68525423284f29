#!/usr/bin/python3
"""limits-inputs.py MODE OUT ARGS... - writes the inputs of test/51-limits.bats:
AMP/1.0 dispatches at and past the limits of lib/record/bounds.h and the schemas."""
import json
import sys

T = "T-2026-044"
TS = "2026-02-26T14:32:07+00:00"
MS = 1772116327000


def envelope(payload, task=T, msg_id=None, ts=TS):
    return {"msg_id": msg_id or f"task_dispatch-{task}-{MS}",
            "protocol_version": "AMP/1.0", "type": "task_dispatch",
            "from": "coordinator", "to": "executor", "task_id": task,
            "timestamp": ts, "requires_ack": True, "ack_timeout_sec": 300,
            "payload": payload}


def dispatch(**extra):
    p = {"description": "Bounds", "repo": "/srv/repos/app",
         "branch": "feature/bounds",
         "subtasks": [{"subtask_id": "S1", "description": "do it",
                       "estimated_lines": 1}],
         "acceptance_criteria": ["it works"], "risk_level": "low"}
    p.update(extra)
    return p


def stored(doc):
    # amp stores records as jansson's JSON_INDENT(2) plus a newline.
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def nest(levels):
    # `levels` nested objects: {"a": {"a": ... {} }}
    return json.loads('{"a": ' * (levels - 1) + "{}" + "}" * (levels - 1))


def main():
    mode, out = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if mode == "sized":
        # A dispatch stored as exactly N bytes.
        n = int(args[0])
        tc = {}
        doc = envelope(dispatch(tech_constraints=tc))
        if "--ms" in args:
            doc["msg_id"] = f"task_dispatch-{T}-{args[args.index('--ms') + 1]}"
        i = 0
        while len(stored(doc).encode()) < n:
            key = f"k{i}"
            tc[key] = ""
            room = n - len(stored(doc).encode())
            tc[key] = "x" * max(0, min(60000, room))
            i += 1
        assert len(stored(doc).encode()) == n, len(stored(doc).encode())
        text = stored(doc) if "--indented" in args else json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    elif mode == "deep":
        # A record whose deepest value is at level N (the record is 1,
        # the payload 2, tech_constraints 3).
        n = int(args[0])
        doc = envelope(dispatch(tech_constraints=nest(n - 2)))
        if "--payload" in args:
            doc = doc["payload"]
        text = json.dumps(doc)
    elif mode == "string":
        doc = envelope(dispatch(description="\u00e9" * int(args[0])))
        text = json.dumps(doc, ensure_ascii=False)
    elif mode == "key":
        doc = envelope(dispatch(tech_constraints={"k" * int(args[0]): 1}))
        text = json.dumps(doc)
    elif mode == "arrays":
        # every array and open object of a dispatch with N items
        n, only = int(args[0]), (args[1] if len(args) > 1 else None)
        p = dispatch()
        fields = {
            "subtasks": [{"subtask_id": f"S{i}", "description": "d",
                          "estimated_lines": 1} for i in range(n)],
            "acceptance_criteria": [f"c{i}" for i in range(n)],
            "forbidden_actions": [f"f{i}" for i in range(n)],
            "tech_constraints": {f"t{i}": i for i in range(n)},
        }
        for k, v in fields.items():
            if only is None or only == k:
                p[k] = v
        text = json.dumps(envelope(p))
    elif mode == "ids":
        task, msg_id, ts = args
        text = json.dumps(envelope(dispatch(), task=task, msg_id=msg_id, ts=ts))
    else:
        raise SystemExit("unknown mode " + mode)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


main()
