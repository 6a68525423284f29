#!/usr/bin/env bats
# The SSOT store and the message path: amp init, send, ack, status, errors.

load helpers
load conversation

teardown() {
	fsck_teardown
}

setup() {
	make_ssot
}

@test "amp init creates both refs and touches nothing of the user's" {
	git init -q "$BATS_TEST_TMPDIR/other" && cd "$BATS_TEST_TMPDIR/other"
	git config user.name tester && git config user.email tester@example.invalid
	echo hello > file && git add file && git commit -qm first
	head=$(git rev-parse HEAD)
	run amp init
	assert_success
	assert_output --partial "Initialized AMP/1.0 store"
	git rev-parse --verify -q refs/amp/messages
	git rev-parse --verify -q refs/amp/errors
	assert_equal "$(git rev-parse HEAD)" "$head"
	assert_equal "$(git status --porcelain)" ""
	run amp init
	assert_success
	assert_output --partial "Already initialized"
	assert_equal "$(git rev-list --count refs/amp/messages)" 1
}

@test "amp init works on a bare repository named with --repo and AMP_REPO" {
	git init -q --bare "$BATS_TEST_TMPDIR/bare.git"
	cd /
	run amp init --repo "$BATS_TEST_TMPDIR/bare.git"
	assert_success
	AMP_REPO=$BATS_TEST_TMPDIR/bare.git run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	assert_output --regexp '^task_dispatch-T-2026-044-[0-9]+$'
	run git --git-dir="$BATS_TEST_TMPDIR/bare.git" log --format=%s refs/amp/messages
	assert_line --index 0 "task_dispatch T-2026-044 coordinator -> executor"
}

@test "send prints the msg_id and commits one message with subject, trailers and author" {
	run amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	assert_output "task_dispatch-T-2026-044-1772116327000"
	run git log -1 --format='%an|%s|%(trailers:key=Amp-Msg-Id,valueonly)' refs/amp/messages
	assert_output --partial "coordinator|task_dispatch T-2026-044 coordinator -> executor|task_dispatch-T-2026-044-1772116327000"
	run git show "refs/amp/messages:$(record_path T-2026-044 000001.msg.task_dispatch-T-2026-044-1772116327000.json)"
	assert_success
	assert_output --partial '"protocol_version": "AMP/1.0"'
	assert_output --partial '"timestamp": "2026-02-26T14:32:07+00:00"'
	assert_output --partial '"ack_timeout_sec": 300'
	assert_output --partial '"requires_ack": true'
	assert_fsck_clean
}

@test "each type gets its ACK defaults and --ack-timeout / --no-ack override them" {
	send_dispatch
	run amp send task_dispatch --task T-2026-045 --from coordinator --ack-timeout 42 --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	run amp status T-2026-045 --json
	assert_output --partial '"ack_deadline": "2026-02-26T14:32:49+00:00"'
	# AMP/1.0: "ACK Required on 4/5", so a dispatch cannot drop it
	run amp send task_dispatch --task T-2026-046 --from coordinator --no-ack --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	assert_output --partial "/requires_ack"
	run amp send escalation --task $T --from executor --payload <(echo '{"escalation_type":"conflict","severity":"info","triggered_by":"executor","description":"x","affected_msgs":[],"system_state_snapshot":{"task_status":"dispatched","reject_count":0,"last_successful_msg_id":null},"auto_suspended":false}')
	assert_success
	run git show "refs/amp/messages:$(record_path T-2026-044 000002.msg.$output.json)"
	assert_output --partial '"requires_ack": false'
	refute_output --partial ack_timeout_sec
	run amp status $T
	assert_output --partial "no ACK required"
	# an escalation may still ask for an ACK (ACK Optional)
	run amp send escalation --task $T --from executor --ack-timeout 900 --payload <(echo '{"escalation_type":"conflict","severity":"info","triggered_by":"executor","description":"y","affected_msgs":[],"system_state_snapshot":{"task_status":"dispatched","reject_count":0,"last_successful_msg_id":null},"auto_suspended":false}')
	assert_success
	run amp status $T --json
	assert_output --partial '"ack_deadline": "2026-02-26T14:47:07+00:00"'
}

@test "a whole task: dispatch, ACK, result, review, verdict, each ACKed" {
	send_dispatch
	at 5;  amp ack "$D" --from executor
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 70; amp ack "$R" --from coordinator
	at 80; Q=$(amp send review_request --task $T --from coordinator --context-ref "$D" --payload "$(review_payload "$D" "$R")")
	at 90; amp ack "$Q" --from reviewer
	at 200; V=$(amp send review_verdict --task $T --from reviewer --context-ref "$Q" --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	at 210; amp ack "$V" --from coordinator
	run amp status $T
	assert_success
	assert_line --index 0 --regexp "^T-2026-044  approved  rejects 0"
	assert_line "  2026-02-26 14:32:07 +0000  task_dispatch   coordinator -> executor     $D   acked after 5s"
	assert_output --partial "$R     acked after 10s"
	assert_output --partial "$Q  acked after 10s"
	assert_output --partial "$V  acked after 10s"
	assert_output --partial "escalations: none"
	# one commit per message and per ACK, on a linear history
	assert_equal "$(commit_count)" 9
	assert_equal "$(git rev-list --min-parents=2 --count refs/amp/messages)" 0
	run git log --format=%an refs/amp/messages
	assert_output "coordinator
reviewer
reviewer
coordinator
coordinator
executor
executor
coordinator
system"
	assert_fsck_clean
}

@test "the state follows the protocol: dispatched, in_progress, submitted, in_review, rejected" {
	send_dispatch
	run amp status $T --json; assert_output --partial '"state": "dispatched"'
	amp ack "$D" --from executor
	run amp status $T --json; assert_output --partial '"state": "in_progress"'
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	run amp status $T --json; assert_output --partial '"state": "submitted"'
	Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	run amp status $T --json; assert_output --partial '"state": "in_review"'
	/usr/bin/python3 - "$BATS_TEST_TMPDIR/p/verdict.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
v["decision"] = "rejected"
v["issues"] = [{"severity": "critical", "file": "a.swift", "line": 87, "description": "ARC", "suggested_fix": "keep a reference"}]
json.dump(v, open(sys.argv[1], "w"))
PY
	amp send review_verdict --task $T --from reviewer --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	run amp status $T --json
	assert_output --partial '"state": "rejected"'
	assert_output --partial '"reject_count": 1'
	send_dispatch
	run amp status $T --json; assert_output --partial '"state": "dispatched"'
}

@test "status --json has the documented fields" {
	send_dispatch
	run amp status $T --json
	assert_success
	run /usr/bin/python3 -c '
import json, sys
t = json.loads(sys.argv[1])
for k in ("task_id", "state", "reject_count", "suspended", "locked", "messages", "escalations"):
    assert k in t, k
m = t["messages"][0]
for k in ("msg_id", "type", "from", "to", "timestamp", "requires_ack", "acked", "ack_deadline", "ack_state"):
    assert k in m, k
assert m["ack_deadline"] == "2026-02-26T14:37:07+00:00", m
assert m["acked"] is False and m["ack_state"] == "pending"
print("fields ok")' "$output"
	assert_output "fields ok"
}

@test "AMP_NOW moves a pending ACK from due to overdue" {
	send_dispatch
	at 100
	run amp status $T
	assert_output --partial "ACK due in 3m"
	at 299
	run amp status $T
	assert_output --partial "ACK due in 1s"
	at 420
	run amp status $T
	assert_output --partial "ACK overdue 2m"
	run amp status $T --json
	assert_output --partial '"ack_state": "overdue"'
	run amp status
	assert_output --partial "ACK overdue"
}

@test "status without a task prints one line per task" {
	send_dispatch
	amp send task_dispatch --task T-2026-045 --from admin --to coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	run amp status
	assert_success
	assert_line --index 0 --regexp '^T-2026-044 +dispatched +1 msgs +0 rejects'
	assert_line --index 1 --regexp '^T-2026-045 +dispatched +1 msgs'
	run amp status --json
	assert_output --partial '"task_id": "T-2026-045"'
	run amp status T-2026-999
	assert_failure 2
	assert_output --partial "no task T-2026-999"
}

@test "two messages in the same millisecond get distinct msg_ids" {
	a=$(amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	b=$(amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	assert_equal "$a" task_dispatch-T-2026-044-1772116327000
	assert_equal "$b" task_dispatch-T-2026-044-1772116327001
	assert_equal "$(git ls-tree -r --name-only refs/amp/messages "$(task_path T-2026-044)/" | wc -l)" 2
}

@test "re-sending the same envelope is a no-op; the same msg_id with other content is refused" {
	send_dispatch
	git show "refs/amp/messages:$(record_path T-2026-044 000001.msg.$D.json)" > env.json
	before=$(commit_count)
	run amp send --envelope env.json
	assert_success
	assert_line "$D"
	assert_line "amp send: $D was already in the SSOT (nothing written)"
	assert_equal "$(commit_count)" "$before"
	sed 's/"risk_level": "medium"/"risk_level": "high"/' env.json > changed.json
	run amp send --envelope changed.json
	assert_failure 3
	assert_output --partial "/msg_id: $D is already in the SSOT with other content"
	assert_equal "$(commit_count)" "$before"
}

@test "a dispatch to main or master is refused with exit 3 and a branch_violation escalation" {
	for b in main master; do
		sed "s#feature/watch-breath-v2#$b#" "$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
		run amp send task_dispatch --task $T --from coordinator --payload d.json
		assert_failure 3
		assert_output --partial "/payload/branch: must not be \"main\" or \"master\""
	done
	run amp status $T --json
	assert_output --partial '"escalation_type": "branch_violation"'
	run git log --format='%an %s' refs/amp/messages
	assert_line --index 0 "system escalation T-2026-044 system -> admin"
	refute_output --partial "task_dispatch T-2026-044"
	run amp errors
	assert_output --partial "Branch Validation"
}

@test "the envelope's task must match the msg_id and the payload's references" {
	send_dispatch
	amp ack "$D" --from executor
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	git show "refs/amp/messages:$(record_path T-2026-044 000001.msg.$D.json)" |
		sed 's/"msg_id": "task_dispatch-T-2026-044-/"msg_id": "task_dispatch-T-2026-099-/' > env.json
	run amp send --envelope env.json
	assert_failure 3
	assert_output --partial "/msg_id: must be \"task_dispatch-T-2026-044-<unix_ms>\""
	amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	other=$(amp status T-2026-045 --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"][0]["msg_id"])')
	run amp send review_request --task $T --from coordinator --payload "$(review_payload "$other" "$R")"
	assert_failure 3
	assert_output --partial "/payload/original_dispatch_ref: $other does not belong to task T-2026-044"
}

@test "references must name messages in the SSOT (Context Completeness)" {
	send_dispatch
	run amp send task_dispatch --task $T --from coordinator --context-ref task_dispatch-T-2026-043-1 --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_output --partial "/context_ref/0: task_dispatch-T-2026-043-1 is not in the SSOT"
	run amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" task_result-T-2026-044-1)"
	assert_failure 3
	assert_output --partial "/payload/task_result_ref: task_result-T-2026-044-1 is not in the SSOT"
	run amp send review_request --task $T --from coordinator --payload "$(review_payload task_dispatch-T-2026-044-5 task_result-T-2026-044-1)"
	assert_failure 3
	assert_output --partial "/payload/original_dispatch_ref: task_dispatch-T-2026-044-5 is not in the SSOT"
	run amp errors --json
	assert_output --partial "Context Completeness"
}

@test "a task_result must answer a subtask of a dispatch, one criteria_met per criterion" {
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "/payload/subtask_id: T-2026-044-S1 is not a subtask of any task_dispatch of T-2026-044"
	send_dispatch
	sed 's/T-2026-044-S1/T-2026-044-S9/' "$BATS_TEST_TMPDIR/p/result.json" > r.json
	run amp send task_result --task $T --from executor --payload r.json
	assert_failure 3
	assert_output --partial "/payload/subtask_id: T-2026-044-S9 is not a subtask"
	# AMP/1.0 §01 ACK on Start: no result before the dispatch's ACK.
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "/payload/subtask_id: a task_result is refused while subtask T-2026-044-S1 is dispatched: its dispatch has no ACK: ACK the dispatch first"
	amp ack "$D" --from executor
	sed 's/\[true, null, null\]/[true, null]/' "$BATS_TEST_TMPDIR/p/result.json" > r.json
	run amp send task_result --task $T --from executor --payload r.json
	assert_failure 3
	assert_output --partial "/payload/self_assessment/criteria_met: has 2 entries; the dispatch $D has 3 acceptance criteria"
}

@test "from and to must fit the type" {
	run amp send task_result --task $T --from coordinator --to coordinator --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 1
	assert_output --partial "/from"
	run amp send task_dispatch --task $T --from coordinator --to reviewer --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	assert_output --partial "/to"
	run amp send task_dispatch --task $T --from executor --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	assert_output --partial "/from"
	run amp send escalation --task $T --from executor --to coordinator --payload /dev/null
	assert_failure
	assert_equal "$(commit_count)" 1
}

@test "a review_request needs a complete task_result" {
	send_dispatch
	amp ack "$D" --from executor
	sed 's/"completion_status": "complete"/"completion_status": "partial", "blockers": ["CI down"]/' "$BATS_TEST_TMPDIR/p/result.json" > r.json
	R=$(amp send task_result --task $T --from executor --payload r.json)
	run amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
	assert_failure 3
	assert_output --partial "/payload/task_result_ref: $R is not complete"
}

@test "a message that does not conform is refused with exit 1, naming the field, and logged" {
	sed 's/"risk_level": "medium"/"risk_level": "extreme"/' "$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 1
	assert_output --partial "amp send: error: /payload/risk_level:"
	# a bad --task is the user's typo, not a message: exit 2, not logged
	run amp send task_dispatch --task T-44 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: --task: 'T-44' is not a task id (T-YYYY-NNN)"
	printf '{"msg_id": \x00}' > nul.json
	run amp send --envelope nul.json
	assert_failure 1
	assert_output --partial "NUL byte"
	assert_equal "$(commit_count)" 1
	run amp errors --json
	assert_output --partial '"path": "/payload/risk_level"'
	refute_output --partial '"path": "/task_id"'
	id=$(amp errors --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["errors"][0]["id"])')
	amp errors --raw "$id" > back.bin
	cmp back.bin nul.json
	# garbage lives on its own ref, never in the message history
	run git log --format=%s refs/amp/messages
	assert_output "amp: SSOT created (AMP/1.0)"
}

@test "only the addressee may ACK; a second ACK is a no-op; an unknown message is refused" {
	send_dispatch
	run amp ack "$D" --from reviewer
	assert_failure 3
	assert_output --partial "/from: only the addressee (executor) may ACK $D, not reviewer"
	run amp ack "$D" --from executor
	assert_success
	assert_output "acked $D"
	before=$(commit_count)
	run amp ack "$D" --from executor
	assert_success
	assert_output "already acked $D"
	assert_equal "$(commit_count)" "$before"
	run amp ack task_dispatch-T-2026-044-1 --from executor
	assert_failure 3
	assert_output --partial "task_dispatch-T-2026-044-1 is not in the SSOT"
	run amp ack garbage --from executor
	assert_failure 2
	assert_output "amp ack: error: <msg_id>: 'garbage' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)"
	run git show "refs/amp/messages:$(record_path T-2026-044 000002.ack.$D.json)"
	assert_output --partial '"ack_for": "'"$D"'"'
	assert_output --partial '"from": "executor"'
	assert_output --partial '"to": "coordinator"'
}

@test "the role defaults to AMP_ROLE, then git config amp.role" {
	git config amp.role coordinator
	run amp send task_dispatch --task $T --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	D=$output
	AMP_ROLE=executor run amp ack "$D"
	assert_success
	git config --unset amp.role
	run amp send task_dispatch --task $T --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output --partial "--from is required"
}

@test "the refs are configurable through git config and must stay under refs/amp/" {
	git config amp.ref refs/amp/team-a
	amp init
	send_dispatch
	git rev-parse --verify -q refs/amp/team-a
	assert_equal "$(git rev-list --count refs/amp/messages)" 1
	git config amp.ref refs/heads/main
	run amp status
	assert_failure 2
	assert_output --partial "is not a ref under refs/amp/"
}

@test "exit codes: 2 for usage, 4 outside a repository or before init" {
	run amp send task_dispatch --bogus
	assert_failure 2
	assert_output --partial "usage: amp send"
	run amp send nonsense --task $T --from admin
	assert_failure 2
	run amp send task_dispatch --task $T --from coordinator --payload /nonexistent
	assert_failure 4
	run amp status --help
	assert_success
	assert_output --partial "usage: amp status"
	cd "$BATS_TEST_TMPDIR" && mkdir -p plain && cd plain
	run amp status
	assert_failure 4
	assert_output --partial "not a git repository"
	git init -q ../fresh && cd ../fresh
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 4
	assert_output --partial "run 'amp init'"
	run git for-each-ref refs/amp
	assert_output ""
}

@test "amp moves its ref as git does: a reflog git keeps (core.logAllRefUpdates always, or one it started) gets an entry per send; a packed ref moves too" {
	git config core.logAllRefUpdates always
	[ ! -e .git/logs/refs/amp/messages ]
	send_dispatch
	assert_equal "$(git reflog show refs/amp/messages | wc -l)" 1
	git config --unset core.logAllRefUpdates
	send_dispatch
	assert_equal "$(git reflog show refs/amp/messages | wc -l)" 2
	assert_equal "$(git reflog show --format=%H refs/amp/messages | head -1)" "$(git rev-parse refs/amp/messages)"
	rm -r .git/logs/refs/amp
	# only in packed-refs, then a loose file again
	git pack-refs --all
	[ ! -e .git/refs/amp/messages ]
	send_dispatch
	send_dispatch
	[ -e .git/refs/amp/messages ]
	assert_equal "$(commit_count)" 5
	[ ! -e .git/logs/refs/amp/messages ]
	[ ! -e .git/refs/amp/messages.lock ]
	run amp fsck
	assert_success
}

@test "a ref lock left by a killed writer is cleared and the send goes through" {
	send_dispatch
	touch -d '-1 minute' .git/refs/amp/messages.lock
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	assert_file_not_exists .git/refs/amp/messages.lock
	assert_equal "$(commit_count)" 3
}

@test "a fresh ref lock is not stolen: the writer retries, then gives up with exit 4" {
	git config amp.retryTimeout 0.3
	touch .git/refs/amp/messages.lock
	git config amp.staleLockTimeout 600
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 4
	assert_output --partial "stayed busy"
	assert_file_exists .git/refs/amp/messages.lock
	assert_equal "$(commit_count)" 1
}

@test "a payload that is not JSON is logged; when the error log cannot be written, the user is told" {
	echo '{"description": ' > broken.json
	run amp send task_dispatch --task $T --from coordinator --payload broken.json
	assert_failure 1
	assert_output --partial "amp send: error: /payload: invalid JSON"
	run amp errors --json
	assert_output --partial '"source": "broken.json"'
	run amp verdict $T --decision approved --confidence 0.9 --payload broken.json
	assert_failure 1
	assert_output --partial "amp verdict: error: /payload: invalid JSON"
	git update-ref -d refs/amp/errors
	run amp send --envelope broken.json
	assert_failure 4
	assert_output --partial "invalid JSON"
	assert_output --partial "could not write the error log"
}
