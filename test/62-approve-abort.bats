#!/usr/bin/env bats
# Approval, abort and heartbeat records at write time (AMP/1.0 §01 "after the
# Admin approves the Coordinator plan", risk_level "determines the approval
# path"; §05 permission_denied and heartbeat_timeout): amp approve, amp
# abort, amp heartbeat, and what they open or close.

bats_require_minimum_version 1.5.0
load helpers
load conversation
load enforcer
load transitions

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# control_file NAME: the stored control record NAME of $T.
control_file() {
	local path
	path=$(git ls-tree -r --name-only refs/amp/messages | grep -F ".ctl.$1.json") || return 1
	git show "refs/amp/messages:$path"
}

# assert_control_conforms NAME: the record passes control.schema.json.
assert_control_conforms() {
	control_file "$1" > "$BATS_TEST_TMPDIR/ctl.json" || fail "no control record $1"
	run amp validate --schema "$AMP_SRC/schemas/control.schema.json" \
		--ref "$AMP_SRC/schemas/common.schema.json" "$BATS_TEST_TMPDIR/ctl.json"
	assert_success
}

# ---- approval ------------------------------------------------------------------

@test "approval: a high-risk dispatch waits; the executor's ACK is refused and records one permission_denied escalation" {
	to_awaiting_approval
	[ "$(task_field state)" = awaiting_approval ]
	[ "$(task_field awaiting_approval)" = "$D" ]
	assert_sub $S1 awaiting_approval 1
	# no ACK clock runs before the approval
	[ "$(amp status $T --json | json_get "d['messages'][0]['ack_state']")" = awaiting_approval ]
	[ "$(amp status $T --json | json_get "d['messages'][0]['ack_deadline']")" = null ]
	at 5
	MSG_COMMITS=1 refused "cannot be ACKed before 'amp approve $T'" awaiting_approval amp ack "$D" --from executor
	E=$(the_escalation permission_denied)
	[[ $stderr == *"amp ack: permission_denied escalation $E recorded"* ]]
	assert_escalation "$E" permission_denied warning "[\"$D\"]" awaiting_approval 0 false
	escalation_file "$E" | grep -q "The executor tried to ACK $D"
	run git log -1 --format=%an%n%s refs/amp/messages
	assert_output "system
escalation $T system -> admin"
	# a second try is refused and records no second escalation
	at 10
	refused "cannot be ACKed before 'amp approve $T'" awaiting_approval amp ack "$D" --from executor
	[[ $stderr != *recorded* ]]
	# nor does the result, refused too
	refused "its dispatch awaits the admin's approval" awaiting_approval \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	[[ $stderr != *recorded* ]]
	[ "$(escalation_count permission_denied)" = 1 ]
	[ "$(amp status $T --json | json_get "d['messages'][0]['acked']")" = false ]
}

@test "approval: amp approve --from admin records the approval, shown by status and git log; then the ACK works, its clock starting at the approval" {
	to_awaiting_approval
	at 60
	run --separate-stderr amp approve $T --from admin --reason "blast radius checked" --json
	assert_success
	C=approve-1772116387000
	assert_output "{\"format\":{\"name\":\"approve\",\"version\":1},\"task_id\":\"$T\",\"control\":\"$C\",\"approves\":\"$D\",\"was\":\"awaiting_approval\",\"state\":\"dispatched\",\"type\":\"approve\",\"from\":\"admin\",\"escalation\":null}"
	run git log -1 --format='%an|%s' refs/amp/messages
	assert_output "admin|approve $T admin: approves $D"
	run git log -1 --format=%b refs/amp/messages
	assert_line "Amp-Type: approve"
	assert_line "Amp-Target: $D"
	assert_control_conforms "$C"
	run amp status $T --json
	[ "$(json_get "[(c['type'], c['from'], c['approves'], c['reason']) for c in d['controls']]" <<< "$output")" = "[[\"approve\", \"admin\", \"$D\", \"blast radius checked\"]]" ]
	[ "$(json_get "d['awaiting_approval']" <<< "$output")" = null ]
	# the ACK clock starts at the approval: due at 60 + 300 s
	[ "$(json_get "d['messages'][0]['ack_deadline']" <<< "$output")" = "2026-02-26T14:38:07+00:00" ]
	run amp status $T
	assert_line --index 0 "$T  dispatched  rejects 0"
	assert_output --partial "control: 2026-02-26 14:33:07 +0000  approve by admin of $D: blast radius checked"
	at 350
	allowed amp ack "$D" --from executor
	[ "$(head_files | wc -l)" -eq 1 ]
	[ "$(escalation_count ack_timeout)" = 0 ]
	assert_sub $S1 in_progress 1
	at 400
	allowed amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 submitted 1
}

@test "approval: only the admin approves, and only a dispatch that awaits it" {
	to_awaiting_approval
	at 10
	m=$(commit_count) e=$(error_count)
	run --separate-stderr amp approve $T --from coordinator
	assert_failure 3
	[ "$stderr" = "amp approve: error: /from: only the admin may approve a task, not coordinator" ]
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = $((e + 1)) ]
	assert_sub $S1 awaiting_approval 1
	amp approve $T --from admin
	at 20
	refused "no dispatch of the task awaits approval" dispatched amp approve $T --from admin
	[ "$(amp status $T --json | json_get "len(d['controls'])")" = 1 ]
}

@test "approval: git config amp.approvalRequired picks the levels that wait; a bad level is exit 2 naming the key" {
	git config amp.approvalRequired "medium high"
	to_dispatched
	assert_sub $S1 awaiting_approval 1
	T=T-2026-045
	dispatch "$(basename "$(risk_payload low)")"
	assert_sub $S1 dispatched 1
	git config amp.approvalRequired low,medium
	T=T-2026-046
	dispatch "$(basename "$(risk_payload low)")"
	assert_sub $S1 awaiting_approval 1
	git config amp.approvalRequired none
	T=T-2026-047
	dispatch "$(basename "$(risk_payload high)")"
	assert_sub $S1 dispatched 1
	at 5
	allowed amp ack "$D" --from executor
	# the default is high only
	git config --unset amp.approvalRequired
	T=T-2026-048
	dispatch "$(basename "$(risk_payload high)")"
	assert_sub $S1 awaiting_approval 1
	for bad in urgent "high, critical"; do
		git config amp.approvalRequired "$bad"
		m=$(commit_count) e=$(error_count)
		run --separate-stderr amp send task_dispatch --task T-2026-049 --from coordinator --to executor --payload "$(P dispatch.json)"
		assert_failure 2
		[[ $stderr == "amp send: error: git config amp.approvalRequired: "*"is not a risk level (low, medium, high or none)"* ]] || fail "$bad: $stderr"
		[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = "$e" ]
		run amp approve $T --from admin
		assert_failure 2
	done
}

# ---- abort -----------------------------------------------------------------------

@test "abort: amp abort --from coordinator --reason ends the task; recorded, shown by status and git log" {
	to_in_progress
	at 60
	allowed amp abort $T --from coordinator --reason "plan changed"
	assert_output "aborted $T (in_progress -> aborted): only the admin may write to it now"
	[ "$(task_field state)" = aborted ]
	[ "$(task_field aborted)" = true ]
	run git log -1 --format='%an|%s' refs/amp/messages
	assert_output "coordinator|abort $T coordinator"
	assert_control_conforms abort-1772116387000
	run amp status $T --json
	[ "$(json_get "[(c['type'], c['from'], c['reason']) for c in d['controls']]" <<< "$output")" = '[["abort", "coordinator", "plan changed"]]' ]
	run amp status $T
	assert_line --index 0 "$T  aborted  rejects 0"
	assert_output --partial "control: 2026-02-26 14:33:07 +0000  abort by coordinator: plan changed"
}

@test "abort: every later write by a non-admin is refused naming the abort; the admin's is accepted" {
	to_submitted
	amp ack "$R" --from coordinator
	at 15; request "$D" "$R"
	at 60
	amp abort $T --from coordinator --reason "plan changed"
	why="was aborted by the coordinator at 2026-02-26T14:33:07+00:00 (\"plan changed\"): it takes no more writes from the"
	at 70
	refused "$why reviewer" "" amp ack "$Q" --from reviewer
	# the first refused message tells the admin (issue 33, test/33-team-rules.bats)
	MSG_COMMITS=1 refused "$why reviewer" "" amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	refused "$why executor" "" amp send task_result --task $T --from executor --payload "$(P result.json)"
	refused "$why coordinator" "" amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	refused "$why executor" "" amp heartbeat $T --from executor --note "still here"
	refused "$why executor" "" amp escalate $T --from executor --type conflict --severity warning --description "why?"
	refused "it is aborted already" aborted amp abort $T --from coordinator --reason "again"
	[ "$(task_field state)" = aborted ]
	assert_sub $S1 in_review 1
	# the admin still writes: a dispatch of a new subtask, which reopens
	# the task (issue 33: the admin reopens an aborted task with a new round)
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["subtasks"]=d["subtasks"][1:]; json.dump(d, open(sys.argv[2], "w"))' "$(P dispatch2.json)" "$(P dispatch-s2.json)"
	allowed amp send task_dispatch --task $T --from admin --to executor --payload "$(P dispatch-s2.json)"
	assert_sub $S2 dispatched 1
	assert_sub $S1 in_review 1
	[ "$(task_field state)" = dispatched ]
}

@test "abort: needs --reason; the admin may abort, the executor may not" {
	to_in_progress
	at 60
	m=$(commit_count) e=$(error_count)
	run amp abort $T --from coordinator
	assert_failure 2
	assert_output --partial "--reason is required"
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = "$e" ]
	run --separate-stderr amp abort $T --from executor --reason "I give up"
	assert_failure 3
	[ "$stderr" = "amp abort: error: /from: only the admin or the coordinator may abort a task, not executor" ]
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = $((e + 1)) ]
	[ "$(task_field state)" = in_progress ]
	allowed amp abort $T --from admin --reason "Admin stops it"
	run git log -1 --format='%an|%s' refs/amp/messages
	assert_output "admin|abort $T admin"
	[ "$(task_field state)" = aborted ]
}

# ---- heartbeat -------------------------------------------------------------------

@test "heartbeat: records who is alive with its note; refused from the admin and on an aborted task" {
	to_in_progress
	at 600
	allowed amp heartbeat $T --from executor --note "still on S1"
	assert_output "heartbeat $T executor (heartbeat-1772116927000)"
	run git log -1 --format='%an|%s' refs/amp/messages
	assert_output "executor|heartbeat $T executor"
	assert_control_conforms heartbeat-1772116927000
	control_file heartbeat-1772116927000 | grep -q '"note": "still on S1"'
	[ "$(amp status $T --json | json_get "[(c['type'], c['from'], c['note'], c['timestamp']) for c in d['controls']]")" = '[["heartbeat", "executor", "still on S1", "2026-02-26T14:42:07+00:00"]]' ]
	[ "$(task_field state)" = in_progress ]
	# a heartbeat is not a message: it takes no --reason, and no ACK
	run amp heartbeat $T --from executor --reason x
	assert_failure 2
	assert_output --partial "heartbeat takes --note, not --reason"
	m=$(commit_count) e=$(error_count)
	run --separate-stderr amp heartbeat $T --from admin
	assert_failure 3
	[ "$stderr" = "amp heartbeat: error: /from: a heartbeat comes from the coordinator, the executor or the reviewer, not admin" ]
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = $((e + 1)) ]
	at 700
	amp abort $T --from coordinator --reason "plan changed"
	refused "/task_id: task $T was aborted by the coordinator" "" amp heartbeat $T --from executor
	[ "$(amp status $T --json | json_get "[c['type'] for c in d['controls']]")" = '["heartbeat", "abort"]' ]
}

@test "abort: the enforcer's own escalations still go into an aborted task (system), an agent's do not" {
	at 0; D=$(amp send task_dispatch --task $T --from coordinator --payload "$(P dispatch.json)")
	at 10; amp abort $T --from coordinator --reason "plan changed" > /dev/null
	at 20
	run amp escalate $T --from executor --type unknown --severity warning --description "still here"
	assert_failure 3
	assert_output --partial "task $T was aborted by the coordinator"
	# a record that arrived by hand after the abort: watch reports it
	echo 'not json' | plant "$(next_path $T task_result-$T-1772116347000)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T "
	assert_equal "$(escalation_count unknown)" 1
}
