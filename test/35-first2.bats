#!/usr/bin/env bats
# Issue 35, item 2: first runs that do not replay the world, in bounded
# memory.  Memory is bounded with `ulimit -v` on SSOTs whose derived state
# is large per task (hostile records written with git, as a fetch brings
# them), so that what a first run holds at once shows at a test's size.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
}

# hostile_tasks FIRST COUNT: one commit on refs/amp/messages adding COUNT
# aborted tasks T-2026-FIRST..., each a dispatch (no ACK asked) whose
# timestamp is a string of 60,000 characters, and the admin's abort: each
# task's summary holds that string (amp status's "last").
hostile_tasks() {
	python3 - "$1" "$2" "$(git rev-parse refs/amp/messages)" "$(ssot_layout)" <<'PY' | git fast-import --quiet
import json, sys
first, count, parent, layout = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
out = sys.stdout.buffer
ts = "2026-02-26T14:32:07+00:00" + "x" * 60000
files = []
for k in range(count):
    n = first + k
    task = "T-2026-%d" % n
    s = str(n)[:-2]
    if layout == "1":
        d = "tasks/2026/%s/%s" % (s, task)
    else:
        d = "tasks/2026/%s/%s/%s/00/00" % (s[:-2] or "0", s[-2:], task)
    mid = "task_dispatch-%s-1772116327000" % task
    for name, doc in (("000001.msg.%s.json" % mid,
                       {"msg_id": mid, "protocol_version": "AMP/1.0", "type": "task_dispatch",
                        "from": "coordinator", "to": "executor", "task_id": task, "timestamp": ts,
                        "requires_ack": False, "payload": {"description": "d"}}),
                      ("000002.ctl.abort-1772116327000.json",
                       {"protocol_version": "AMP/1.0", "type": "abort", "task_id": task,
                        "from": "admin", "timestamp": "2026-02-26T14:32:07+00:00",
                        "reason": "dropped"})):
        data = json.dumps(doc).encode()
        files.append((d + "/" + name, len(files) + 1))
        out.write(b"blob\nmark :%d\ndata %d\n" % (len(files), len(data)) + data + b"\n")
msg = b"fetched: hostile tasks\n"
out.write(b"commit refs/amp/messages\ncommitter t <t@example.invalid> 1772116327 +0000\n")
out.write(b"data %d\n" % len(msg) + msg + b"from %s\n" % parent.encode())
for path, mark in files:
    out.write(b"M 100644 :%d %s\n" % (mark, path.encode()))
out.write(b"\n")
PY
}

@test "a first amp status holds a bounded part of the summaries it makes: 1,000 tasks of 60 KB summaries each (60 MB) listed under a 50 MB address-space limit, the cache written whole" {
	hostile_tasks 1000 1000
	run -0 bash -c "ulimit -v 50000 && amp status"
	assert_output "no open tasks; 1000 finished (amp status --all lists them)"
	# every task's summary in the cache, once, with its 60,000 characters
	run -0 awk -F '\t' 'NR > 1 { n[$1]++; if (length($9) < 60026) short++ }
		END { for (t in n) if (n[t] > 1) dup++; print length(n), dup + 0, short + 0 }' \
		"$(git rev-parse --git-common-dir)/amp/status.cache"
	assert_output "1000 0 0"
	# and read back
	run -0 bash -c "ulimit -v 50000 && amp status"
	assert_output "no open tasks; 1000 finished (amp status --all lists them)"
	run -0 amp status T-2026-1999
	assert_output --partial "aborted"
}
