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
