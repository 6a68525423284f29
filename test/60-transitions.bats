#!/usr/bin/env bats
# The transition table of lib/protocol/task.c (amp_transitions[]), row by row, at
# write time through the real commands and with no watcher running: a
# refused row exits 3 naming its rule and the current state, writes nothing
# on the messages ref and one entry on the errors ref; an allowed row moves
# the subtask (or the task) where the table says.  Then the per-subtask
# tracking, two writers racing, the lock, late ACKs, sender clocks and
# idempotent retries, all enforced by the write itself.

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

# ---- one test per row ------------------------------------------------------
# Test names: "row: <event> in <state>: allowed|refused ..."; the last test of
# this section checks that every row of the table has exactly one.

@test "row: task_dispatch in new: allowed, the subtask is dispatched in round 1" {
	at 0
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	D=$output
	assert_sub $S1 dispatched 1
	[ "$(sub $S1 dispatch)" = "$D" ]
	[ "$(task_field state)" = dispatched ]
}

@test "row: task_dispatch in awaiting_approval: allowed, a new round replaces the waiting dispatch" {
	to_awaiting_approval
	assert_sub $S1 awaiting_approval 1
	at 10
	# the coordinator at the same level: the new dispatch waits in turn
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(risk_payload high)"
	D2=$output
	assert_sub $S1 awaiting_approval 2
	[ "$(sub $S1 dispatch)" = "$D2" ]
	[ "$(task_field awaiting_approval)" = "$D2" ]
	# the admin may lower the level: the new round needs no approval
	at 20
	allowed amp send task_dispatch --task $T --from admin --to executor --payload "$(P dispatch.json)"
	D3=$output
	assert_sub $S1 dispatched 3
	[ "$(sub $S1 dispatch)" = "$D3" ]
	[ "$(task_field awaiting_approval)" = null ]
}

@test "row: task_dispatch in dispatched: allowed, a new round" {
	to_dispatched
	at 10
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 2
	[ "$(sub $S1 dispatch)" = "$output" ]
}

@test "row: task_dispatch in in_progress: allowed, a new round that needs its own ACK" {
	to_in_progress
	at 10
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 2
	[ "$(sub $S1 dispatch)" = "$output" ]
}

@test "row: task_dispatch in submitted: allowed, a new round forgets the result" {
	to_submitted
	assert_sub $S1 submitted 1
	at 20
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 2
	[ "$(sub $S1 result)" = null ]
}

@test "row: task_dispatch in in_review: refused, the review_request awaits a verdict" {
	to_in_review
	at 20
	refused "its review_request awaits a verdict" in_review \
		amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert [ "$(grep -c /payload/subtasks/0/subtask_id <<< "$stderr")" -eq 1 ]
	assert_sub $S1 in_review 1
}

@test "row: task_dispatch in approved: refused, an approved subtask is done" {
	to_approved
	at 30
	refused "it is approved, hence done" approved \
		amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 approved 1
	[ "$(task_field state)" = approved ]
}

@test "row: task_dispatch in rejected: allowed, round 2 starts with the rejects kept" {
	to_rejected
	assert_sub $S1 rejected 1
	at 30
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 2
	[ "$(sub $S1 rejects)" = 1 ]
	[ "$(sub $S1 review_request)" = null ]
	[ "$(sub $S1 verdict)" = null ]
}

@test "row: ack in awaiting_approval: refused until the admin approves, with a permission_denied escalation" {
	to_awaiting_approval
	at 5
	MSG_COMMITS=1 refused "cannot be ACKed before 'amp approve $T'" awaiting_approval amp ack "$D" --from executor
	assert [ "$(escalation_count permission_denied)" -eq 1 ]
	assert_sub $S1 awaiting_approval 1
	[ "$(amp status $T --json | json_get "d['messages'][0]['acked']")" = false ]
}

@test "row: ack in dispatched: allowed, the subtask is in_progress (ACK on Start)" {
	to_dispatched
	at 5
	allowed amp ack "$D" --from executor
	assert_output "acked $D"
	assert_sub $S1 in_progress 1
}

@test "row: task_result in new: refused, no dispatch lists the subtask" {
	to_in_progress
	at 10
	refused "not a subtask of any task_dispatch of $T" new \
		amp send task_result --task $T --from executor --payload "$(P result2.json)"
	[ "$(amp status $T --json | json_get "[s['subtask_id'] for s in d['subtasks']]")" = "[\"$S1\"]" ]
	assert_sub $S1 in_progress 1
}

@test "row: task_result in awaiting_approval: refused before the admin's approval, with a permission_denied escalation" {
	to_awaiting_approval
	at 10
	MSG_COMMITS=1 refused "its dispatch awaits the admin's approval" awaiting_approval \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert [ "$(escalation_count permission_denied)" -eq 1 ]
	assert_sub $S1 awaiting_approval 1
}

@test "row: task_result in dispatched: refused, ACK the dispatch first" {
	to_dispatched
	at 10
	refused "ACK the dispatch first" dispatched \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 dispatched 1
}

@test "row: task_result in in_progress: allowed, the subtask is submitted" {
	to_in_progress
	at 10
	allowed amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 submitted 1
	[ "$(sub $S1 result)" = "$output" ]
}

@test "row: task_result in submitted: allowed, the newer result is the one to review" {
	to_submitted
	at 12
	allowed amp send task_result --task $T --from executor --payload "$(P result.json)"
	R2=$output
	[ "$R2" != "$R" ]
	assert_sub $S1 submitted 1
	[ "$(sub $S1 result)" = "$R2" ]
}

@test "row: task_result in in_review: refused while its review_request awaits a verdict" {
	to_in_review
	at 20
	refused "its review_request awaits a verdict" in_review \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 in_review 1
}

@test "row: task_result in approved: refused, an approved subtask takes no more results" {
	to_approved
	at 30
	refused "it takes no more results" approved \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 approved 1
}

@test "row: task_result in rejected: refused, a new dispatch starts the next round" {
	to_rejected
	at 30
	refused "a new task_dispatch starts the next round" rejected \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	assert_sub $S1 rejected 1
}

@test "row: review_request in new: refused for a result of a subtask no dispatch lists (a fetched result)" {
	to_in_progress
	# S2's result came by a fetch or a hand-made commit: no dispatch lists S2.
	at 10
	R2=task_result-$T-1772116337000
	$PY - "$(P result2.json)" "$R2" > "$BATS_TEST_TMPDIR/r2.json" <<'PY'
import json, sys
print(json.dumps({"msg_id": sys.argv[2], "protocol_version": "AMP/1.0", "type": "task_result",
                  "from": "executor", "to": "coordinator", "task_id": "T-2026-044",
                  "timestamp": "2026-02-26T14:32:17+00:00", "requires_ack": True,
                  "ack_timeout_sec": 300, "payload": json.load(open(sys.argv[1]))}, indent=2))
PY
	plant "$(next_path $T "$R2")" < "$BATS_TEST_TMPDIR/r2.json"
	at 15
	refused "no task_dispatch of the task lists it" new \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R2")"
	assert_sub $S1 in_progress 1
}

@test "row: review_request in awaiting_approval: refused while the round's dispatch awaits approval" {
	to_submitted
	at 20
	dispatch "$(basename "$(risk_payload high)")"
	assert_sub $S1 awaiting_approval 2
	at 25
	refused "its dispatch awaits the admin's approval" awaiting_approval \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
}

@test "row: review_request in dispatched: refused, the new round has no result to review" {
	to_submitted
	at 20
	D1=$D
	dispatch
	assert_sub $S1 dispatched 2
	at 25
	refused "it has no task_result to review" dispatched \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
	refused "it has no task_result to review" dispatched \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D1" "$R")"
}

@test "row: review_request in in_progress: refused, the round-1 result does not answer round 2" {
	to_submitted
	at 20
	dispatch
	at 22
	amp ack "$D" --from executor
	assert_sub $S1 in_progress 2
	at 25
	refused "it has no task_result to review" in_progress \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
}

@test "row: review_request in submitted: allowed, the subtask is in_review" {
	to_submitted
	at 15
	allowed amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
	assert_sub $S1 in_review 1
	[ "$(sub $S1 review_request)" = "$output" ]
}

@test "row: review_request in in_review: refused, one review at a time" {
	to_in_review
	at 20
	refused "it is under review already" in_review \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
	[ "$(sub $S1 review_request)" = "$Q" ]
}

@test "row: review_request in approved: refused" {
	to_approved
	at 30
	refused "it is approved" approved \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")"
}

@test "row: review_request in rejected: refused, a new dispatch starts the next round" {
	to_rejected
	at 30
	refused "a new task_dispatch starts the next round" rejected \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R" 1)"
}

@test "row: review_verdict in in_review: allowed, approved or approved_with_fix approves, rejected rejects" {
	at 0
	dispatch dispatch2.json
	at 5; amp ack "$D" --from executor
	at 10; result; R1=$R; result result2.json; R2=$R
	at 15
	request "$D" "$R1"; Q1=$Q
	request "$D" "$R2"; Q2=$Q
	assert_sub $S1 in_review 1
	assert_sub $S2 in_review 1
	at 20
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["direct_fixes"]=[{"file": "BreathEngine.swift", "change_type": "typo", "diff_lines": 1}]; json.dump(d, open(sys.argv[2], "w"))' "$(P verdict.json)" "$(P fix.json)"
	allowed amp verdict $T --decision approved_with_fix --confidence 0.8 --payload "$(P fix.json)" --context-ref "$Q1"
	assert_sub $S1 approved 1
	[ "$(sub $S1 verdict)" = "$output" ]
	write_reject_payload
	allowed amp verdict $T --decision rejected --confidence 0.8 --payload "$(P reject.json)" --context-ref "$Q2"
	assert_sub $S2 rejected 1
	[ "$(sub $S2 verdict)" = "$output" ]
	[ "$(sub $S2 rejects)" = 1 ]
	[ "$(task_field state)" = rejected ]
}

@test "row: review_verdict in approved: refused, the review_request has its verdict" {
	to_approved
	write_reject_payload
	at 30
	refused "its review_request has a verdict already" approved \
		amp verdict $T --decision rejected --confidence 0.9 --payload "$(P reject.json)"
	[ "$(sub $S1 verdict)" = "$V" ]
	[ "$(task_field reject_count)" = 0 ]
}

@test "row: review_verdict in rejected: refused, the review_request has its verdict" {
	to_rejected
	at 30
	refused "its review_request has a verdict already" rejected \
		amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)" --context-ref "$Q"
	assert_sub $S1 rejected 1
	[ "$(task_field state)" = rejected ]
}

@test "row: review_verdict in *: refused, a request whose subtask moved on to a new round (dispatched)" {
	to_rejected
	at 30
	dispatch
	assert_sub $S1 dispatched 2
	at 35
	refused "it answers no open review_request" dispatched \
		amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)" --context-ref "$Q"
	assert_sub $S1 dispatched 2
}

@test "row: approve in awaiting_approval: allowed, the dispatch may be ACKed" {
	to_awaiting_approval
	at 10
	allowed amp approve $T --from admin
	assert_output "approved $T: $D may start (awaiting_approval -> dispatched)"
	assert_sub $S1 dispatched 1
	[ "$(task_field state)" = dispatched ]
}

@test "row: approve in *: refused, nothing awaits approval (in_progress)" {
	to_in_progress
	at 10
	refused "no dispatch of the task awaits approval" in_progress amp approve $T --from admin
}

@test "row: abort in new: refused, the task has no records" {
	refused "the task has no records" new amp abort $T --from coordinator --reason "never started"
	run amp status $T
	assert_failure
}

@test "row: abort in aborted: refused, it is aborted already" {
	to_in_progress
	at 10
	amp abort $T --from coordinator --reason "plan changed"
	at 20
	refused "it is aborted already" aborted amp abort $T --from admin --reason "again"
	refused "it is aborted already" aborted amp abort $T --from coordinator --reason "again"
}

@test "row: abort in *: allowed, the task is aborted (in_progress)" {
	to_in_progress
	at 10
	allowed amp abort $T --from coordinator --reason "plan changed"
	[ "$(task_field state)" = aborted ]
	[ "$(task_field aborted)" = true ]
}

@test "row: heartbeat in new: refused, the task has no records" {
	refused "the task has no records" new amp heartbeat $T --from executor
}

@test "row: heartbeat in *: allowed, the state does not move (in_progress)" {
	to_in_progress
	at 600
	allowed amp heartbeat $T --from executor --note "still on it"
	[ "$(task_field state)" = in_progress ]
	assert_sub $S1 in_progress 1
	[ "$(amp status $T --json | json_get "[c['type'] for c in d['controls']]")" = '["heartbeat"]' ]
}

@test "row: resume in suspended: allowed, the state it had before" {
	to_in_progress
	at 10
	E=$(amp escalate $T --from coordinator --type conflict --severity critical --description "stop")
	[ "$(task_field state)" = suspended ]
	at 20
	allowed amp resume $T --from admin --reason "carry on"
	assert_output "resumed $T (suspended -> in_progress): lifted $E"
	[ "$(task_field state)" = in_progress ]
}

@test "row: resume in locked: allowed, the state before and the lock count starts again" {
	git config amp.lockThreshold 1
	to_rejected
	[ "$(task_field state)" = locked ]
	at 30
	allowed amp resume $T --from admin --reason "Admin gives the fix"
	[ "$(task_field state)" = rejected ]
	[ "$(task_field locked)" = false ]
}

@test "row: resume in aborted: refused, an abort is not a suspension (issue 33)" {
	to_in_progress
	at 10
	amp abort $T --from coordinator --reason "plan changed" > /dev/null
	at 20
	refused "an abort is not a suspension: the admin reopens the task with a new task_dispatch" aborted amp resume $T --from admin --reason "carry on"
}

@test "row: resume in *: refused, nothing to resume (in_progress)" {
	to_in_progress
	at 10
	refused "nothing to resume" in_progress amp resume $T --from admin --reason "nothing"
}

@test "every row of amp_transitions[] in lib/protocol/task.c has exactly one row test here" {
	run $PY - "$AMP_SRC/lib/protocol/task.c" "$BATS_TEST_FILENAME" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
table = src[src.index("const amp_transition amp_transitions[]"):]
table = table[:table.index("{ NULL, NULL")]
rows = re.findall(r'\{\s*"(\w+)",\s*"([\w*]+)",\s*([01]),', table)
tests = re.findall(r'^@test "row: (\w+) in ([\w*]+): (allowed|refused)', open(sys.argv[2]).read(), re.M)
want = {(e, s): "allowed" if a == "1" else "refused" for e, s, a in rows}
bad = []
if len(rows) < 30 or len(want) != len(rows):
    bad.append(f"the table did not parse: {len(rows)} rows, {len(want)} distinct")
for (e, s), verb in want.items():
    named = [t for t in tests if t[:2] == (e, s)]
    if len(named) != 1:
        bad.append(f"row {e} in {s}: {len(named)} tests")
    elif named[0][2] != verb:
        bad.append(f"row {e} in {s} is {verb}, its test says {named[0][2]}")
for t in tests:
    if t[:2] not in want:
        bad.append(f"test for {t[0]} in {t[1]}: no such row")
print("\n".join(bad) or f"{len(rows)} rows, {len(tests)} tests")
sys.exit(1 if bad else 0)
PY
	assert_success
	assert_output --regexp '^[0-9]+ rows, [0-9]+ tests$'
}

# ---- subtasks ----------------------------------------------------------------

@test "subtasks: approving S1 leaves the task unapproved; approving S2 too approves it" {
	at 0
	dispatch dispatch2.json
	assert_sub $S1 dispatched 1
	assert_sub $S2 dispatched 1
	at 5; amp ack "$D" --from executor
	assert_sub $S1 in_progress 1
	assert_sub $S2 in_progress 1
	at 10; result; R1=$R
	result result2.json; R2=$R
	at 15; request "$D" "$R1"; Q1=$Q
	at 20; verdict approved "$Q1"; V1=$V
	assert_sub $S1 approved 1
	assert_sub $S2 submitted 1
	[ "$(task_field state)" = submitted ]
	run amp status $T
	assert_line --index 0 "$T  submitted  rejects 0"
	# S1 takes no more results; S2 still may
	refused "it takes no more results" approved \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	at 25; request "$D" "$R2"; Q2=$Q
	[ "$(task_field state)" = in_review ]
	at 30; verdict approved "$Q2"
	assert_sub $S2 approved 1
	[ "$(sub $S1 verdict)" = "$V1" ]
	[ "$(sub $S2 verdict)" = "$V" ]
	[ "$(task_field state)" = approved ]
	run amp status $T
	assert_line --index 0 "$T  approved  rejects 0"
}

@test "subtasks: a re-dispatch after a rejection starts round 2, whose review needs a round-2 result" {
	to_rejected
	D1=$D R1=$R
	at 30; dispatch; D2=$D
	assert_sub $S1 dispatched 2
	[ "$(sub $S1 dispatch)" = "$D2" ]
	[ "$(sub $S1 rejects)" = 1 ]
	at 35; amp ack "$D2" --from executor
	assert_sub $S1 in_progress 2
	# the round-1 result answers neither dispatch now
	refused "it has no task_result to review" in_progress \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D2" "$R1" 1)"
	refused "it has no task_result to review" in_progress \
		amp send review_request --task $T --from coordinator --payload "$(review_payload "$D1" "$R1" 1)"
	at 40; result; R2=$R
	assert_sub $S1 submitted 2
	# the round-2 result under the round-1 dispatch: not this round
	run --separate-stderr amp send review_request --task $T --from coordinator --payload "$(review_payload "$D1" "$R2" 1)"
	assert_failure 3
	[[ $stderr == *"/payload/original_dispatch_ref: $D1 is not the dispatch of subtask $S1's current round ($D2)"* ]]
	allowed amp send review_request --task $T --from coordinator --payload "$(review_payload "$D2" "$R2" 1)"
	assert_sub $S1 in_review 2
}

@test "subtasks: a review_verdict with no dispatch and no review_request is refused and approves nothing" {
	at 0
	refused "no review_request of task $T awaits a verdict" new \
		amp send review_verdict --task $T --from reviewer --to coordinator --payload "$(P verdict.json)"
	run amp status $T
	assert_failure
	run amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	assert_failure 3
	assert_output --partial "no review_request of task $T in the SSOT"
	to_in_progress
	at 10
	refused "no review_request of task $T awaits a verdict" in_progress \
		amp send review_verdict --task $T --from reviewer --to coordinator --payload "$(P verdict.json)"
	[ "$(task_field state)" = in_progress ]
	assert_sub $S1 in_progress 1
}

@test "subtasks: one verdict per review_request, through amp verdict and amp send review_verdict --context-ref" {
	to_approved
	write_reject_payload
	at 30
	refused "review_request $Q is not awaiting a verdict" approved \
		amp verdict $T --decision rejected --confidence 0.9 --payload "$(P reject.json)" --context-ref "$Q"
	refused "review_request $Q is not awaiting a verdict" approved \
		amp send review_verdict --task $T --from reviewer --to coordinator --context-ref "$Q" --payload "$(P verdict.json)"
	[ "$(amp status $T --json | json_get "len([m for m in d['messages'] if m['type'] == 'review_verdict'])")" = 1 ]
	[ "$(sub $S1 verdict)" = "$V" ]
	[ "$(task_field state)" = approved ]
}

# ---- racing writers ----------------------------------------------------------

# race CMD1 -- CMD2: runs both in the background, released at once; their
# exit codes go to rc1 and rc2, their stdout to out1 and out2, their stderr
# to err1 and err2 under $BATS_TEST_TMPDIR.
race() {
	local go=$BATS_TEST_TMPDIR/go a=() b=() i pids=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	rm -f "$go"
	for i in 1 2; do
		(
			local rc=0
			while [ ! -e "$go" ]; do sleep 0.01; done
			if [ $i = 1 ]; then "${a[@]}"; else "${b[@]}"; fi \
				> "$BATS_TEST_TMPDIR/out$i" 2> "$BATS_TEST_TMPDIR/err$i" || rc=$?
			echo $rc > "$BATS_TEST_TMPDIR/rc$i"
		) &
		pids+=($!)
	done
	touch "$go"
	wait "${pids[@]}" || true
}

@test "race: two reviewers answer one review_request at once, 8 rounds: exactly one verdict lands each round" {
	write_reject_payload
	for round in 1 2 3 4 5 6 7 8; do
		T=T-2026-10$round
		to_in_review
		at 20
		race amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)" --context-ref "$Q" \
			-- amp verdict $T --decision rejected --confidence 0.9 --payload "$(P reject.json)" --context-ref "$Q"
		rcs="$(cat "$BATS_TEST_TMPDIR/rc1") $(cat "$BATS_TEST_TMPDIR/rc2")"
		[ "$rcs" = "0 3" ] || [ "$rcs" = "3 0" ] || fail "round $round: exit codes $rcs: $(cat "$BATS_TEST_TMPDIR"/err*)"
		[ "$(amp status $T --json | json_get "len([m for m in d['messages'] if m['type'] == 'review_verdict'])")" = 1 ]
		if [ "$rcs" = "0 3" ]; then won=1 lost=2 want=approved; else won=2 lost=1 want=rejected; fi
		grep -q "review_request $Q is not awaiting a verdict" "$BATS_TEST_TMPDIR/err$lost"
		[ "$(sub $S1 verdict)" = "$(cat "$BATS_TEST_TMPDIR/out$won")" ]
		assert_sub $S1 $want 1
	done
	assert_fsck_clean
}

@test "race: two executors send a result at once, 8 rounds: both land (submitted -> submitted), the later one is reviewed" {
	for round in 1 2 3 4 5 6 7 8; do
		T=T-2026-20$round
		to_in_progress
		at 10
		race amp send task_result --task $T --from executor --payload "$(P result.json)" \
			-- amp send task_result --task $T --from executor --payload "$(P result.json)"
		[ "$(cat "$BATS_TEST_TMPDIR/rc1") $(cat "$BATS_TEST_TMPDIR/rc2")" = "0 0" ] ||
			fail "round $round: $(cat "$BATS_TEST_TMPDIR"/err*)"
		last=$(amp status $T --json | json_get "[m['msg_id'] for m in d['messages'] if m['type'] == 'task_result']")
		[ "$(json_get 'len(d)' <<< "$last")" = 2 ]
		[ "$(sub $S1 result)" = "$(json_get 'd[-1]' <<< "$last")" ]
		assert_sub $S1 submitted 1
	done
}

# ---- the lock without a watcher ----------------------------------------------

@test "lock: with no watcher, the third rejecting verdict writes the hallucination_lock in its own commit" {
	reject_round 0
	reject_round 1
	[ "$(task_field state)" = rejected ]
	[ "$(task_field locked)" = false ]
	reject_round 2 2> "$BATS_TEST_TMPDIR/lock.err"
	run head_files
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp "/[0-9]{6}\.msg\.$V\.json$"
	assert_line --index 1 --regexp '/[0-9]{6}\.msg\.escalation-T-2026-044-[0-9]+\.json$'
	E=$(basename "${lines[1]}" .json); E=${E#*.msg.}
	run git log -1 --format=%s%n%b refs/amp/messages
	assert_line --index 0 "review_verdict $T reviewer -> coordinator (locks the task)"
	assert_line "Amp-Escalation: $E"
	run cat "$BATS_TEST_TMPDIR/lock.err"
	assert_output --partial "the task is locked: hallucination_lock escalation $E recorded with it"
	[ "$(task_field state)" = locked ]
	[ "$(task_field locked)" = true ]
	[ "$(task_field suspended_by)" = "$E" ]
	assert_escalation "$E" hallucination_lock critical "[\"$V\", \"$D\"]" locked 3 true
	# the executor's next result is refused, naming the lock
	at 1300
	refused "locked by escalation $E" locked \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	refused "locked by escalation $E" locked \
		amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	[ "$(escalation_count hallucination_lock)" = 1 ]
}

@test "lock: git config amp.lockThreshold 2 locks at the second rejecting verdict" {
	git config amp.lockThreshold 2
	reject_round 0
	[ "$(task_field state)" = rejected ]
	[ "$(head_files | wc -l)" -eq 1 ]
	reject_round 1 2> /dev/null
	[ "$(head_files | wc -l)" -eq 2 ]
	[ "$(task_field state)" = locked ]
	E=$(the_escalation hallucination_lock)
	[ "$(task_field suspended_by)" = "$E" ]
	escalation_file "$E" | grep -q 'amp.lockThreshold 2'
}

@test "lock: after amp resume the count starts again: three more rejects lock it anew" {
	reject_round 0; reject_round 1; reject_round 2 2> /dev/null
	E1=$(the_escalation hallucination_lock)
	at 1250
	run amp resume $T --from admin --reason "Admin gives the fix"
	assert_success
	assert_output "resumed $T (locked -> rejected): lifted $E1"
	reject_round 3
	reject_round 4
	[ "$(task_field state)" = rejected ]
	[ "$(task_field reject_count)" = 5 ]
	[ "$(escalation_count hallucination_lock)" = 1 ]
	reject_round 5 2> /dev/null
	[ "$(task_field state)" = locked ]
	[ "$(escalation_count hallucination_lock)" = 2 ]
	E2=$(task_field suspended_by)
	[ "$E2" != "$E1" ]
	[ "$(head_files | grep -c "$E2")" = 1 ]
}

@test "lock: a malformed third reject planted by a hand-made commit still counts: the task is locked and resume records the lock" {
	reject_round 0
	reject_round 1
	review_ready 2
	# a rejecting verdict that does not conform (no criteria_results,
	# confidence 7), as a fetch or another tool would have committed it
	V3=review_verdict-$T-1772117547000
	cat > "$BATS_TEST_TMPDIR/v3.json" <<JSON
{"msg_id": "$V3", "protocol_version": "AMP/1.0", "type": "review_verdict", "from": "reviewer",
 "to": "coordinator", "task_id": "$T", "timestamp": "2026-02-26T14:52:27+00:00",
 "context_ref": ["$Q"], "payload": {"decision": "rejected", "confidence": 7}}
JSON
	run amp validate "$BATS_TEST_TMPDIR/v3.json"
	assert_failure 1
	plant "$(next_path $T "$V3")" < "$BATS_TEST_TMPDIR/v3.json"
	[ "$(task_field state)" = locked ]
	[ "$(task_field reject_count)" = 3 ]
	[ "$(escalation_count hallucination_lock)" = 0 ]
	at 1300
	refused "is locked: its 3 rejected verdicts since the last resume reach amp.lockThreshold" "" \
		amp send task_result --task $T --from executor --payload "$(P result.json)"
	refused "is locked" "" amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	# the admin's resume records the due lock first, in its own commit
	at 1400
	run amp resume $T --from admin --reason "Admin reviewed the malformed verdict"
	assert_success
	E=$(the_escalation hallucination_lock)
	assert_line --index 0 "recorded the due hallucination lock $E"
	run head_files
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp "\.msg\.$E\.json$"
	assert_line --index 1 --regexp '\.ctl\.resume-[0-9]+\.json$'
	[ "$(task_field locked)" = false ]
	[ "$(task_field state)" = rejected ]
}

# ---- late ACKs -----------------------------------------------------------------

@test "late ACK: accepted, and its ack_timeout escalation is in the same commit" {
	to_dispatched
	at 400
	run --separate-stderr amp ack "$D" --from executor
	assert_success
	assert_output "acked $D"
	run head_files
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp "/[0-9]{6}\.ack\.$D\.json$"
	assert_line --index 1 --regexp '\.msg\.escalation-T-2026-044-[0-9]+\.json$'
	E=$(the_escalation ack_timeout)
	[[ $stderr == *"the ACK is late: ack_timeout escalation $E recorded with it"* ]]
	run git log -1 --format=%s refs/amp/messages
	assert_output "ack $D executor -> coordinator (late)"
	assert_escalation "$E" ack_timeout warning "[\"$D\"]" in_progress 0 false
	escalation_file "$E" | grep -q 'the ACK came 100 s late'
	[ "$(amp status $T --json | json_get "d['messages'][0]['ack_late_seconds']")" = 100 ]
	[ "$(amp status $T --json | json_get "d['messages'][0]['acked']")" = true ]
	assert_sub $S1 in_progress 1
	# a second late ACK, of another message, gets its own
	# a task_result wants its ACK within 120 s
	at 410; result
	at 620
	run amp ack "$R" --from coordinator
	assert_success
	[ "$(escalation_count ack_timeout)" = 2 ]
	[ "$(amp status $T --json | json_get "[m['ack_late_seconds'] for m in d['messages'] if m['msg_id'] == '$R'][0]")" = 90 ]
	[ "$(escalations | json_get "[e['affected_msgs'] for e in d if e['escalation_type'] == 'ack_timeout']")" = "[[\"$D\"], [\"$R\"]]" ]
}

@test "late ACK: an ACK at its deadline is in time: no escalation; one second later it is late" {
	to_dispatched
	at 300
	allowed amp ack "$D" --from executor
	[ "$(head_files | wc -l)" -eq 1 ]
	[ "$(amp status $T --json | json_get "d['messages'][0]['ack_late_seconds']")" = null ]
	[ "$(escalation_count ack_timeout)" = 0 ]
	at 310; result
	at 430
	allowed amp ack "$R" --from coordinator
	[ "$(escalation_count ack_timeout)" = 0 ]
	at 410; result
	at 531
	run amp ack "$R" --from coordinator
	assert_success
	[ "$(escalation_count ack_timeout)" = 1 ]
	[ "$(amp status $T --json | json_get "[m['ack_late_seconds'] for m in d['messages'] if m['msg_id'] == '$R'][0]")" = 1 ]
}

@test "late ACK: when amp watch has escalated the timeout already, the late ACK writes no second one" {
	to_dispatched
	at 400
	amp watch --once > /dev/null
	[ "$(escalation_count ack_timeout)" = 1 ]
	at 450
	allowed amp ack "$D" --from executor
	[ "$(head_files | wc -l)" -eq 1 ]
	[ "$(escalation_count ack_timeout)" = 1 ]
	[ "$(amp status $T --json | json_get "d['messages'][0]['ack_late_seconds']")" = 150 ]
}

# ---- sender clocks -------------------------------------------------------------

@test "clock: a timestamp 301 s from this machine's clock is refused, 299 s is accepted" {
	at 0
	refused "amp.maxClockSkew" "301 s ahead of this machine's clock" amp send --envelope "$(envelope 301)"
	[[ $stderr == *"amp send: error: /timestamp: "* ]]
	refused "amp.maxClockSkew" "301 s behind this machine's clock" amp send --envelope "$(envelope -301)"
	allowed amp send --envelope "$(envelope 299)"
	assert_output "task_dispatch-$T-1772116626000"
	allowed amp send --envelope "$(envelope -299)"
	assert_output "task_dispatch-$T-1772116028000"
}

@test "clock: git config amp.maxClockSkew 10 tightens it; a bad value is a usage error naming the key" {
	at 0
	git config amp.maxClockSkew 10
	refused "(at most 10 s: git config amp.maxClockSkew)" "11 s ahead" amp send --envelope "$(envelope 11)"
	allowed amp send --envelope "$(envelope 10)"
	for bad in 0 86401 x; do
		git config amp.maxClockSkew "$bad"
		m=$(commit_count) e=$(error_count)
		run --separate-stderr amp send --envelope "$(envelope 0 T-2026-045)"
		assert_failure 2
		[[ $stderr == *"git config amp.maxClockSkew: "*"(1..86400)"* ]] || fail "$bad: $stderr"
		[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = "$e" ]
	done
}

@test "clock: re-sending a stored envelope later than amp.maxClockSkew is still a no-op" {
	at 0
	f=$(envelope 0)
	allowed amp send --envelope "$f"
	at 3600
	m=$(commit_count) e=$(error_count)
	run --separate-stderr amp send --envelope "$f" --json
	assert_success
	assert_output "{\"format\":{\"name\":\"send\",\"version\":1},\"msg_id\":\"task_dispatch-$T-1772116327000\",\"duplicate\":true,\"escalation\":null}"
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = "$e" ]
	# the same msg_id with other content is still refused, as before
	sed 's/"risk_level": "medium"/"risk_level": "low"/' "$f" > "$BATS_TEST_TMPDIR/other.json"
	run --separate-stderr amp send --envelope "$BATS_TEST_TMPDIR/other.json"
	assert_failure 3
	[[ $stderr == *"/msg_id: task_dispatch-$T-1772116327000 is already in the SSOT with other content"* ]]
}

# ---- idempotent retries --------------------------------------------------------

@test "idempotency: a retry with the same key and content returns the first msg_id and writes nothing" {
	at 0
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)" --idempotency-key K1 --json
	assert_output "{\"format\":{\"name\":\"send\",\"version\":1},\"msg_id\":\"task_dispatch-$T-1772116327000\",\"duplicate\":false,\"escalation\":null}"
	D=task_dispatch-$T-1772116327000
	# the key is kept beside the message, in the same commit
	run head_files
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp '\.ctl\.key-[0-9a-f]{40}\.json$'
	at 30
	m=$(commit_count)
	run --separate-stderr amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)" --idempotency-key K1 --json
	assert_success
	assert_output "{\"format\":{\"name\":\"send\",\"version\":1},\"msg_id\":\"$D\",\"duplicate\":true,\"escalation\":null}"
	[ "$stderr" = "amp send: $D was already in the SSOT (nothing written)" ]
	AMP_IDEMPOTENCY_KEY=K1 run --separate-stderr amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_success
	assert_output "$D"
	[ "$(commit_count)" = "$m" ]
	[ "$(amp status $T --json | json_get "len(d['messages'])")" = 1 ]
	assert_sub $S1 dispatched 1
}

@test "idempotency: the same key with other content is refused naming the key; a 257-byte key is a usage error" {
	at 0
	amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)" --idempotency-key K1
	D=task_dispatch-$T-1772116327000
	at 30
	refused "'K1' was used for $D, whose content differs" "" \
		amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch2.json)" --idempotency-key K1
	[[ $stderr == *"amp send: error: /idempotency_key: "* ]]
	AMP_IDEMPOTENCY_KEY=K1 refused "'K1' was used for $D" "" \
		amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch2.json)"
	m=$(commit_count) e=$(error_count)
	run amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)" --idempotency-key "$(printf 'k%.0s' $(seq 257))"
	assert_failure 2
	assert_output --partial "--idempotency-key"
	assert_output --partial "(1..256 bytes of UTF-8)"
	AMP_IDEMPOTENCY_KEY=$(printf 'k%.0s' $(seq 257)) run amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)"
	assert_failure 2
	[ "$(commit_count)" = "$m" ] && [ "$(error_count)" = "$e" ]
	allowed amp send task_dispatch --task $T --from coordinator --to executor --payload "$(P dispatch.json)" --idempotency-key "$(printf 'k%.0s' $(seq 256))"
}

@test "idempotency: amp verdict --idempotency-key retried returns the first verdict, not a refusal" {
	to_in_review
	at 20
	run amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)" --idempotency-key V1 --json
	assert_success
	V=$(json_get 'd["msg_id"]' <<< "$output")
	at 50
	m=$(commit_count)
	run --separate-stderr amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)" --idempotency-key V1 --json
	assert_success
	assert_output "{\"format\":{\"name\":\"verdict\",\"version\":1},\"msg_id\":\"$V\",\"duplicate\":true,\"escalation\":null}"
	[ "$(commit_count)" = "$m" ]
	# without the key the same retry is a second verdict, refused
	refused "review_request $Q is not awaiting a verdict" approved \
		amp verdict $T --decision approved --confidence 0.9 --payload "$(P verdict.json)"
	# the key with other content is refused naming it
	refused "'V1' was used for $V" "" \
		amp verdict $T --decision approved --confidence 0.5 --payload "$(P verdict.json)" --idempotency-key V1
}
