#!/usr/bin/env bats
# Issue 8: what the write itself decides, seen through amp status and
# amp resume: a lock that is due, the human output of subtasks, late ACKs
# and control records.

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

@test "a lowered amp.lockThreshold makes the task locked at once; the admin's resume records the due lock and lifts it" {
	dispatch_acked
	reject_rounds 2
	[ "$(task_state)" = rejected ]
	git config amp.lockThreshold 2
	# due, not recorded: shown as locked, and every write but the admin's is refused
	run amp status $T --json
	assert_output --partial '"state": "locked"'
	assert_output --partial '"suspended_by": null'
	at 400
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_output --partial "task $T is locked: its 2 rejected verdicts since the last resume reach amp.lockThreshold"
	before=$(commit_count)
	run amp resume $T --from admin --reason "threshold lowered" --json
	assert_success
	E=$(echo "$output" | json_get 'd["escalation"]')
	assert_equal "$(echo "$output" | json_get 'd["lifts"]')" "$E"
	# one commit: the lock escalation and the resume that lifts it
	assert_equal "$(commit_count)" $((before + 1))
	run git show --stat --format=%s refs/amp/messages
	assert_output --partial "resume $T admin: lifts $E"
	assert_output --partial ".msg.$E.json"
	assert_output --partial ".ctl.resume-"
	assert_escalation "$E" hallucination_lock critical "[\"$V\", \"$D\"]" locked 2 true
	[ "$(task_state)" = rejected ]
	# counting starts again after the resume: the next round is open
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
}

@test "amp status prints each subtask's state and round, and flags a late ACK" {
	at 0; D=$(amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch2.json")
	at 400; run amp ack "$D" --from executor
	assert_success
	assert_line "acked $D"
	assert_line --regexp "^amp ack: the ACK is late: ack_timeout escalation escalation-$T-[0-9]+ recorded with it$"
	run amp status $T
	assert_line --index 0 --regexp "^$T  in_progress  rejects 0"
	assert_line --index 1 --regexp "^  subtask T-2026-044-S1 +in_progress +round 1$"
	assert_line --index 2 --regexp "^  subtask T-2026-044-S2 +in_progress +round 1$"
	assert_output --partial "acked 1m late (after 6m)"
	run amp status $T --json
	assert_output --partial '"ack_late_seconds": 100'
	at 410; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result2.json")
	run amp status $T
	assert_line --index 2 --regexp "^  subtask T-2026-044-S2 +submitted +round 1$"
}

@test "an ACK in time is not late and records no escalation" {
	send_dispatch
	at 300; run amp ack "$D" --from executor --json
	assert_success
	assert_output "{\"format\":{\"name\":\"ack\",\"version\":1},\"ack_for\":\"$D\",\"duplicate\":false,\"escalation\":null}"
	run amp status $T --json
	assert_output --partial '"ack_late_seconds": null'
	assert_equal "$(escalation_count ack_timeout)" 0
}

@test "amp help lists approve, abort and heartbeat; each has a usage" {
	run amp help
	assert_success
	assert_output --partial "approve"
	assert_output --partial "abort"
	assert_output --partial "heartbeat"
	for c in approve abort heartbeat; do
		run amp $c --help
		assert_success
		assert_output --partial "usage: amp $c <task_id>"
	done
	run amp abort $T --from coordinator
	assert_failure 2
	assert_output --partial "--reason is required"
	run amp heartbeat $T --from executor --reason x
	assert_failure 2
	assert_output --partial "heartbeat takes --note, not --reason"
}

@test "only the admin may dispatch a subtask out of the approval path: the coordinator's lower risk_level is refused and escalated once" {
	sed 's/"risk_level": "medium"/"risk_level": "high"/' "$BATS_TEST_TMPDIR/p/dispatch.json" > high.json
	at 0; D=$(amp send task_dispatch --task $T --from coordinator --payload high.json)
	[ "$(task_state)" = awaiting_approval ]
	before=$(commit_count)
	at 10; run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_line --partial "amp send: error: /payload/risk_level: is medium, but $D (risk_level high) needs the admin's approval: only the admin may dispatch its subtasks again"
	assert_line --regexp "^amp send: permission_denied escalation escalation-$T-[0-9]+ recorded$"
	# the refusal wrote the escalation only
	assert_equal "$(commit_count)" $((before + 1))
	assert_equal "$(escalation_count permission_denied)" 1
	at 20; run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_equal "$(escalation_count permission_denied)" 1
	# at the same level (or higher) the coordinator may re-dispatch; the admin at any
	at 30; run amp send task_dispatch --task $T --from coordinator --payload high.json
	assert_success
	[ "$(task_state)" = awaiting_approval ]
	at 40; run amp send task_dispatch --task $T --from admin --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	[ "$(task_state)" = dispatched ]
	# once approved, the coordinator still may not lower it
	at 50; D=$(amp send task_dispatch --task $T --from admin --payload high.json)
	at 60; amp approve $T --from admin > /dev/null
	at 70; run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_output --partial "/payload/risk_level: is medium, but $D (risk_level high)"
}

@test "a doubtful verdict that also locks the task lands with both escalations, the conflict seeing the task locked" {
	dispatch_acked
	reject_rounds 2
	at 400; review_round 2
	at 450; run amp verdict $T --decision rejected --confidence 0.5 --payload "$BATS_TEST_TMPDIR/p/reject.json"
	assert_success
	V=$(amp status $T --json | json_get '[m["msg_id"] for m in d["messages"] if m["type"] == "review_verdict"][-1]')
	L=$(the_escalation hallucination_lock)
	C=$(the_escalation conflict)
	run git show --name-only --format=%B refs/amp/messages
	assert_line --index 0 "review_verdict $T reviewer -> coordinator (locks the task)"
	assert_line "Amp-Escalation: $L"
	assert_line "Amp-Escalation: $C"
	assert_output --partial ".msg.$V.json"
	assert_output --partial ".msg.$L.json"
	assert_output --partial ".msg.$C.json"
	assert_escalation "$L" hallucination_lock critical "[\"$V\", \"$D\"]" locked 3 true
	assert_escalation "$C" conflict info "[\"$V\"]" locked 3 false
	# amp's own records pass amp's own second look
	run amp watch --once
	assert_success
	assert_output ""
}
