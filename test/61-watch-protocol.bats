#!/usr/bin/env bats
# amp watch after issue 8: what reaches the SSOT without amp send (a fetch,
# a hand-made commit) is held to the write-time protocol (the lock that a
# malformed verdict cannot dodge, late ACKs, acts on an unapproved
# dispatch), whoever holds the ball is timed (heartbeats), and deadlines
# run from the commit that brought a record as well as from its timestamp
# (sender clocks).  Time moves with AMP_NOW only; a hand-made commit is
# dated AMP_NOW unless GIT_COMMITTER_DATE says otherwise (plant).

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# envelope_file ID TYPE FROM TO TIMESTAMP PAYLOAD: an AMP/1.0 envelope of $T
# on stdout, as another machine would have written it.
envelope_file() {
	$PY -c 'import json, sys
i, t, f, to, ts, task, p = sys.argv[1:]
print(json.dumps({"msg_id": i, "protocol_version": "AMP/1.0", "type": t, "from": f, "to": to,
                  "task_id": task, "timestamp": ts, "requires_ack": True, "payload": json.load(open(p))}, indent=2))' \
		"$1" "$2" "$3" "$4" "$5" $T "$6"
}

# ack_file MSG_ID FROM TO TIMESTAMP: an ACK of $T on stdout.
ack_file() {
	printf '{"protocol_version": "AMP/1.0", "type": "ack", "ack_for": "%s", "task_id": "%s", "from": "%s", "to": "%s", "timestamp": "%s"}\n' \
		"$1" $T "$2" "$3" "$4"
}

# iso SECONDS: the time T0 + SECONDS, as `at` writes it.
iso() {
	date -u -d "@$((1772116327 + $1))" +%Y-%m-%dT%H:%M:%S+00:00
}

# forty_minutes [heartbeat]: a subtask of 40 minutes (the dispatch ACKed at
# 5 s, the result at 2400 s, ACKed), watched every 10 minutes and just
# before the result, the executor writing `amp heartbeat` every 10 minutes
# when asked; what the passes print goes to $BATS_TEST_TMPDIR/passes.
forty_minutes() {
	local t
	dispatch_acked
	for t in 600 1200 1800 2390; do
		at $t
		if [ -n "${1:-}" ] && [ $t != 2390 ]; then
			amp heartbeat $T --from executor --note "still replacing the timer" > /dev/null || return 1
		fi
		amp watch --once >> "$BATS_TEST_TMPDIR/passes" || return 1
	done
	at 2400; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json") || return 1
	at 2410; amp ack "$R" --from coordinator > /dev/null || return 1
	at 2500; amp watch --once >> "$BATS_TEST_TMPDIR/passes"
}

# high_risk: the conversation's dispatch at risk_level high (it waits for
# the admin: git config amp.approvalRequired defaults to high).
high_risk() {
	sed 's/"risk_level": "medium"/"risk_level": "high"/' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/high.json"
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/high.json")
}

@test "the dodge: a malformed third rejecting verdict by a hand-made commit locks the task; watch writes the lock (at 4 rejects too), and later verdicts are refused" {
	dispatch_acked
	reject_rounds 2
	at 300; review_round 2
	at 350; plant_reject malformed
	# no lock came with it, yet the task is locked for every writer but the admin
	assert_equal "$(escalation_count hallucination_lock)" 0
	write_reject_payload
	at 360
	run amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json"
	assert_failure 3
	assert_output --partial "is locked: its 3 rejected verdicts since the last resume reach amp.lockThreshold"
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "is locked"
	# a fetch may bring a fourth: the count is past the threshold, not at it
	V3=$V
	at 355; plant_reject
	V4=$V
	run amp watch --once
	assert_success
	assert_line --regexp "^escalated unknown $T $V3 \(escalation-$T-[0-9]+\)$"
	assert_line --regexp "^escalated unknown $T $V4 \(escalation-$T-[0-9]+\)$"
	assert_line --regexp "^escalated hallucination_lock $T $V3 \(escalation-$T-[0-9]+\)$"
	assert_equal "${#lines[@]}" 3
	E=$(the_escalation hallucination_lock)
	assert_escalation "$E" hallucination_lock critical "[\"$V3\", \"$D\"]" locked 4 true
	run escalation_file "$E"
	assert_output --partial "3 rejected verdicts in a row (amp.lockThreshold 3), the last $V3"
	run escalation_file "$(the_escalation unknown)"
	assert_output --partial "not schema-valid"
	# two more verdicts: refused, naming the lock
	at 370
	run amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json"
	assert_failure 3
	assert_output --partial "is locked by escalation $E"
	at 380
	run amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_failure 3
	assert_output --partial "is locked by escalation $E"
	run amp status $T --json
	assert_equal "$(echo "$output" | json_get '[d["state"], d["reject_count"], d["locked"], d["suspended_by"]]')" "[\"locked\", 4, true, \"$E\"]"
	for pass in 1 2; do
		run amp watch --once --full
		assert_success
		assert_output ""
	done
	assert_equal "$(escalation_count hallucination_lock)" 1
}

@test "a late ACK that arrives by a hand-made commit is reported once, from the commit time" {
	send_dispatch
	at 100
	run amp watch --once
	assert_output ""
	# dated 290 s, in time, but committed at 400 s: 100 s after the deadline
	at 400
	ack_file "$D" executor coordinator "$(iso 290)" | plant "$(next_path $T "$D" ack)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation ack_timeout)
	assert_escalation "$E" ack_timeout warning "[\"$D\"]" in_progress 0 false
	run escalation_file "$E"
	assert_output --partial "the ACK came 100 s late, at $(iso 400)"
	run amp watch --once
	assert_output ""
	run amp watch --once --full
	assert_output ""
	run amp status $T --json
	assert_output --partial '"ack_state": "acked"'
	assert_equal "$(escalation_count ack_timeout)" 1
}

@test "a late ACK brought in by a hand-made merge counts from its own commit's time, also in a first full pass" {
	send_dispatch
	base=$(git rev-parse refs/amp/messages)
	# the ACK committed at 400 s on a side line, merged into the SSOT at 450 s
	at 400
	ack_file "$D" executor coordinator "$(iso 290)" | plant "$(next_path $T "$D" ack)"
	side=$(git rev-parse refs/amp/messages)
	merge=$(GIT_COMMITTER_DATE="@$((1772116327 + 450))" git commit-tree "$(git rev-parse "$side^{tree}")" \
		-p "$base" -p "$side" -m "merge by hand")
	git update-ref refs/amp/messages "$merge"
	# and a commit after the merge, so that the walk meets it on the way down
	at 460
	amp send task_dispatch --task T-2026-045 --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	rm -f .git/amp/watch.json
	run amp watch --once --full
	assert_success
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	run escalation_file "$(the_escalation ack_timeout)"
	assert_output --partial "the ACK came 100 s late, at $(iso 400)"
}

@test "an ACK by hand-made commit after watch reported the timeout adds nothing" {
	send_dispatch
	at 301
	run amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $D "
	at 500
	ack_file "$D" executor coordinator "$(iso 500)" | plant "$(next_path $T "$D" ack)"
	run amp watch --once
	assert_success
	assert_output ""
	assert_equal "$(escalation_count ack_timeout)" 1
}

@test "a 40-minute subtask with amp heartbeat every 10 minutes gives no heartbeat_timeout" {
	forty_minutes heartbeat
	assert_equal "$(cat "$BATS_TEST_TMPDIR/passes")" ""
	assert_equal "$(escalation_count heartbeat_timeout)" 0
	assert_equal "$(git log --format=%s refs/amp/messages | grep -c "^heartbeat $T executor$")" 3
}

@test "a 40-minute subtask without heartbeats gives exactly one heartbeat_timeout" {
	forty_minutes
	run cat "$BATS_TEST_TMPDIR/passes"
	assert_output --regexp "^escalated heartbeat_timeout $T $D \(escalation-$T-[0-9]+\)$"
	assert_equal "$(escalation_count heartbeat_timeout)" 1
	assert_escalation "$(the_escalation heartbeat_timeout)" heartbeat_timeout warning "[\"$D\"]" in_progress 0 false
}

@test "a holder whose last write was a heartbeat is escalated once, the heartbeat record being the cause" {
	dispatch_acked
	at 600; amp heartbeat $T --from executor > /dev/null
	HB=$(git ls-tree -r --name-only "refs/amp/messages:$(task_path "$T")/" | grep '\.ctl\.heartbeat-' | sed 's#.*/##')
	at 2400
	run amp watch --once
	assert_output ""
	at 2401
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated heartbeat_timeout $T $D \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation heartbeat_timeout)
	assert_escalation "$E" heartbeat_timeout warning "[\"$D\"]" in_progress 0 false
	run escalation_file "$E"
	assert_output --partial "\"description\": \"no write since $(record_path "$T" $HB): The executor holds $T (handed over by $D"
	run git log -1 --format=%B refs/amp/messages
	assert_output --partial "Amp-Cause: heartbeat_timeout $(record_path "$T" $HB)"
	at 9000
	for opt in "" --full; do
		run amp watch --once $opt
		assert_success
		assert_output ""
	done
	rm .git/amp/watch.json
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
	# a new heartbeat is a new write: silent again, escalated again
	at 9100; amp heartbeat $T --from executor > /dev/null
	at 10901
	run amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $D "
	assert_equal "$(escalation_count heartbeat_timeout)" 2
}

@test "the reviewer holding a review_request and the coordinator holding a result are each escalated once when silent" {
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch2.json")
	at 5; amp ack "$D" --from executor
	at 60; R1=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 61; amp ack "$R1" --from coordinator
	at 100; Q1=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R1" 0)")
	at 101; amp ack "$Q1" --from reviewer
	at 200; R2=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result2.json")
	at 201; amp ack "$R2" --from coordinator
	run amp status $T --json
	assert_equal "$(echo "$output" | json_get '[s["state"] for s in d["subtasks"]]')" '["in_review", "submitted"]'
	at 1901
	run amp watch --once
	assert_output ""
	at 1902
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated heartbeat_timeout $T $Q1 \(escalation-$T-[0-9]+\)$"
	run escalation_file "$(the_escalation heartbeat_timeout)"
	assert_output --partial "The reviewer holds $T (handed over by $Q1"
	at 2001
	run amp watch --once
	assert_output ""
	at 2002
	run amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $R2 \(escalation-$T-[0-9]+\)$"
	at 9999
	run amp watch --once
	assert_output ""
	run amp status $T --json
	assert_equal "$(echo "$output" | json_get "[(e['affected_msgs'], e['description'].split(' (')[0]) for e in d['escalations'] if e['escalation_type'] == 'heartbeat_timeout']")" \
		"[[[\"$Q1\"], \"The reviewer holds $T\"], [[\"$R2\"], \"The coordinator holds $T\"]]"
}

@test "a backdated dispatch (committed now, dated 1 h ago) is not overdue at once; its deadline runs from the commit" {
	local B=task_dispatch-$T-1772116327000
	at 3600
	envelope_file $B task_dispatch coordinator executor "$(iso 0)" "$BATS_TEST_TMPDIR/p/dispatch.json" | plant "$(next_path $T $B)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $B \(escalation-$T-[0-9]+\)$"
	run escalation_file "$(the_escalation unknown)"
	assert_output --partial "its timestamp $(iso 0) is 3600 s behind the commit that brought it ($(iso 3600)), more than git config amp.maxClockSkew (300 s)"
	# another write to the task: its timers are derived again, the arrival kept
	at 3700; amp escalate $T --from coordinator --type conflict --severity info --description "who sent this?" > /dev/null
	at 3900
	run amp watch --once
	assert_output ""
	at 3901
	run amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $B "
	run escalation_file "$(the_escalation ack_timeout)"
	assert_output --partial "required an ACK by $(iso 3900)"
}

@test "a dispatch dated 2099 by a hand-made commit is escalated as unknown and is overdue 300 s after its commit" {
	local B=task_dispatch-$T-4070908800000
	envelope_file $B task_dispatch coordinator executor 2099-01-01T00:00:00+00:00 "$BATS_TEST_TMPDIR/p/dispatch.json" | plant "$(next_path $T $B)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $B \(escalation-$T-[0-9]+\)$"
	run escalation_file "$(the_escalation unknown)"
	assert_output --partial "its timestamp 2099-01-01T00:00:00+00:00 is 2298792473 s ahead of the commit that brought it ($(iso 0))"
	at 300
	run amp watch --once
	assert_output ""
	at 301
	run amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $B "
	run amp watch --once --full
	assert_output ""
}

@test "an aborted task gets no timers: no ACK timeout, no heartbeat" {
	send_dispatch
	at 10
	run amp abort $T --from coordinator --reason "the plan changed"
	assert_success
	at 99999
	run amp watch --once
	assert_success
	assert_output ""
	assert_equal "$(json_get 'd["tasks"]' < .git/amp/watch.json)" "{}"
	run amp status $T --json
	assert_output --partial '"state": "aborted"'
}

@test "a high-risk dispatch awaiting approval gets no ACK timeout until approved, and then 300 s after the approval" {
	high_risk
	at 1000
	run amp watch --once
	assert_success
	assert_output ""
	assert_equal "$(json_get 'd["tasks"]' < .git/amp/watch.json)" "{}"
	at 2000
	run amp approve $T --from admin
	assert_success
	at 2300
	run amp watch --once
	assert_output ""
	at 2301
	run amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	run escalation_file "$(the_escalation ack_timeout)"
	assert_output --partial "required an ACK by $(iso 2300)"
}

@test "a fetched ACK of an unapproved dispatch is escalated once as permission_denied, and so is nothing else done on it" {
	high_risk
	at 10
	ack_file "$D" executor coordinator "$(iso 10)" | plant "$(next_path $T "$D" ack)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated permission_denied $T $D \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation permission_denied)
	assert_escalation "$E" permission_denied warning "[\"$D\"]" awaiting_approval 0 false
	run escalation_file "$E"
	assert_output --partial "The executor ACKed $D, whose risk_level needs the admin's approval"
	# a result for its subtask, by hand too: the same cause
	local B=task_result-$T-1772116347000
	at 20
	envelope_file $B task_result executor coordinator "$(iso 20)" "$BATS_TEST_TMPDIR/p/result.json" | plant "$(next_path $T $B)"
	run amp watch --once
	assert_success
	assert_output ""
	run amp watch --once --full
	assert_output ""
	assert_equal "$(escalation_count permission_denied)" 1
	assert_equal "$(escalation_count unknown)" 0
}

@test "a fetched dispatch that takes an approved high-risk subtask to a level needing no approval is escalated once as permission_denied" {
	high_risk
	at 10; amp approve $T --from admin > /dev/null
	local L=task_dispatch-$T-1772116347000
	at 20
	envelope_file $L task_dispatch coordinator executor "$(iso 20)" "$BATS_TEST_TMPDIR/p/dispatch.json" | plant "$(next_path $T $L)"
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated permission_denied $T $D \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation permission_denied)
	run escalation_file "$E"
	assert_output --partial "The coordinator dispatched again in $L the subtasks of $D"
	run amp watch --once --full
	assert_output ""
	assert_equal "$(escalation_count permission_denied)" 1
	assert_equal "$(escalation_count unknown)" 0
}
