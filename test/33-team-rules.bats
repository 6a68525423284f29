#!/usr/bin/env bats
# Issue 33, a team and not one agent per role: who may do what when several
# instances share a role.  A result comes from the executor instance that
# holds the claim (a released holder is refused and told who released it);
# an abort refuses the reviewer's verdict and the executor's result naming
# the abort, tells the admin once, and the admin reopens the task with a new
# round; a verdict that contradicts itself is refused naming its field.
# Time moves with AMP_NOW only.

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

# ---- 7. verdicts that contradict themselves --------------------------------------

@test "an approved verdict with a criterion passed: false is refused (exit 1, the schema) naming /payload/criteria_results/1/passed; so is approved_with_fix; null passes" {
	to_in_review
	at 20
	sed '0,/"passed": true, "evidence": "CI green"/s//"passed": false, "evidence": "CI red"/' "$(P verdict.json)" > "$(P contradicts.json)"
	grep -q '"passed": false' "$(P contradicts.json)"
	m=$(commit_count)
	# the schema's rule (review_verdict.schema.json): exit 1, like any
	# message that does not conform
	run --separate-stderr amp verdict $T --decision approved --confidence 0.9 --payload "$(P contradicts.json)"
	assert_equal "$status" 1
	assert_equal "$stderr" "amp verdict: error: /payload/criteria_results/1/passed: must not be false"
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["decision"]="approved_with_fix"; d["direct_fixes"]=[{"file":"a.swift","change_type":"typo","diff_lines":1}]; json.dump(d, open(sys.argv[2], "w"))' "$(P contradicts.json)" "$(P fix.json)"
	run --separate-stderr amp verdict $T --decision approved_with_fix --confidence 0.9 --payload "$(P fix.json)"
	assert_equal "$status" 1
	assert_equal "$stderr" "amp verdict: error: /payload/criteria_results/1/passed: must not be false"
	assert_equal "$(commit_count)" "$m"
	assert_sub $S1 in_review 1
	# not verified (null) is no contradiction
	sed '0,/"passed": true, "evidence": "CI green"/s//"passed": null, "evidence": "CI still running"/' "$(P verdict.json)" > "$(P unknown.json)"
	allowed amp verdict $T --decision approved --confidence 0.9 --payload "$(P unknown.json)"
	assert_sub $S1 approved 1
}

@test "review_scope incremental on a subtask's first review is refused naming /payload/review_scope; after a rejected verdict it is taken" {
	to_submitted
	amp ack "$R" --from coordinator > /dev/null
	at 15
	sed 's/"review_scope": "full"/"review_scope": "incremental"/' "$(review_payload "$D" "$R")" > "$(P incremental.json)"
	refused "/payload/review_scope" "" amp send review_request --task $T --from coordinator --payload "$(P incremental.json)"
	assert_equal "$stderr" "amp send: error: /payload/review_scope: is \"incremental\", but subtask $S1 has no earlier verdict to review from: its first review is \"full\""
	assert_sub $S1 submitted 1
	request "$D" "$R"
	amp ack "$Q" --from reviewer > /dev/null
	at 20; verdict rejected
	at 30; dispatch
	at 35; amp ack "$D" --from executor > /dev/null
	at 40; result
	amp ack "$R" --from coordinator > /dev/null
	at 45
	sed -e 's/"review_scope": "full"/"review_scope": "incremental"/' -e 's/"reject_count": 0/"reject_count": 1/' "$(review_payload "$D" "$R")" > "$(P incremental.json)"
	allowed amp send review_request --task $T --from coordinator --payload "$(P incremental.json)"
	assert_sub $S1 in_review 2
}

# ---- 2. a dead executor overwrites the live one -----------------------------------

@test "amp watch releases a silent holder's claim with ONE heartbeat_timeout; the released holder's later result is refused (exit 3), told who released it and who holds it" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim $T --agent alice > /dev/null
	C=$(amp status $T --json | json_get 'd["claims"][0]["claim"]')
	at 1900
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T "
	assert_equal "${#lines[@]}" 1
	assert_equal "$(escalation_count heartbeat_timeout)" 1
	run -0 amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
	at 1910
	amp claim $T --agent bob > /dev/null
	at 1920
	AMP_AGENT=bob run -0 amp send task_result --task $T --from executor --context-ref "$D" --payload "$(P result.json)"
	B=$output
	at 1930
	m=$(commit_count)
	AMP_AGENT=alice run --separate-stderr amp send task_result --task $T --from executor --context-ref "$D" --payload "$(P result.json)"
	assert_equal "$status" 3
	assert_equal "$stderr" "amp send: error: /from: your claim on $T ($C) was released at 2026-02-26T15:03:47+00:00 by system (\"the lease of alice ran out at 2026-02-26T15:02:12+00:00\"); bob claimed it after you (claim-1772118237000): claim it again before you write to it as the executor (you are alice)"
	assert_equal "$(commit_count)" "$m"
	assert_equal "$(sub $S1 result)" "$B"
}

# ---- 3. abort mid-review ------------------------------------------------------------

@test "abort mid-review: the verdict and the result are refused saying the task is aborted, the admin hears it once (a conflict escalation), resume is refused saying what the admin can do, and the admin's re-dispatch reopens the task with a new round" {
	to_in_review
	at 60
	amp abort $T --from coordinator --reason "plan changed" > /dev/null
	why="task $T was aborted by the coordinator at 2026-02-26T14:33:07+00:00 (\"plan changed\"): it takes no more writes from the"
	at 70
	MSG_COMMITS=1 refused "$why reviewer (the admin may reopen it with a new task_dispatch)" "" amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	[[ $stderr != *"only the admin may write to it"* ]]
	assert_equal "$(escalation_count conflict)" 1
	E=$(the_escalation conflict)
	run -0 escalation_file "$E"
	assert_output --partial "\"from\": \"system\""
	assert_output --partial "\"to\": \"admin\""
	assert_output --partial "\"affected_msgs\": [
      \"$D\""
	assert_equal "$(escalation_file "$E" | json_get 'd["payload"]["description"]')" "The reviewer's review_verdict was refused: $why reviewer (the admin may reopen it with a new task_dispatch). Agents still write to it: reopen it with a new task_dispatch from the admin, or tell them it ended."
	# once: the executor's refused result adds no second escalation
	at 80
	refused "$why executor" "" amp send task_result --task $T --from executor --payload "$(P result.json)"
	refused "$why reviewer" "" amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	refused "$why reviewer" "" amp escalate $T --from reviewer --type conflict --severity warning --description "my verdict was refused"
	assert_equal "$(escalation_count conflict)" 1
	# resume is not for an aborted task
	run --separate-stderr amp resume $T --from admin --reason "carry on"
	assert_equal "$status" 3
	assert_equal "$stderr" "amp resume: error: /task_id: a resume is refused while task $T is aborted: an abort is not a suspension: the admin reopens the task with a new task_dispatch, or leaves it ended"
	# the coordinator cannot reopen it; the admin can, even with S1 in review
	refused "$why coordinator" "" amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 in_review 1
	at 90
	allowed amp send task_dispatch --task $T --from admin --to executor --payload "$(P dispatch.json)"
	D2=$output
	assert_sub $S1 dispatched 2
	[ "$(task_field state)" = dispatched ]
	[ "$(task_field aborted)" = false ]
	# the new round runs: ACK, result, review, verdict
	at 95; amp ack "$D2" --from executor > /dev/null
	at 100; result
	amp ack "$R" --from coordinator > /dev/null
	at 105; request "$D2" "$R"
	amp ack "$Q" --from reviewer > /dev/null
	at 110; verdict approved
	assert_sub $S1 approved 2
	[ "$(task_field state)" = approved ]
	run -0 amp fsck
}

@test "amp watch re-checks a fetched review_request: incremental on a subtask's first review is escalated once, naming /payload/review_scope" {
	to_submitted
	amp ack "$R" --from coordinator > /dev/null
	at 15
	id=review_request-$T-1772116342000
	$PY - "$D" "$R" "$id" "$AMP_NOW" > "$(P fetched.json)" <<'PY'
import json, sys
d, r, i, now = sys.argv[1:5]
print(json.dumps({"msg_id": i, "protocol_version": "AMP/1.0", "type": "review_request",
  "from": "coordinator", "to": "reviewer", "task_id": "T-2026-044", "timestamp": now,
  "requires_ack": True, "ack_timeout_sec": 600,
  "payload": {"original_dispatch_ref": d, "task_result_ref": r, "review_scope": "incremental",
              "diff_url": "https://example.invalid/compare/main...feature/watch-breath-v2", "reject_count": 0}}, indent=2))
PY
	plant "$(next_path $T "$id")" < "$(P fetched.json)"
	run -0 amp watch --once
	assert_output --regexp "^escalated unknown $T "
	run -0 amp watch --once
	assert_output ""
	assert_equal "$(escalation_count unknown)" 1
	[[ "$(escalation_file "$(the_escalation unknown)" | json_get 'd["payload"]["description"]')" == *"/payload/review_scope: is \"incremental\", but subtask $S1 has no earlier verdict"* ]]
}
