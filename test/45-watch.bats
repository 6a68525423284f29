#!/usr/bin/env bats
# amp watch, the enforcer: one scenario per AMP/1.0 rule (share/doc/rules.md
# numbers them), exactly-once per cause across passes, restarts and
# concurrent watchers, and the long scenario dispatch, three rejects, lock,
# resume, approve.  Time moves with AMP_NOW only.

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

@test "rule 1 ACK timeout: an unACKed dispatch is escalated once, after timestamp + ack_timeout_sec" {
	send_dispatch
	at 300
	run amp watch --once
	assert_success
	assert_output ""
	at 301
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation ack_timeout)
	assert_escalation "$E" ack_timeout warning "[\"$D\"]" dispatched 0 false
	run escalation_file "$E"
	assert_output --partial '"from": "system"'
	assert_output --partial '"triggered_by": "system"'
	assert_output --partial '"last_successful_msg_id": null'
	at 900
	run amp watch --once
	assert_success
	assert_output ""
	assert_equal "$(escalation_count ack_timeout)" 1
	assert_fsck_clean
}

@test "rule 1: messages ACKed in time, and messages that need no ACK, are never escalated" {
	send_dispatch
	at 299; amp ack "$D" --from executor
	amp escalate $T --from executor --type conflict --severity info --description "just saying" > /dev/null
	at 5000
	run amp watch --once
	assert_success
	refute_output --partial ack_timeout
	assert_equal "$(escalation_count ack_timeout)" 0
}

@test "rule 1: the ack_timeout_sec of the message is the deadline, and status agrees" {
	D=$(amp send task_dispatch --task $T --from coordinator --ack-timeout 42 --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	at 42; run amp watch --once; assert_output ""
	at 43; run amp watch --once; assert_output --partial "escalated ack_timeout $T $D"
	run amp status $T --json
	assert_output --partial '"ack_state": "overdue"'
}

@test "rule 2 heartbeat: the executor holding a dispatch and silent for 30 min is escalated once" {
	dispatch_acked
	at 1805
	run amp watch --once
	assert_success
	assert_output ""
	at 1806
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated heartbeat_timeout $T $D "
	E=$(the_escalation heartbeat_timeout)
	assert_escalation "$E" heartbeat_timeout warning "[\"$D\"]" in_progress 0 false
	run escalation_file "$E"
	assert_output --partial "The executor holds $T"
	at 9000
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
}

@test "rule 2: a write to the task keeps its holder alive, a write to another task does not (issue 33); amp.heartbeatTimeout configures it" {
	git config amp.heartbeatTimeout 600
	dispatch_acked
	at 500
	X=$(amp send escalation --task $T --from executor --payload <(echo '{"escalation_type":"conflict","severity":"info","triggered_by":"executor","description":"still here","affected_msgs":[],"system_state_snapshot":{"task_status":"in_progress","reject_count":0,"last_successful_msg_id":"'"$D"'"},"auto_suspended":false}'))
	at 900
	amp send escalation --task T-2026-045 --from executor --payload <(echo '{"escalation_type":"conflict","severity":"info","triggered_by":"executor","description":"elsewhere","affected_msgs":[],"system_state_snapshot":{"task_status":"new","reject_count":0,"last_successful_msg_id":null},"auto_suspended":false}') > /dev/null
	at 1100
	run amp watch --once
	assert_output ""
	at 1101
	run amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $X "
	E=$(the_escalation heartbeat_timeout)
	assert_escalation "$E" heartbeat_timeout warning "[\"$X\", \"$D\"]" in_progress 0 false
}

@test "rule 2: after its result the executor holds nothing; the coordinator holds the ball and is escalated once" {
	dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 61; amp ack "$R" --from coordinator
	at 1861
	run amp watch --once
	assert_success
	assert_output ""
	at 99999
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated heartbeat_timeout $T $R \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation heartbeat_timeout)
	assert_escalation "$E" heartbeat_timeout warning "[\"$R\"]" submitted 0 false
	run escalation_file "$E"
	assert_output --partial "The coordinator holds $T (handed over by $R"
	refute_output --partial "The executor"
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
}

@test "rule 3 hallucination lock: a third rejected verdict that came by fetch locks the task (critical, auto_suspended)" {
	dispatch_acked
	reject_rounds 2
	at 400; run amp watch --once; assert_output ""
	at 410; review_round 2
	at 450; plant_reject
	run amp status $T --json
	assert_output --partial '"state": "locked"'
	assert_output --partial '"locked": false'
	at 500
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated hallucination_lock $T $V \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation hallucination_lock)
	assert_escalation "$E" hallucination_lock critical "[\"$V\", \"$D\"]" locked 3 true
	run escalation_file "$E"
	assert_output --partial '"suggested_actions"'
	run amp status $T --json
	assert_output --partial '"state": "locked"'
	assert_output --partial '"locked": true'
	assert_output --partial "\"suspended_by\": \"$E\""
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count hallucination_lock)" 1
	assert_fsck_clean
}

@test "rule 3: git config amp.lockThreshold sets the threshold" {
	git config amp.lockThreshold 2
	dispatch_acked
	reject_rounds 1
	at 200; review_round 1
	at 250; plant_reject
	at 500
	run amp watch --once
	assert_output --regexp "^escalated hallucination_lock $T $V "
	run escalation_file "$(the_escalation hallucination_lock)"
	assert_output --partial "2 rejected verdicts in a row (amp.lockThreshold 2)"
	run amp status $T --json
	assert_output --partial '"state": "locked"'
	assert_output --partial '"locked": true'
}

@test "rule 3: after an admin resume, rejects count again from zero" {
	dispatch_acked
	reject_rounds 3
	at 400; amp watch --once
	at 410; amp resume $T --from admin --reason "split the task" > /dev/null
	reject_rounds 2 420
	at 700
	run amp watch --once
	assert_output ""
	run amp status $T --json
	assert_output --partial '"state": "rejected"'
	assert_output --partial '"reject_count": 5'
	at 700; review_round 5
	at 750; plant_reject
	at 800
	run amp watch --once
	assert_output --regexp "^escalated hallucination_lock $T $V "
	assert_equal "$(escalation_count hallucination_lock)" 2
	run escalation_file "$(amp status $T --json | json_get "[e['msg_id'] for e in d['escalations'] if e['escalation_type'] == 'hallucination_lock'][-1]")"
	assert_output --partial "3 rejected verdicts since the last resume (amp.lockThreshold 3), the last $V"
}

@test "rule 4 lock warning: a review_request at reject_count >= 2 must say 'Lock is approaching', with the SSOT's count" {
	dispatch_acked
	reject_rounds 2
	at 300
	send_dispatch
	amp ack "$D" --from executor
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	printf '{"original_dispatch_ref":"%s","task_result_ref":"%s","review_scope":"full","diff_url":"https://example.invalid/c","reject_count":2}' "$D" "$R" > "$BATS_TEST_TMPDIR/p/rr.json"
	run amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/rr.json"
	assert_failure 3
	assert_output --partial '/payload/coordinator_notes: must say "Lock is approaching"'
	printf '{"original_dispatch_ref":"%s","task_result_ref":"%s","review_scope":"full","diff_url":"https://example.invalid/c","reject_count":1,"coordinator_notes":"Lock is approaching"}' "$D" "$R" > "$BATS_TEST_TMPDIR/p/rr.json"
	run amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/rr.json"
	assert_failure 3
	assert_output --partial "/payload/reject_count: is 1 but the SSOT counts 2"
	printf '{"original_dispatch_ref":"%s","task_result_ref":"%s","review_scope":"full","diff_url":"https://example.invalid/c","reject_count":2,"coordinator_notes":"Lock is approaching"}' "$D" "$R" > "$BATS_TEST_TMPDIR/p/rr.json"
	run amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/rr.json"
	assert_success
}

@test "rule 5 CI gating: a review_request with a failed CI entry is refused with exit 3" {
	dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	printf '{"original_dispatch_ref":"%s","task_result_ref":"%s","review_scope":"full","diff_url":"https://example.invalid/c","reject_count":0,"ci_status":{"xcode_cloud":"failed","codex_review":"passed"}}' "$D" "$R" > "$BATS_TEST_TMPDIR/p/rr.json"
	run amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/rr.json"
	assert_failure 3
	assert_output --partial "/payload/ci_status/xcode_cloud: CI failed"
	run amp status $T --json
	assert_equal "$(echo "$output" | json_get '[m["type"] for m in d["messages"]]')" '["task_dispatch", "task_result"]'
}

@test "rule 5: watch escalates ci_failure for a review_request with failed CI that arrived by a fetch" {
	dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	Q=review_request-$T-1772116400000
	plant "$(next_path $T $Q)" <<JSON
{"msg_id": "$Q", "protocol_version": "AMP/1.0", "type": "review_request", "from": "coordinator", "to": "reviewer",
 "task_id": "$T", "timestamp": "2026-02-26T14:33:20+00:00", "requires_ack": true,
 "payload": {"original_dispatch_ref": "$D", "task_result_ref": "$R", "review_scope": "full",
  "diff_url": "https://example.invalid/c", "reject_count": 0, "ci_status": {"xcode_cloud": "failed"}}}
JSON
	at 70
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated ci_failure $T $Q "
	assert_escalation "$(the_escalation ci_failure)" ci_failure warning "[\"$Q\"]" in_review 0 false
	run amp watch --once
	assert_output ""
}

@test "rule 6 confidence threshold: a verdict below 0.8 is escalated to the admin (info) with it, one at 0.8 is not; watch does it for a fetched one" {
	dispatch_acked
	write_reject_payload
	at 200; review_round 0
	at 210; run amp verdict $T --decision rejected --confidence 0.55 --payload "$BATS_TEST_TMPDIR/p/reject.json"
	assert_success
	assert_line --regexp "^amp verdict: conflict escalation escalation-$T-[0-9]+ recorded$"
	V=${lines[1]}
	# in the verdict's own commit: no watcher needed
	E=$(the_escalation conflict)
	run git show --name-only --format=%s refs/amp/messages
	assert_line --index 0 "review_verdict $T reviewer -> coordinator"
	assert_output --partial ".msg.$V.json"
	assert_output --partial ".msg.$E.json"
	assert_escalation "$E" conflict info "[\"$V\"]" rejected 1 false
	run escalation_file "$E"
	assert_output --partial "confidence 0.55 < 0.8"
	run amp watch --once
	assert_success
	assert_output ""
	run amp status $T --json
	assert_output --partial '"state": "rejected"'
	at 220; amp ack "$V" --from coordinator
	# a fetched doubtful verdict: watch escalates it
	at 300; review_round 1
	at 350; plant_reject "" 0.5
	run amp watch --once
	assert_output --regexp "^escalated conflict $T $V "
	assert_equal "$(escalation_count conflict)" 2
	at 360; amp ack "$V" --from coordinator
	at 400; review_round 2
	sed 's/"confidence": 0.95/"confidence": 0.8/' "$BATS_TEST_TMPDIR/p/verdict.json" > v8.json
	at 420; V=$(amp verdict $T --decision approved --confidence 0.8 --payload v8.json)
	at 430; amp ack "$V" --from coordinator
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count conflict)" 2
}

@test "rule 7 critical = suspend all: after the lock only the admin acts; watch's own escalations still go in" {
	dispatch_acked
	reject_rounds 3
	at 400; amp watch --once
	E=$(the_escalation hallucination_lock)
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "task $T is locked by escalation $E: only the admin may act until 'amp resume'"
	# the suspension stops the clocks: no ACK or heartbeat escalation piles up
	at 99999
	run amp watch --once
	assert_output ""
	# an escalation is never refused
	run amp escalate $T --from executor --type conflict --severity warning --description "blocked"
	assert_success
}

@test "rule 8 branch validation: a dispatch to main that arrived by a fetch is escalated once" {
	local B=task_dispatch-$T-1772116330000
	sed "s/\"feature\/watch-breath-v2\"/\"main\"/" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/main.json"
	$PY -c 'import json,sys; print(json.dumps({"msg_id": sys.argv[1], "protocol_version": "AMP/1.0", "type": "task_dispatch", "from": "coordinator", "to": "executor", "task_id": sys.argv[2], "timestamp": "2026-02-26T14:32:10+00:00", "requires_ack": True, "payload": json.load(open(sys.argv[3]))}, indent=2))' "$B" $T "$BATS_TEST_TMPDIR/p/main.json" |
		plant "$(next_path $T $B)"
	at 20
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated branch_violation $T $B \(escalation-$T-[0-9]+\)$"
	E=$(the_escalation branch_violation)
	assert_escalation "$E" branch_violation warning "[\"$B\"]" dispatched 0 false
	run escalation_file "$E"
	assert_output --partial "protected branch 'main'"
	run amp watch --once
	assert_output ""
	rm .git/amp/watch.json
	run amp watch --once
	assert_output ""
	assert_equal "$(escalation_count branch_violation)" 1
}

@test "rule 10 no silent failure: a message file that is not JSON is escalated as unknown, once" {
	send_dispatch
	local B=task_result-$T-1772116400000
	printf '{"msg_id": "%s", "type": "task_res' "$B" | plant "$(next_path $T $B)"
	# the task is not blocked: status shows the record it cannot read
	run amp status $T
	assert_success
	assert_output --partial "unreadable record 000002.msg.$B.json: invalid JSON"
	run amp status $T --json
	assert_output --partial '"unreadable": ['
	at 10
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $B "
	run git show "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep '\.msg\.escalation-')"
	assert_output --partial '"escalation_type": "unknown"'
	assert_output --partial "invalid JSON at line 1"
	assert_output --partial "\"$B\""
	run amp watch --once
	assert_output ""
	rm .git/amp/watch.json
	run amp watch --once
	assert_output ""
	assert_equal "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.escalation-')" 1
	# the broken record's msg_id stays taken, and the task goes on
	run amp ack "$D" --from executor
	assert_success
}

@test "rule 10: a schema-invalid message in the SSOT is escalated as unknown, naming the field" {
	send_dispatch
	local B=task_result-$T-1772116400000
	plant "$(next_path $T $B)" <<JSON
{"msg_id": "$B", "protocol_version": "AMP/1.0", "type": "task_result", "from": "executor", "to": "coordinator",
 "task_id": "$T", "timestamp": "2026-02-26T14:33:20+00:00", "requires_ack": true,
 "payload": {"subtask_id": "T-2026-044-S1", "completion_status": "done"}}
JSON
	at 10
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $B "
	E=$(the_escalation unknown)
	# the transition table refuses it (the dispatch has no ACK): it moves nothing
	assert_escalation "$E" unknown warning "[\"$B\"]" dispatched 0 false
	run escalation_file "$E"
	assert_output --partial "not schema-valid"
	assert_output --partial "/payload"
}

@test "rule 10: watch fails with exit 4 when the SSOT cannot be read" {
	run amp watch --once --repo "$BATS_TEST_TMPDIR/nowhere"
	assert_failure 4
	assert_output --partial "not a git repository"
	git init -q "$BATS_TEST_TMPDIR/bare"
	run amp watch --once --repo "$BATS_TEST_TMPDIR/bare"
	assert_failure 4
	assert_output --partial "run 'amp init'"
	# a tree of the SSOT is missing from the object database
	send_dispatch
	tree=$(git rev-parse "refs/amp/messages:$(task_path "$T")")
	loosen_objects
	rm ".git/objects/${tree:0:2}/${tree:2}"
	fsck_exempt . "a tree removed on purpose"
	run amp watch --once
	assert_failure 4
	assert_output --partial "cannot read"
}

@test "idempotence: two passes, a lost state file and a corrupt one give one escalation per cause" {
	send_dispatch
	at 400
	run amp watch --once
	assert_line --index 0 --partial "escalated ack_timeout"
	run amp watch --once
	assert_output ""
	rm .git/amp/watch.json
	run amp watch --once
	assert_output ""
	echo '{"version": 1, "tip": "garbage' > .git/amp/watch.json
	run amp watch --once
	assert_output ""
	run amp watch --once --full
	assert_output ""
	assert_equal "$(escalation_count ack_timeout)" 1
}

@test "idempotence: two watchers at once give one escalation per cause" {
	local i
	send_dispatch
	D1=$D
	dispatch_acked
	reject_rounds 2
	at 300; review_round 2
	at 350; plant_reject
	for i in 1 2 3 4; do
		amp send task_dispatch --task T-2026-05$i --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
	at 1000
	for i in 1 2 3 4; do
		amp watch --once > "$BATS_TEST_TMPDIR/w$i.out" 2>&1 &
	done
	wait
	cat "$BATS_TEST_TMPDIR"/w*.out
	! grep -v '^escalated ' "$BATS_TEST_TMPDIR"/w*.out
	assert_equal "$(escalation_count hallucination_lock)" 1
	for i in 1 2 3 4; do
		assert_equal "$(escalation_count ack_timeout T-2026-05$i)" 1
	done
	# each cause printed by exactly one watcher
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/w*.out | sort | uniq -d)" ""
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/w*.out | wc -l)" 5
	run amp watch --once
	assert_output ""
	assert_fsck_clean
}

@test "watch keeps its state in the git dir and its own ref, touches no user ref, and --json prints JSON lines" {
	send_dispatch
	at 400
	run amp watch --once --json
	assert_success
	run json_get 'd["escalation_type"] + " " + d["cause"] + " " + d["severity"]' <<<"$output"
	assert_output "ack_timeout $D warning"
	assert_file_exists .git/amp/watch.json
	# refs/amp-seen/messages: the last intact tip (rewrite detection)
	assert_equal "$(git for-each-ref --format='%(refname)' | sort | tr '\n' ' ')" "refs/amp-seen/messages refs/amp/errors refs/amp/messages "
}

@test "watch --interval loops until SIGTERM and exits 0" {
	send_dispatch
	at 400
	watch_loop_stopped_by TERM
	assert_equal "$rc" 0
	assert_equal "$(grep -c '^escalated ack_timeout' "$BATS_TEST_TMPDIR/loop.out")" 1
}

@test "the long scenario: dispatch, three rejects, lock, refused result, resume, approval" {
	dispatch_acked
	reject_rounds 3
	# the third verdict locked the task as it landed: watch has nothing to add
	assert_equal "$(escalation_count hallucination_lock)" 1
	assert_escalation "$(the_escalation hallucination_lock)" hallucination_lock critical "[\"$V\", \"$D\"]" locked 3 true
	at 400
	run amp watch --once
	assert_output ""
	run amp status $T
	assert_line --index 0 --regexp "^$T  locked  rejects 3  suspended by escalation-"
	at 410
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	assert_output --partial "is locked by escalation"
	at 420
	run amp resume $T --reason "Admin reviewed the diff: hold the session in a property"
	assert_failure 2
	run amp resume $T --from admin --reason "Admin reviewed the diff: hold the session in a property"
	assert_success
	assert_output --partial "resumed $T (locked -> rejected)"
	at 500; review_round 3
	at 600; V=$(amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	at 610; amp ack "$V" --from coordinator
	run amp watch --once
	assert_output ""
	run amp status $T --json
	assert_output --partial '"state": "approved"'
	assert_output --partial '"reject_count": 3'
	run git log --format=%s refs/amp/messages
	assert_output --partial "resume $T admin"
	assert_fsck_clean
}
