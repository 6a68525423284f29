#!/usr/bin/env bats
# A team, not one agent per role (issue 33), what amp watch sees: liveness
# per task and per holder instance, a hard dependency on an aborted task,
# the holder told when the enforcer releases its lease.  Time moves with
# AMP_NOW only.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# dispatch_to TASK [PAYLOAD]: a dispatch of TASK to the executor (sets D).
dispatch_to() {
	D=$(amp send task_dispatch --task "$1" --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/${2:-dispatch}.json")
}

@test "scenario 4: the executor silent on one task is escalated at the timeout while another executor writes heartbeats on another task" {
	dispatch_to T-2026-001; D1=$D
	dispatch_to T-2026-002
	at 5; amp ack "$D1" --from executor > /dev/null; amp ack "$D" --from executor > /dev/null
	for m in 10 20 30 40 50; do
		at $((m * 60)); amp heartbeat T-2026-002 --from executor --agent bob > /dev/null
	done
	at 1805
	run -0 amp watch --once
	assert_output ""
	at $((59 * 60))
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout T-2026-001 $D1 "
	refute_output --partial T-2026-002
	assert_equal "$(escalation_count heartbeat_timeout T-2026-001)" 1
	assert_equal "$(escalation_count heartbeat_timeout T-2026-002)" 0
	run -0 amp watch --once
	assert_output ""
}

@test "scenario 4: two executor instances hold two subtasks of one task; the silent one is escalated by name while the other writes heartbeats" {
	dispatch_to $T dispatch2
	at 5; amp ack "$D" --from executor > /dev/null
	amp claim $T --subtask T-2026-044-S1 --agent alice --ttl 7200 > /dev/null
	amp claim $T --subtask T-2026-044-S2 --agent bob --ttl 7200 > /dev/null
	for m in 10 20 30 40 50; do
		at $((m * 60)); amp heartbeat $T --from executor --agent bob > /dev/null
	done
	at 1806
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $D "
	E=$(the_escalation heartbeat_timeout)
	run escalation_file "$E"
	assert_output --partial "The executor instance alice holds $T"
	at $((59 * 60))
	run -0 amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
}

@test "scenario 6: a hard dependency on an aborted task is escalated once, naming both tasks, with what the admin can do" {
	dispatch_to T-2026-001; D1=$D
	run -0 amp depend T-2026-002 --on T-2026-001 --from coordinator
	at 60
	run -0 amp watch --once
	assert_output ""
	at 120; amp abort T-2026-001 --from admin --reason "the spec changed" > /dev/null
	at 86400
	run -0 amp watch --once
	assert_output --regexp "^escalated unknown T-2026-002 "
	refute_output --partial "T-2026-001 "
	E=$(the_escalation unknown T-2026-002)
	assert_escalation "$E" unknown warning "[]" new 0 false
	run escalation_file "$E"
	assert_output --partial "T-2026-002 depends hard on T-2026-001, which was aborted by the admin"
	assert_output --partial '(\"the spec changed\")'
	assert_output --partial "amp depend T-2026-002 --on T-2026-001 --soft"
	# Once: neither a later pass, nor a full rescan, nor the dependent's
	# own new records escalate it again.
	at 172800
	run -0 amp watch --once
	assert_output ""
	run -0 amp watch --once --full
	assert_output ""
	amp plan T-2026-002 --from coordinator --priority P1 > /dev/null
	run -0 amp watch --once
	assert_output ""
	assert_equal "$(escalation_count unknown T-2026-002)" 1
	assert_equal "$(escalation_count unknown T-2026-001)" 0
}

@test "scenario 6: a dependency declared hard after the abort is escalated at the next pass; a soft one is not" {
	dispatch_to T-2026-001
	at 60; amp abort T-2026-001 --from admin --reason "dropped" > /dev/null
	run -0 amp depend T-2026-003 --on T-2026-001 --soft --from coordinator
	at 120
	run -0 amp watch --once
	assert_output ""
	run -0 amp depend T-2026-002 --on T-2026-001 --from coordinator
	at 180
	run -0 amp watch --once
	assert_output --regexp "^escalated unknown T-2026-002 "
	refute_output --partial T-2026-003
	assert_equal "$(escalation_count unknown T-2026-003)" 0
}

@test "scenario 5: the admin dispatches a plan subtask to the coordinator, the coordinator S1 and S2 to the executor; when both are approved, the plan subtask and the task are approved" {
	p=$BATS_TEST_TMPDIR/p
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["subtasks"]=[{"subtask_id": "T-2026-044-P1", "description": "Plan and split the engine rework", "estimated_lines": 90}]; json.dump(d, open(sys.argv[2], "w"))' "$p/dispatch.json" "$p/plan.json"
	P=$(amp send task_dispatch --task $T --from admin --to coordinator --payload "$p/plan.json")
	at 5; amp ack "$P" --from coordinator > /dev/null
	at 10; dispatch_to $T dispatch2
	at 15; amp ack "$D" --from executor > /dev/null
	at 20
	R1=$(amp send task_result --task $T --from executor --payload "$p/result.json")
	R2=$(amp send task_result --task $T --from executor --payload "$p/result2.json")
	amp ack "$R1" --from coordinator > /dev/null; amp ack "$R2" --from coordinator > /dev/null
	at 25
	Q1=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R1")")
	Q2=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R2")")
	amp ack "$Q1" --from reviewer > /dev/null; amp ack "$Q2" --from reviewer > /dev/null
	at 30
	V1=$(amp verdict $T --decision approved --confidence 0.9 --payload "$p/verdict.json" --context-ref "$Q1")
	amp ack "$V1" --from coordinator > /dev/null
	run -0 amp status $T --json
	assert_equal "$(echo "$output" | json_get '{s["subtask_id"]: s["state"] for s in d["subtasks"]}')" \
		'{"T-2026-044-P1": "in_progress", "T-2026-044-S1": "approved", "T-2026-044-S2": "in_review"}'
	V2=$(amp verdict $T --decision approved --confidence 0.9 --payload "$p/verdict.json" --context-ref "$Q2")
	amp ack "$V2" --from coordinator > /dev/null
	run -0 amp status $T --json
	assert_equal "$(echo "$output" | json_get '{s["subtask_id"]: s["state"] for s in d["subtasks"]}')" \
		'{"T-2026-044-P1": "approved", "T-2026-044-S1": "approved", "T-2026-044-S2": "approved"}'
	assert_equal "$(echo "$output" | json_get 'd["state"]')" approved
	# Done is done: the plan subtask takes no new round, and amp watch
	# sees nobody holding the ball.
	run -3 amp send task_dispatch --task $T --from admin --to coordinator --payload "$p/plan.json"
	assert_output --partial "it is approved, hence done"
	at 99999
	run -0 amp watch --once
	assert_output ""
}

@test "the holder is told: after amp watch released its expired lease, the instance's next heartbeat says so and the task is claimable again" {
	dispatch_to $T
	at 5; amp claim $T --agent alice --ttl 600 > /dev/null
	amp ack "$D" --from executor --agent alice > /dev/null
	C=$(amp status $T --json | json_get 'd["claims"][0]["claim"]')
	# While it holds the lease, a heartbeat says nothing more.
	at 300
	run -0 --separate-stderr amp heartbeat $T --from executor --agent alice --json
	assert_equal "$stderr" ""
	refute_output --partial lost_claim
	at 1000
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $C "
	at 1100
	run -0 --separate-stderr amp heartbeat $T --from executor --agent alice
	assert_equal "$stderr" "amp heartbeat: warning: /agent: alice: the lease of $T ($C) ran out and amp watch released it; the task is claimable again: claim it before working on it"
	run -0 --separate-stderr amp heartbeat $T --from executor --agent alice --json
	assert_equal "$(echo "$output" | json_get 'd["lost_claim"]')" "$C"
	# Another instance's heartbeat is not told of alice's lease.
	run -0 --separate-stderr amp heartbeat $T --from executor --agent bob
	assert_equal "$stderr" ""
	# Re-queued: bob may claim it.
	run -0 amp claim $T --agent bob
}
