#!/usr/bin/env bats
# Issue 35, item 3: amp import at the speed of git fast-import.  Behaviour
# here, never speed (make bench-1m measures that): what an import writes is
# what git fast-import writes of the same records, at the same paths, in
# either layout, and both repositories pass git fsck --strict; the bench's
# records (share/gen-traffic.py) follow the layout of the SSOT they go on.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load fastimport

setup() {
	make_ssot
	git config amp.checkRepo false
}

teardown() {
	fsck_teardown
}

@test "amp import writes the tree git fast-import makes of the same records in layout 2 (gen-traffic's stream follows the layout), git fsck --strict clean" {
	[ "$(git show refs/amp/messages:amp-layout)" = 2 ]
	import_and_fast_import 416
	[ "$(git rev-parse 'refs/amp/messages^{tree}')" = \
	  "$(git -C "$BATS_TEST_TMPDIR/fi" rev-parse 'refs/amp/messages^{tree}')" ]
	# one commit per record on both sides
	[ "$(git rev-list --count refs/amp/messages)" = 417 ]
	[ "$(git -C "$BATS_TEST_TMPDIR/fi" rev-list --count refs/amp/messages)" = 417 ]
	# a record of the 52nd task sits in the fan-out of layout 2
	git cat-file -e 'refs/amp/messages:tasks/2026/0/00/T-2026-0051/00/00/000001.msg.task_dispatch-T-2026-0051-1772116378000.json'
	run git fsck --strict --no-dangling
	assert_success
	run amp fsck
	assert_success
}

@test "amp import writes the tree git fast-import makes of the same records in layout 1, git fsck --strict clean" {
	rm -rf .git/refs/amp .git/amp && git config amp.layout 1 && amp init > /dev/null
	run git cat-file -e refs/amp/messages:amp-layout
	assert_failure
	import_and_fast_import 160
	[ "$(git rev-parse 'refs/amp/messages^{tree}')" = \
	  "$(git -C "$BATS_TEST_TMPDIR/fi" rev-parse 'refs/amp/messages^{tree}')" ]
	git cat-file -e 'refs/amp/messages:tasks/2026/00/T-2026-0019/000008.ack.review_verdict-T-2026-0019-1772116526000.json'
	run git fsck --strict --no-dangling
	assert_success
}

@test "an import refused after it wrote its first pack (2,000 commits) leaves the ref where it was and the repository clean; the valid records import after" {
	# after the records (gen-traffic dates them from 2026-02-26T14:32:07Z)
	export AMP_NOW=2026-03-01T00:00:00Z
	$PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 2016 "$BATS_TEST_TMPDIR/l.jsonl" /dev/null 0
	# record 2,011 (a task_result) breaks the schema
	$PY - "$BATS_TEST_TMPDIR/l.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.loads(lines[2010]); d["payload"]["completion_status"] = "done-ish"
lines[2010] = json.dumps(d)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
	before=$(git rev-parse refs/amp/messages)
	packs=$(ls .git/objects/pack/*.pack | wc -l)
	run amp import "$BATS_TEST_TMPDIR/l.jsonl"
	assert_failure 1
	assert_output --partial "line 2011: /payload/completion_status"
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
	# the first 2,000 commits did reach a pack: nothing points at them
	[ "$(ls .git/objects/pack/*.pack | wc -l)" -gt "$packs" ]
	run git fsck --strict --no-dangling
	assert_success
	run amp fsck
	assert_success
	head -2008 "$BATS_TEST_TMPDIR/l.jsonl" > "$BATS_TEST_TMPDIR/ok.jsonl"
	run amp import "$BATS_TEST_TMPDIR/ok.jsonl"
	assert_success
	assert_output --partial "imported 2008 records"
	[ "$(git rev-list --count "$before..refs/amp/messages")" = 2008 ]
}

@test "an import keeps at most 24 MiB of objects in memory before it writes a pack: a layout-1 task of 1,600 records (trees of up to 1,600 entries, each written whole) imports under 64 MB, its packs laid end to end into one" {
	rm -rf .git/refs/amp .git/amp && git config amp.layout 1 && amp init > /dev/null
	git config amp.autoPack 0
	export AMP_NOW=2026-11-01T00:00:00Z
	$PY - "$BATS_TEST_TMPDIR/long.jsonl" <<'PY'
import datetime, json, sys
def ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
with open(sys.argv[1], "w") as f:
    for i in range(800):
        ms = 1780000000000 + i * 60000
        mid = "task_dispatch-T-2026-999998-%d" % ms
        f.write(json.dumps({"protocol_version": "AMP/1.0", "msg_id": mid, "type": "task_dispatch",
            "from": "coordinator", "to": "executor", "task_id": "T-2026-999998", "timestamp": ts(ms),
            "requires_ack": True, "payload": {"description": "bench", "repo": "/srv/bench",
            "branch": "feature/bench", "subtasks": [{"subtask_id": "S1", "description": "one",
            "estimated_lines": 1}], "acceptance_criteria": ["it works"], "risk_level": "low"}}) + "\n")
        f.write(json.dumps({"protocol_version": "AMP/1.0", "type": "ack", "ack_for": mid,
            "task_id": "T-2026-999998", "from": "executor", "to": "coordinator",
            "timestamp": ts(ms + 5000)}) + "\n")
PY
	packs=$(ls .git/objects/pack/*.pack | wc -l)
	run -0 /usr/bin/time -f 'maxrss=%M' amp import "$BATS_TEST_TMPDIR/long.jsonl"
	assert_line --partial "imported 1600 records"
	[[ ${lines[-1]} =~ ^maxrss=([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -lt 65536 ]
	[ "$(ls .git/objects/pack/*.pack | wc -l)" = $((packs + 1)) ]
	[ "$(git ls-tree refs/amp/messages tasks/2026/9999/T-2026-999998/ | wc -l)" = 1600 ]
	run git fsck --strict --no-dangling
	assert_success
}
