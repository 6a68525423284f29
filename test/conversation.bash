# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Payloads and steps of an AMP/1.0 conversation, for the store and message
# path suites.  Load after helpers.

T="T-2026-044"
T0=2026-02-26T14:32:07+00:00

# at SECONDS: sets AMP_NOW to T0 + SECONDS.
at() {
	AMP_NOW=$(date -u -d "@$((1772116327 + $1))" +%Y-%m-%dT%H:%M:%S+00:00)
	export AMP_NOW
}

# Writes the payload files into $BATS_TEST_TMPDIR/p/.
write_payloads() {
	local p=$BATS_TEST_TMPDIR/p
	mkdir -p "$p"
	cat > "$p/dispatch.json" <<'JSON'
{
  "description": "Reconstruct watchOS breathing engine timing logic",
  "repo": "@REPO@",
  "branch": "feature/watch-breath-v2",
  "subtasks": [
    {"subtask_id": "T-2026-044-S1", "description": "Replace Timer with WKExtendedRuntimeSession", "estimated_lines": 60}
  ],
  "acceptance_criteria": ["timing error < 500ms", "all tests passed", "no memory leak"],
  "risk_level": "medium"
}
JSON
	# AMP/1.0 §01 repo "must exist .git": the test's own repository.
	sed -i "s#@REPO@#$BATS_TEST_TMPDIR/repo#" "$p/dispatch.json"
	# The same task in two subtasks: it is approved when both are.
	python3 - "$p/dispatch.json" "$p/dispatch2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["subtasks"].append({"subtask_id": "T-2026-044-S2", "description": "Add applicationDidEnterBackground handling", "estimated_lines": 30})
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
	cat > "$p/result.json" <<'JSON'
{
  "subtask_id": "T-2026-044-S1",
  "completion_status": "complete",
  "diff_summary": {"files_changed": ["BreathEngine.swift"], "lines_added": 68, "lines_removed": 24},
  "self_assessment": {"criteria_met": [true, null, null], "notes": ["ok", "waiting for CI", "waiting for Instruments"]},
  "work_log": [{"timestamp": "2026-02-26T14:28:00Z", "action": "replace_timer", "file": "BreathEngine.swift", "detail": "Timer replaced"}],
  "commit_hash": "a3f8d21"
}
JSON
	sed 's/"T-2026-044-S1"/"T-2026-044-S2"/' "$p/result.json" > "$p/result2.json"
	cat > "$p/verdict.json" <<'JSON'
{
  "decision": "approved",
  "criteria_results": [
    {"criterion": "timing error < 500ms", "passed": true, "evidence": "measured 200ms"},
    {"criterion": "all tests passed", "passed": true, "evidence": "CI green"},
    {"criterion": "no memory leak", "passed": true, "evidence": "Instruments clean"}
  ],
  "confidence": 0.95
}
JSON
}

# review_request payload naming dispatch $1 and result $2, reject count $3.
review_payload() {
	cat > "$BATS_TEST_TMPDIR/p/review.json" <<JSON
{
  "original_dispatch_ref": "$1",
  "task_result_ref": "$2",
  "review_scope": "full",
  "diff_url": "https://example.invalid/compare/main...feature/watch-breath-v2",
  "reject_count": ${3:-0}
}
JSON
	echo "$BATS_TEST_TMPDIR/p/review.json"
}

# work_repo DIR SSOT: a work repository at DIR (branch main, one empty
# commit) whose amp.ssot is SSOT, named by the dispatch payload.
work_repo() {
	git init -q -b main "$1"
	git -C "$1" config user.name tester
	git -C "$1" config user.email tester@example.invalid
	git -C "$1" commit -q --allow-empty -m initial
	git -C "$1" config amp.ssot "$2"
	sed -i "s#\"repo\": \"[^\"]*\"#\"repo\": \"$1\"#" "$BATS_TEST_TMPDIR/p/dispatch.json"
}

# A fresh repository with an initialised SSOT and the payloads; cds into it.
make_ssot() {
	make_repo
	amp init > /dev/null
	# Each write is a pack; past 20 packs a write repacks.  In the
	# foreground, so that no repack still runs when a test reads the
	# object database with git (git fsck reports a pack deleted under it).
	# 91-pack tests the detached default.
	git config amp.autoPackDetach false
	write_payloads
	at 0
}

# dispatch; sets D.
send_dispatch() {
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
}

# The number of commits on the messages ref.
commit_count() {
	git rev-list --count refs/amp/messages
}

# The number of commits on the errors ref (a usage error adds none).
error_count() {
	git rev-list --count refs/amp/errors
}

# Asserts git fsck reports no problem (dangling objects are not problems).
assert_fsck_clean() {
	run git fsck --no-dangling
	assert_success
	refute_output --partial error
	refute_output --partial missing
	refute_output --partial broken
}

# teardown for suites that use make_ssot: whatever the test did, the
# repository it leaves must pass git fsck.
fsck_teardown() {
	fsck_all_repos
}

# aborted_tasks FIRST COUNT [PAD]: one commit on refs/amp/messages adding
# COUNT aborted tasks T-2026-FIRST..., each a dispatch (no ACK asked) and
# the admin's abort, written with git as a fetch brings them; the
# dispatch's timestamp is followed by PAD "x"s (default 0: a valid one).
aborted_tasks() {
	python3 - "$1" "$2" "${3:-0}" "$(git rev-parse refs/amp/messages)" "$(ssot_layout)" <<'PY' | git fast-import --quiet
import json, sys
first, count, pad, parent, layout = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
out = sys.stdout.buffer
ts = "2026-02-26T14:32:07+00:00" + "x" * pad
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
msg = b"fetched: aborted tasks\n"
out.write(b"commit refs/amp/messages\ncommitter t <t@example.invalid> 1772116327 +0000\n")
out.write(b"data %d\n" % len(msg) + msg + b"from %s\n" % parent.encode())
for path, mark in files:
    out.write(b"M 100644 :%d %s\n" % (mark, path.encode()))
out.write(b"\n")
PY
}
