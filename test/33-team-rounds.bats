#!/usr/bin/env bats
# Issue 33 with several agents per role (NAME@ROLE instances): who started a
# round and who ACKed it.  A named coordinator's task_dispatch carries a
# "round" control record naming it, a named instance's ACK an "acked" one,
# each in the same commit; a dispatch from another coordinator instance into
# an open round is refused (scenario 1, two coordinators on one task), and
# while nobody holds a claim a task_result comes only from the instance that
# ACKed the round (scenario 2).  The hub's hook, amp sync's join and amp fsck
# check the same.  Time moves with AMP_NOW only.

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

# files_of_last_commit: the file names (no directory) the messages ref's
# last commit adds.
files_of_last_commit() {
	git diff-tree --no-commit-id --name-only -r refs/amp/messages | xargs -n1 basename
}

# record TYPE: the newest control record of TYPE of task $T, as JSON.
record() {
	local path
	path=$(git ls-tree -r --name-only refs/amp/messages | grep "/$T/.*\.ctl\.$1-" | tail -1)
	git cat-file blob "refs/amp/messages:$path"
}

# dave_dispatches: at 0, coordinator instance dave dispatches $T (sets D).
dave_dispatches() {
	at 0
	D=$(amp send task_dispatch --task "$T" --from coordinator --agent dave --to executor --payload "$(P dispatch.json)")
}

# dave_dispatches_alice_acks: and at 5, executor instance alice ACKs it.
dave_dispatches_alice_acks() {
	dave_dispatches || return 1
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
}

# ---- 1. two coordinators, one task ---------------------------------------------

@test "a named coordinator's dispatch writes a round record naming it in the same commit; the ACK of a named executor an acked record naming it" {
	dave_dispatches
	run -0 files_of_last_commit
	assert_output "000001.msg.$D.json
000002.ctl.round-${D##*-}.json"
	run -0 json_get 'd["type"], d["from"], d["msg_id"], d["agent"]' < <(record round)
	assert_output "('round', 'coordinator', '$D', 'dave')"
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	run -0 files_of_last_commit
	assert_output "000003.ack.$D.json
000004.ctl.acked-$((${D##*-} + 5000)).json"
	run -0 json_get 'd["type"], d["from"], d["ack_for"], d["agent"]' < <(record acked)
	assert_output "('acked', 'executor', '$D', 'alice')"
	# amp log lists them as control records
	run -0 amp log --type round --json
	assert_output --partial "\"round-${D##*-}\""
	run -0 amp fsck
}

@test "scenario 1: carol's dispatch into the open round dave started is refused (exit 3) naming dave, his round and the subtask's state; an unnamed coordinator's too; dave's next round and the admin's dispatch are taken" {
	dave_dispatches_alice_acks
	at 10
	sed 's#feature/watch-breath-v2#feature/carol#' "$(P dispatch.json)" > "$(P carol.json)"
	refused "/from: task $T is in a round coordinator instance dave started ($D; subtask $S1 is in_progress): a dispatch from instance carol would start another while it is open (two coordinators, one task); dave dispatches the next round, or the admin does" "" \
		amp send task_dispatch --task "$T" --from coordinator --agent carol --to executor --payload "$(P carol.json)"
	refused "a dispatch from an unnamed coordinator would start another" "" \
		amp send task_dispatch --task "$T" --from coordinator --to executor --payload "$(P carol.json)"
	assert_sub $S1 in_progress 1
	assert_equal "$(sub $S1 dispatch)" "$D"
	# the refusal is on the errors ref, with carol's dispatch
	run -0 amp errors --json
	assert_output --partial "coordinator instance dave started"
	# dave starts the next round himself
	at 20
	allowed amp send task_dispatch --task "$T" --from coordinator --agent dave --to executor --payload "$(P carol.json)"
	assert_sub $S1 dispatched 2
	# the admin, the sole arbiter, may always dispatch
	at 30
	allowed amp send task_dispatch --task "$T" --from admin --agent root --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 3
	run -0 amp fsck
}

@test "scenario 1: once dave's round is closed (rejected), carol may start the next one" {
	dave_dispatches
	at 5
	amp ack "$D" --from executor > /dev/null
	at 10; result
	amp ack "$R" --from coordinator > /dev/null
	request "$D" "$R"
	amp ack "$Q" --from reviewer > /dev/null
	at 20; verdict rejected
	assert_sub $S1 rejected 1
	at 30
	allowed amp send task_dispatch --task "$T" --from coordinator --agent carol --to executor --payload "$(P dispatch.json)"
	assert_sub $S1 dispatched 2
	run -0 json_get 'd["agent"]' < <(record round)
	assert_output carol
}

@test "scenario 1: amp fsck finds a dispatch planted into dave's open round (rule) and a round record in a commit of its own (corrupt)" {
	dave_dispatches
	C=task_dispatch-$T-1772116330000
	# carol's dispatch, planted without amp (an older amp, a fetch), then
	# a round record naming her, in a commit of its own
	sed "s/$D/$C/; s/2026-02-26T14:32:07/2026-02-26T14:32:10/" \
		<(git cat-file blob "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep "\.msg\.$D\.json")") |
		plant "$(next_path $T $C)"
	$PY -c 'import json,sys; d=json.load(sys.stdin); d["msg_id"]=sys.argv[1]; d["agent"]="carol"; print(json.dumps(d))' "$C" < <(record round) |
		plant "$(next_path $T round-1772116330000 ctl)"
	run amp fsck
	assert_failure
	assert_output --partial "$C.json: rule: /from: task $T is in a round coordinator instance dave started ($D; subtask $S1 is dispatched): a dispatch from an unnamed coordinator would start another"
	assert_output --partial "round-1772116330000.json: /type: names $C, which this commit does not write"
	assert_output --partial "1 corrupt, 1 rule"
}

# plant_as AGENT PATH FILE [PATH FILE]...: commits each FILE at its PATH on
# the messages ref in one commit carrying "Amp-Agent: AGENT", as a clone's
# amp writes it, bypassing amp (a fetch from a hub without amp's hook).
plant_as() {
	local idx=$BATS_TEST_TMPDIR/plant.idx agent=$1 blob tree commit
	shift
	GIT_INDEX_FILE=$idx git read-tree refs/amp/messages
	while [ $# -ge 2 ]; do
		blob=$(git hash-object -w "$2")
		GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$blob,$1"
		shift 2
	done
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	commit=$(GIT_COMMITTER_DATE="$AMP_NOW" git commit-tree "$tree" -p refs/amp/messages -m "fetched" -m "Amp-Agent: $agent")
	git update-ref refs/amp/messages "$commit"
	rm -f "$idx"
}

@test "scenario 1: amp watch checks a fetched dispatch with its commit's Amp-Agent: dave's own next round is no conflict, carol's into his open round is escalated once" {
	dave_dispatches
	run -0 amp watch --once
	at 3
	E=task_dispatch-$T-1772116330000
	sed "s/$D/$E/; s/2026-02-26T14:32:07/2026-02-26T14:32:10/" \
		<(git cat-file blob "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep "\.msg\.$D\.json")") > "$BATS_TEST_TMPDIR/e.json"
	$PY -c 'import json,sys; d=json.load(sys.stdin); d["msg_id"]=sys.argv[1]; d["timestamp"]="2026-02-26T14:32:10+00:00"; print(json.dumps(d))' "$E" < <(record round) > "$BATS_TEST_TMPDIR/e-round.json"
	E_PATH=$(next_path $T $E)
	plant_as dave "$E_PATH" "$BATS_TEST_TMPDIR/e.json" "${E_PATH%/*}/000004.ctl.round-1772116330000.json" "$BATS_TEST_TMPDIR/e-round.json"
	run -0 amp watch --once
	assert_output ""
	assert_sub $S1 dispatched 2
	at 6
	C=task_dispatch-$T-1772116333000
	sed "s/$E/$C/; s/2026-02-26T14:32:10/2026-02-26T14:32:13/" "$BATS_TEST_TMPDIR/e.json" > "$BATS_TEST_TMPDIR/c.json"
	plant_as carol "$(next_path $T $C)" "$BATS_TEST_TMPDIR/c.json"
	run -0 amp watch --once
	assert_output --regexp "^escalated unknown $T $C "
	run -0 escalation_file "$(the_escalation unknown)"
	assert_output --partial "a dispatch from instance carol would start another while it is open"
	run -0 amp watch --once
	assert_output ""
	# amp fsck agrees: carol's dispatch is the one rule finding
	run -3 amp fsck
	assert_output --partial "$C.json: rule: /from: task $T is in a round coordinator instance dave started ($E;"
	assert_output --partial "0 corrupt, 1 rule"
}

# ---- 2. a result from the instance that ACKed the round -----------------------------

@test "scenario 2: while nobody holds a claim, bob's result is refused (exit 3) naming alice, who ACKed the round; alice's is taken" {
	dave_dispatches_alice_acks
	at 10
	refused "/from: nobody holds a claim of subtask $S1 of task $T, and executor instance alice ACKed its round ($D): a task_result comes from alice, or from an instance that claims it first (amp claim), not from instance bob" "" \
		amp send task_result --task "$T" --from executor --agent bob --payload "$(P result.json)"
	refused "not from an unnamed executor" "" amp send task_result --task "$T" --from executor --payload "$(P result.json)"
	assert_sub $S1 in_progress 1
	allowed amp send task_result --task "$T" --from executor --agent alice --payload "$(P result.json)"
	assert_sub $S1 submitted 1
}

@test "scenario 2: an instance that claims the task may send the result even though another ACKed the round" {
	dave_dispatches_alice_acks
	at 10
	amp claim "$T" --agent bob > /dev/null
	allowed amp send task_result --task "$T" --from executor --agent bob --payload "$(P result.json)"
	assert_sub $S1 submitted 1
}

@test "an ACK and a result by unnamed instances write no record naming one and nothing limits them (one agent per role, as before)" {
	send_dispatch
	at 5
	amp ack "$D" --from executor > /dev/null
	run -0 files_of_last_commit
	assert_output "000002.ack.$D.json"
	at 10
	allowed amp send task_result --task "$T" --from executor --agent bob --payload "$(P result.json)"
}

# ---- through a hub ---------------------------------------------------------------------

@test "through a hub: carol and dave dispatch one task on two clones at once; the join sets dave's dispatch and its round aside, the hub's status names carol's round, alice's ACK holds the result for her, and fsck is clean everywhere" {
	load hub
	load clones
	clones_setup
	git clone -q "$HUB" c 2> /dev/null
	on c amp sync > /dev/null
	sed 's#feature/watch-breath-v2#feature/dave#' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/dave.json"
	at 10
	D=$(on a amp send task_dispatch --task "$T" --from coordinator --agent carol --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	at 11
	E=$(on b amp send task_dispatch --task "$T" --from coordinator --agent dave --to executor --payload "$BATS_TEST_TMPDIR/p/dave.json")
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":2,'
	run -0 on c amp sync
	for r in a b c; do
		assert_equal "$(on $r amp status "$T" --json | json_get '[s["dispatch"] for s in d["subtasks"]][0]')" "$D"
	done
	# dave, now seeing carol's open round, is refused at once
	at 20
	run --separate-stderr on b amp send task_dispatch --task "$T" --from coordinator --agent dave --to executor --payload "$BATS_TEST_TMPDIR/p/dave.json"
	assert_equal "$status" 3
	[[ $stderr == *"round coordinator instance carol started ($D"* ]]
	# alice (clone c) ACKs; bob (clone b) may not send the result unclaimed
	at 30
	on c amp ack "$D" --from executor --agent alice > /dev/null
	on c amp sync > /dev/null
	on b amp sync > /dev/null
	at 40
	run --separate-stderr on b amp send task_result --task "$T" --from executor --agent bob --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_equal "$status" 3
	[[ $stderr == *"executor instance alice ACKed its round ($D)"* ]]
	run -0 on c amp send task_result --task "$T" --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json"
	run -0 on c amp sync
	run -0 on a amp sync
	for r in a b c; do run -0 on $r amp fsck; done
	run -0 amp fsck --repo "$HUB"
	git -C "$HUB" fsck --strict
}

@test "through a hub: an unnamed executor's ACK lands first, bob's ACK of the same dispatch on another clone is set aside by his clone's join together with his acked record, even when the hub runs no hook" {
	load hub
	load clones
	clones_setup
	dispatched_on_both
	# the hub takes anything: only the clone's join decides
	rm -f "$HUB/hooks/pre-receive"
	at 10
	on a amp ack "$D" --from executor > /dev/null
	at 11
	on b amp ack "$D" --from executor --agent bob > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":2,'
	run -0 on b amp log --type superseded --json
	assert_output --partial "which this join set aside"
	# nobody is named as the ACKer: any executor may send the result
	at 20
	run -0 on b amp send task_result --task "$T" --from executor --agent carl --payload "$BATS_TEST_TMPDIR/p/result.json"
	run -0 on b amp sync
	run -0 on a amp sync
	for r in a b; do run -0 on $r amp fsck; done
}

# ---- clarification questions and answers ------------------------------------------

@test "amp ask: alice's question is a control record with an answer deadline; the coordinator's inbox lists it (text and --json) until dave answers; the answer shows in alice's inbox, not bob's, and in amp status" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	at 10
	run -0 amp ask "$T" --agent alice --subtask "$S1" --question $'Which API version? \e[31m' --ack-timeout 600
	Q=$output
	assert_equal "$Q" "question-$((${D##*-} + 10000))"
	run -0 json_get 'd["type"], d["from"], d["agent"], d["subtask_id"], d["question"], d["ack_timeout_sec"]' < <(record question)
	assert_output "('question', 'executor', 'alice', '$S1', 'Which API version? \x1b[31m', 600)"
	at 70
	run -0 amp inbox coordinator
	assert_line --regexp "question +$T $Q by alice: Which API version\\? .*\\[31m  answer due in 9m"
	# the question is data: no escape byte reaches the terminal
	[[ $output != *$'\e'* ]]
	run -0 amp inbox coordinator --json
	run -0 json_get '[(q["record"], q["agent"], q["due_seconds"], q["answer_due"]) for q in d["questions"]]' <<< "$output"
	assert_output '[["'$Q'", "alice", 540, "2026-02-26T14:42:17+00:00"]]'
	run -0 amp status
	assert_output --regexp "$T .*  1 question unanswered$"
	# past its deadline it is overdue
	at 700
	run -0 amp inbox coordinator
	assert_line --regexp "question +$T $Q by alice: .* answer overdue 1m$"
	at 710
	run -0 amp answer "$T" --question "$Q" --answer 'v2' --agent dave
	A=$output
	run -0 json_get 'd["type"], d["from"], d["agent"], d["answers"], d["answer"]' < <(record answer)
	assert_output "('answer', 'coordinator', 'dave', '$Q', 'v2')"
	run -0 amp inbox coordinator --json
	assert_equal "$(json_get 'd["questions"]' <<< "$output")" "[]"
	run -0 amp inbox executor --agent alice --json
	run -0 json_get '[(a["record"], a["answer"]["answer"], a["answer"]["agent"], a["answer"]["record"]) for a in d["answers"]]' <<< "$output"
	assert_output '[["'$Q'", "v2", "dave", "'$A'"]]'
	run -0 amp inbox executor --agent alice
	assert_line --regexp "answer +$T $Q \\(Which API version\\? .*\\): v2  by dave"
	run -0 amp inbox executor --agent bob --json
	assert_equal "$(json_get 'd["answers"]' <<< "$output")" "[]"
	run -0 amp status "$T"
	assert_line --regexp "^question $Q by alice on subtask $S1: Which API version\\? .*\\[31m$"
	assert_line --partial "  answered by dave at "
	run -0 amp status "$T" --json
	run -0 json_get '[(q["record"], q["answer"]["answer"]) for q in d["questions"]]' <<< "$output"
	assert_output '[["'$Q'", "v2"]]'
	run -0 amp fsck
}

@test "amp answer is refused (exit 3) for a question answered already or one the task does not hold (both logged), and from the executor; amp ask from the reviewer or into a task bob holds is refused" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	Q=$(amp ask "$T" --agent alice --question 'Which API version?')
	amp answer "$T" --question "$Q" --answer v2 > /dev/null
	refused "/answers: question $Q of task $T is answered already" "" amp answer "$T" --question "$Q" --answer v3
	refused "/answers: task $T asked no question question-1" "" amp answer "$T" --question question-1 --answer v3
	run --separate-stderr amp answer "$T" --from executor --question "$Q" --answer v3
	assert_equal "$status" 3
	assert_equal "$stderr" "amp answer: error: /from: a question is answered by the coordinator or the admin, not executor"
	run --separate-stderr amp ask "$T" --from reviewer --question why
	assert_equal "$status" 3
	assert_equal "$stderr" "amp ask: error: /from: a clarification question comes from the executor, not reviewer"
	at 10
	amp claim "$T" --agent bob > /dev/null
	refused "/from: " "" amp ask "$T" --agent alice --question 'still there?'
	run -2 amp ask "$T" --agent alice --question 'x' --ack-timeout 0
	run -2 amp ask "$T" --agent alice
	run -2 amp answer "$T" --question "$Q"
}

# ---- progress reports ---------------------------------------------------------------

@test "progress reports show in the coordinator's inbox (text and --json) and in amp status's list and its --json, each holder's latest" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim "$T" --agent alice > /dev/null
	at 10
	amp progress "$T" --agent alice --percent 20 > /dev/null
	at 20
	amp progress "$T" --agent alice --percent 60 --note 'tests green' > /dev/null
	run -0 amp inbox coordinator
	assert_line --regexp "progress +$T alice: 60% \\(tests green\\)$"
	run -0 amp inbox coordinator --json
	run -0 json_get '[(p["task_id"], p["agent"], p["percent"], p["note"]) for p in d["progress"]]' <<< "$output"
	assert_output '[["'$T'", "alice", 60, "tests green"]]'
	run -0 amp status --json
	run -0 json_get '[(t["task_id"], [(p["agent"], p["percent"]) for p in t["progress"]], t["questions"]) for t in d["tasks"]]' <<< "$output"
	assert_output '[["'$T'", [["alice", 60]], []]]'
	run -0 amp status
	assert_output --regexp "$T .*  progress alice 60%"
	# an executor's inbox shows no progress
	run -0 amp inbox executor --json
	assert_equal "$(json_get '"progress" in d' <<< "$output")" false
}

# ---- the holder told at release time -----------------------------------------------

@test "the holder is told at release time: after amp watch releases alice's expired lease, alice's inbox (not bob's) shows the release with its reason until she claims again; amp status --json lists it" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim "$T" --agent alice > /dev/null
	C=$(amp status "$T" --json | json_get 'd["claims"][0]["claim"]')
	run -0 amp inbox executor --agent alice --json
	assert_equal "$(json_get 'd["released"]' <<< "$output")" "[]"
	at 1900
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T "
	run -0 amp inbox executor --agent alice
	assert_line --regexp "released +$T $C of alice by system: the lease of alice ran out at .*  \\(claim it again before you write to it\\)$"
	run -0 amp inbox executor --agent alice --json
	run -0 json_get '[(r["task_id"], r["claim"], r["agent"], r["by"]) for r in d["released"]]' <<< "$output"
	assert_output '[["'$T'", "'$C'", "alice", "system"]]'
	run -0 amp inbox executor --agent bob --json
	assert_equal "$(json_get 'd["released"]' <<< "$output")" "[]"
	run -0 amp status --json
	run -0 json_get '[r["claim"] for t in d["tasks"] for r in t["released"]]' <<< "$output"
	assert_output '["'$C'"]'
	# alice claims again: she has been told
	at 1910
	amp claim "$T" --agent alice > /dev/null
	run -0 amp inbox executor --agent alice --json
	assert_equal "$(json_get 'd["released"]' <<< "$output")" "[]"
}

@test "recovered: alice's heartbeat after amp watch released her lease gives back what she still held and did not renew since (re-queued for amp ready); what she renewed after the release stays hers" {
	A=T-2026-001 B=T-2026-002 C=T-2026-003
	for t in $A $B $C; do
		amp send task_dispatch --task $t --from coordinator --to executor --payload "$(P dispatch.json)" > /dev/null
	done
	at 5
	amp claim $A --agent alice --ttl 60 > /dev/null
	amp claim $B --agent alice --ttl 3600 > /dev/null
	amp claim $C --agent alice --ttl 3600 > /dev/null
	at 100
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $A "
	at 200
	amp heartbeat $C --from executor --agent alice > /dev/null
	at 300
	run --separate-stderr amp heartbeat $A --from executor --agent alice --json
	assert_equal "$status" 0
	RB=$(json_get 'd["released"][0]["claim"]' <<< "$output")
	assert_equal "$(json_get '[r["task_id"] for r in d["released"]]' <<< "$output")" '["'$B'"]'
	assert_equal "$(json_get 'd["lost_claim"] is not None' <<< "$output")" true
	[[ $stderr == *"alice: released $RB of $B too (recovered: it was not renewed since); claim it again to go on"* ]]
	# B is free again, C still alice's
	assert_equal "$(amp status $B --json | json_get 'd["claims"]')" "[]"
	assert_equal "$(amp status $C --json | json_get '[c["agent"] for c in d["claims"]]')" '["alice"]'
	run -0 amp ready --json
	assert_equal "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" '["'$A'", "'$B'"]'
	# the release is the holder's own, with the reason
	run -0 amp log --type release --json
	assert_output --partial "recovered: amp watch released"
	run -0 amp fsck
}
