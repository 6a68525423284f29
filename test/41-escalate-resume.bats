#!/usr/bin/env bats
# amp escalate (snapshot filled from the SSOT) and amp resume (the admin's
# control record); AMP/1.0 §05 Critical = Suspend All (rule 7).

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	dispatch_acked
	at 60
}

@test "escalate fills triggered_by, the snapshot from the SSOT, and auto_suspended" {
	run amp escalate $T --from executor --type permission_denied --severity warning \
		--description "the fix needs a change to Info.plist" --affected "$D" \
		--suggest "Allow the change" --suggest "Re-dispatch without it"
	assert_success
	E=$output
	assert_escalation "$E" permission_denied warning "[\"$D\"]" in_progress 0 true
	run escalation_file "$E"
	assert_output --partial '"from": "executor"'
	assert_output --partial '"triggered_by": "executor"'
	assert_output --partial "\"last_successful_msg_id\": \"$D\""
	assert_output --partial '"Re-dispatch without it"'
	run amp escalate $T --from reviewer --type conflict --severity info --description "cannot agree"
	assert_success
	assert_escalation "$output" conflict info "[]" in_progress 0 false
	run amp status $T --json
	assert_output --partial '"state": "in_progress"'
}

@test "escalate: bad severity is a usage error, an unknown type a schema error" {
	run amp escalate $T --from executor --type conflict --severity urgent --description x
	assert_failure 2
	run amp escalate $T --from executor --type panic --severity info --description x
	assert_failure 1
	assert_output --partial "/payload/escalation_type"
	run amp escalate $T --from executor --type conflict --severity info
	assert_failure 2
}

@test "rule 7 critical = suspend all: every new message is refused, naming the escalation, except the admin's" {
	E=$(amp escalate $T --from coordinator --type conflict --severity critical --description "reviewer and executor disagree")
	run amp status $T --json
	assert_output --partial '"state": "suspended"'
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "task $T is suspended by escalation $E: only the admin may act until 'amp resume'"
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	assert_output --partial "$E"
	# escalations are still heard, and the admin still acts
	run amp escalate $T --from executor --type unknown --severity warning --description "waiting"
	assert_success
	run amp send task_dispatch --task $T --from admin --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
}

@test "resume: only the admin, only a suspended or locked task; recorded, visible in status and git log" {
	run amp resume $T --from admin --reason "nothing to lift"
	assert_failure 3
	assert_output --partial "a resume is refused while task $T is in_progress: it is not suspended or locked"
	E=$(amp escalate $T --from coordinator --type conflict --severity critical --description "stop")
	run amp resume $T --from coordinator --reason "let me"
	assert_failure 3
	assert_output --partial "only the admin may resume a task, not coordinator"
	at 120
	AMP_ROLE=admin run amp resume $T --reason "Admin decided: carry on" --json
	assert_success
	assert_output "{\"format\":{\"name\":\"resume\",\"version\":1},\"task_id\":\"$T\",\"control\":\"resume-1772116447000\",\"lifts\":\"$E\",\"was\":\"suspended\",\"state\":\"in_progress\",\"type\":\"resume\",\"from\":\"admin\",\"escalation\":null}"
	run git show "refs/amp/messages:$(record_path "$T" 000004.ctl.resume-1772116447000.json)"
	assert_success
	assert_output --partial '"type": "resume"'
	assert_output --partial '"from": "admin"'
	assert_output --partial "\"lifts\": \"$E\""
	assert_output --partial '"reason": "Admin decided: carry on"'
	run amp validate --schema "$AMP_SRC/schemas/control.schema.json" --ref "$AMP_SRC/schemas/common.schema.json" <(git show "refs/amp/messages:$(record_path "$T" 000004.ctl.resume-1772116447000.json)")
	assert_success
	run amp status $T
	assert_line --index 0 --regexp "^$T  in_progress  rejects 0$"
	assert_output --partial "control: 2026-02-26 14:34:07 +0000  resume by admin: Admin decided: carry on"
	run git log -1 --format='%an|%s' refs/amp/messages
	assert_output "admin|resume $T admin: lifts $E"
	# the refusals went to the error log
	run amp errors
	assert_output --partial "only the admin may resume"
	# and work goes on
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_success
	assert_fsck_clean
}

@test "a locked task refuses the executor's next result and accepts the admin's resume" {
	reject_rounds 3 100
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "is locked by escalation"
	# The verdict that locked the task cannot be ACKed until the resume.
	run amp ack "$V" --from coordinator
	assert_failure 3
	assert_output --partial "is locked by escalation"
	run amp resume $T --from admin --reason "Admin gives the fix"
	assert_success
	assert_output --partial "(locked -> rejected)"
	run amp ack "$V" --from coordinator
	assert_success
	# A rejected subtask takes its next result in a new round.
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "it was rejected: a new task_dispatch starts the next round"
	send_dispatch
	amp ack "$D" --from executor
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_success
}

@test "control.schema.json refuses a resume that is not the admin's or lifts nothing" {
	run amp validate --schema "$AMP_SRC/schemas/control.schema.json" --ref "$AMP_SRC/schemas/common.schema.json" <(echo '{"protocol_version":"AMP/1.0","type":"resume","task_id":"T-2026-044","from":"executor","timestamp":"2026-02-26T14:34:07+00:00","reason":"x","lifts":"escalation-T-2026-044-1"}')
	assert_failure 1
	assert_output --partial "/from"
	run amp validate --schema "$AMP_SRC/schemas/control.schema.json" --ref "$AMP_SRC/schemas/common.schema.json" <(echo '{"protocol_version":"AMP/1.0","type":"resume","task_id":"T-2026-044","from":"admin","timestamp":"2026-02-26T14:34:07+00:00","reason":"x"}')
	assert_failure 1
	assert_output --partial "lifts"
}
