#!/usr/bin/env bats
# Issue 7, the send path and the protocol rules: the schema comes before any
# rule, git branch names, CI failure words, and every check the documents
# say amp makes at send time (schemas/README.md, share/doc/rules.md, amp-protocol(7)).

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# envelope TYPE MSG_ID TIMESTAMP PAYLOAD_FILE [FROM TO]: a whole message.
envelope() {
	$PY -c 'import json,sys; print(json.dumps({"msg_id": sys.argv[1], "protocol_version": "AMP/1.0", "type": sys.argv[2], "from": sys.argv[5], "to": sys.argv[6], "task_id": sys.argv[3], "timestamp": sys.argv[4], "requires_ack": sys.argv[2] != "escalation", "payload": json.load(open(sys.argv[7]))}, indent=2))' \
		"$2" "$1" $T "$3" "${5:-coordinator}" "${6:-executor}" "$4"
}

# dispatch_on BRANCH: the conversation's dispatch payload on BRANCH, in d.json.
dispatch_on() {
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["branch"]=sys.argv[2]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" "$1" > d.json
}

# ---- Defect 1: the schema before any rule -----------------------------------

@test "junk naming branch main is exit 1 and one error-log entry, nothing on the messages ref" {
	local msgs errs
	msgs=$(git rev-parse refs/amp/messages) errs=$(error_count)
	run amp send --envelope - <<< '{"type":"task_dispatch","payload":{"branch":"main"}}'
	assert_failure 1
	refute_output --partial "escalation was recorded"
	assert_equal "$(git rev-parse refs/amp/messages)" "$msgs"
	assert_equal "$(error_count)" $((errs + 1))
	run git log -1 --format=%B refs/amp/errors
	refute_output --partial "(null)"
}

@test "junk with a task_id and branch main writes no branch_violation escalation" {
	local msgs
	msgs=$(git rev-parse refs/amp/messages)
	run amp send --envelope - <<< '{"type":"task_dispatch","task_id":"T-2026-044","from":"coordinator","payload":{"branch":"main"}}'
	assert_failure 1
	assert_output --partial "amp send: error: "
	refute_output --partial "escalation was recorded"
	assert_equal "$(git rev-parse refs/amp/messages)" "$msgs"
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial escalation
}

@test "a dispatch to main with another schema fault is exit 1 and escalates nothing" {
	local msgs
	msgs=$(git rev-parse refs/amp/messages)
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["branch"]="main"; p["risk_level"]="extreme"; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 1
	assert_output --partial "/payload/risk_level"
	assert_equal "$(git rev-parse refs/amp/messages)" "$msgs"
}

@test "watch: fetched junk naming branch main is escalated as unknown, not as a branch_violation" {
	local B=task_dispatch-$T-1772116330000
	send_dispatch
	$PY -c 'import json,sys; print(json.dumps({"msg_id": sys.argv[1], "type": "task_dispatch", "task_id": sys.argv[2], "payload": {"branch": "main"}}))' $B $T |
		plant "$(next_path $T $B)"
	at 20
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $B "
	assert_equal "$(escalation_count branch_violation)" 0
}

# ---- Defect 3: branch names --------------------------------------------------

@test "every spelling of main and master is refused with exit 3 and a branch_violation each" {
	local n=0 b
	for b in Main MASTER refs/heads/main heads/main refs/remotes/origin/main remotes/upstream/Master; do
		dispatch_on "$b"
		run amp send task_dispatch --task $T --from coordinator --payload d.json
		assert_failure 3
		assert_output --partial "/payload/branch: must not be \"main\" or \"master\" or another protected branch (Branch Validation): \"$b\" names one"
		n=$((n + 1))
	done
	assert_equal "$(escalation_count branch_violation)" $n
	E=$(the_escalation branch_violation)
	assert_escalation "$E" branch_violation warning "[]" new 0 false
	run escalation_file "$E"
	assert_output --partial "coordinator dispatched T-2026-044 to protected branch 'Main' in task_dispatch-T-2026-044-1772116327000"
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial ".msg.task_dispatch-"
}

@test "names that only start or contain main are branches of their own and are accepted" {
	# (origin/main and feature/main are refused: 30-caches.bats)
	dispatch_on main-fix
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
	at 1
	dispatch_on feature/mainline
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
	at 2
	dispatch_on main/x
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
	assert_equal "$(escalation_count branch_violation)" 0
}

@test "an invalid git branch name is exit 1 at /payload/branch naming the rule, with no escalation" {
	local b
	for b in 'main~0' 'main^{}' HEAD @ 'main ' 'a..b' 'x.lock' '-x' 'a//b' '.hidden' 'a@{1}'; do
		dispatch_on "$b"
		run amp send task_dispatch --task $T --from coordinator --payload d.json
		assert_failure 1
		assert_output --partial "/payload/branch: is not a valid git branch name: it "
	done
	dispatch_on 'main~0'
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_output --partial 'contains one of space ~ ^ : ? * [ \'
	dispatch_on 'x.lock'
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_output --partial 'has a component ending with ".lock"'
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial "tasks/"
}

@test "amp validate applies the branch rules outside any repository, as git check-ref-format --branch does" {
	local b want
	cd "$BATS_TEST_TMPDIR"
	for b in feature/x 'a{b' 'é-ünï' 'a..b' 'a/.b' 'a.lock' 'a/' 'a.' '-a' 'a b' 'a@{b' 'a//b' '/a' 'main~0' 'main^{}' 'a\b' 'a:b' 'a?b' 'a*b' 'a[b' 'x/y.lock/z' HEAD 'a/b/c'; do
		dispatch_on "$b"
		envelope task_dispatch task_dispatch-$T-1772116327000 "$T0" d.json > env.json
		want=0
		git -C repo check-ref-format --branch "$b" > /dev/null 2>&1 || want=1
		run amp validate env.json
		[ "$status" -eq "$want" ] || fail "branch '$b': amp validate exits $status, git says $want: $output"
	done
	dispatch_on refs/remotes/origin/MASTER
	envelope task_dispatch task_dispatch-$T-1772116327000 "$T0" d.json > env.json
	run amp validate env.json
	assert_failure 1
	assert_output --partial '/payload/branch: must not be "refs/remotes/origin/MASTER": a protected branch (AMP/1.0 §01 Branch Validation)'
	dispatch_on 'a..b'
	envelope task_dispatch task_dispatch-$T-1772116327000 "$T0" d.json > env.json
	run amp validate env.json
	assert_output --partial '/payload/branch: is not a valid git branch name: it contains ".." (git check-ref-format --branch)'
}

@test "git config amp.protectedBranches adds protected names for send and for watch" {
	git config amp.protectedBranches "release, Production"
	dispatch_on production
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	assert_output --partial '"production" names one'
	dispatch_on refs/heads/RELEASE
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	dispatch_on main
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	assert_equal "$(escalation_count branch_violation)" 3
	# the watcher's re-check of a fetched dispatch reads the same setting
	local B=task_dispatch-$T-1772116330000
	dispatch_on release
	envelope task_dispatch $B 2026-02-26T14:32:10+00:00 d.json | plant "$(next_path $T $B)"
	at 20
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated branch_violation $T $B "
	git config --unset amp.protectedBranches
	dispatch_on release
	at 30
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
}

# ---- Defect 9: CI gating -----------------------------------------------------

@test "rule 5: every failing CI word, in any case and spacing, refuses the review_request" {
	local r v n=0 R
	# One subtask per word that passes: each takes one review_request.
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["subtasks"]=[dict(p["subtasks"][0], subtask_id="T-2026-044-S%d" % i) for i in range(1, 7)]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d6.json
	D=$(amp send task_dispatch --task $T --from coordinator --payload d6.json)
	at 5; amp ack "$D" --from executor > /dev/null
	at 10; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	review_payload "$D" "$R" 0 > /dev/null
	for v in failed FAILED ' Failure ' failing error errored broken timed_out timedout timeout fail; do
		$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["ci_status"]={"xcode_cloud":"passed","gh":sys.argv[2]}; print(json.dumps(p))' \
			"$BATS_TEST_TMPDIR/p/review.json" "$v" > rr.json
		run amp send review_request --task $T --from coordinator --payload rr.json
		assert_failure 3
		assert_output --partial "/payload/ci_status/gh: CI failed"
	done
	for v in passed success pending running cancelled skipped; do
		n=$((n + 1))
		at $((20 + n))
		sed "s/T-2026-044-S1/T-2026-044-S$n/" "$BATS_TEST_TMPDIR/p/result.json" > r$n.json
		R=$(amp send task_result --task $T --from executor --payload r$n.json)
		review_payload "$D" "$R" 0 > /dev/null
		$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["ci_status"]={"gh":sys.argv[2]}; print(json.dumps(p))' \
			"$BATS_TEST_TMPDIR/p/review.json" "$v" > rr.json
		run amp send review_request --task $T --from coordinator --payload rr.json
		assert_success
	done
}

@test "rule 5: watch escalates ci_failure for a fetched review_request whose CI says FAILURE" {
	local Q=review_request-$T-1772116340000
	send_dispatch
	at 5; amp ack "$D" --from executor > /dev/null
	at 10; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	review_payload "$D" "$R" 0 > /dev/null
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["ci_status"]={"xcode_cloud":" FAILURE"}; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/review.json" > rr.json
	envelope review_request $Q 2026-02-26T14:32:20+00:00 rr.json coordinator reviewer | plant "$(next_path $T $Q)"
	at 30
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated ci_failure $T $Q "
}

# ---- the checks the documents promise ---------------------------------------

@test "a dispatch whose repo does not exist or holds no .git is refused with exit 3" {
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["repo"]="/nonexistent/amp-test"; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	assert_output --partial "/payload/repo: /nonexistent/amp-test is not a directory on this machine"
	mkdir "$BATS_TEST_TMPDIR/plain"
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["repo"]=sys.argv[2]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" "$BATS_TEST_TMPDIR/plain" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	assert_output --partial "/payload/repo: $BATS_TEST_TMPDIR/plain has no .git: not a git repository"
	run amp errors
	assert_output --partial "has no .git"
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial "tasks/"
}

@test "a dispatch to a linked worktree (a .git file) is accepted; amp.checkRepo false skips the check" {
	git commit -q --allow-empty -m first
	git worktree add -q "$BATS_TEST_TMPDIR/wt" -b side
	[ -f "$BATS_TEST_TMPDIR/wt/.git" ]
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["repo"]=sys.argv[2]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" "$BATS_TEST_TMPDIR/wt" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["repo"]="/Users/kircerta/dev/Rhylm"; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	at 1
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	git config amp.checkRepo false
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_success
}

@test "watch does not check the repo of a fetched dispatch: it may be another machine's" {
	local B=task_dispatch-$T-1772116330000
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["repo"]="/Users/kircerta/dev/Rhylm"; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	envelope task_dispatch $B 2026-02-26T14:32:10+00:00 d.json | plant "$(next_path $T $B)"
	at 20
	run amp watch --once
	assert_success
	assert_output ""
}

@test "a msg_id whose unix_ms is more than 60 s from the timestamp is refused; within 60 s it is accepted" {
	# the seed's own example: msg_id ...1740576727001 with a 2026 timestamp
	envelope task_dispatch task_dispatch-$T-1740576727001 "$T0" "$BATS_TEST_TMPDIR/p/dispatch.json" > env.json
	run amp send --envelope env.json
	assert_failure 3
	assert_output --partial "/msg_id: its unix_ms 1740576727001 is -31539599 s away from the timestamp $T0 (at most 60 s allowed)"
	envelope task_dispatch task_dispatch-$T-1772116387001 "$T0" "$BATS_TEST_TMPDIR/p/dispatch.json" > env.json
	run amp send --envelope env.json
	assert_failure 3
	envelope task_dispatch task_dispatch-$T-1772116386999 "$T0" "$BATS_TEST_TMPDIR/p/dispatch.json" > env.json
	run amp send --envelope env.json
	assert_success
	envelope task_dispatch task_dispatch-$T-1772116267000 "$T0" "$BATS_TEST_TMPDIR/p/dispatch.json" > env.json
	run amp send --envelope env.json
	assert_success
}

@test "a dispatch with two subtasks of one subtask_id is refused at the second" {
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["subtasks"][1]["subtask_id"]=p["subtasks"][0]["subtask_id"]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch2.json" > d.json
	run amp send task_dispatch --task $T --from coordinator --payload d.json
	assert_failure 3
	assert_output --partial "/payload/subtasks/1/subtask_id: T-2026-044-S1 is also subtask 0: subtask_ids are unique within a dispatch"
}

@test "a review_verdict needs one criteria_results entry per acceptance criterion of the dispatch under review" {
	dispatch_acked
	at 10; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 20; Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R" 0)")
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["criteria_results"]=p["criteria_results"][:2]; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/verdict.json" > v.json
	at 30
	run amp verdict $T --decision approved --confidence 0.9 --payload v.json
	assert_failure 3
	assert_output --partial "/payload/criteria_results: has 2 entries; the dispatch $D under review has 3 acceptance criteria"
	run amp verdict $T --decision approved --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_success
}

# escalation_payload REJECTS LAST STATUS AFFECTED_JSON: an escalation payload.
escalation_payload() {
	$PY -c 'import json,sys; print(json.dumps({"escalation_type": "conflict", "severity": "warning", "triggered_by": "executor", "description": "stuck", "affected_msgs": json.loads(sys.argv[4]), "system_state_snapshot": {"task_status": sys.argv[3], "reject_count": int(sys.argv[1]), "last_successful_msg_id": None if sys.argv[2] == "null" else sys.argv[2]}, "auto_suspended": True}))' \
		"$@" > esc.json
}

@test "an escalation's snapshot must be the SSOT's: a fabricated one is refused" {
	dispatch_acked
	at 10
	escalation_payload 42 "$D" in_progress "[\"$D\"]"
	run amp send escalation --task $T --from executor --payload esc.json
	assert_failure 3
	assert_output --partial "/payload/system_state_snapshot/reject_count: is 42 but the SSOT counts 0"
	escalation_payload 0 null in_progress "[\"$D\"]"
	run amp send escalation --task $T --from executor --payload esc.json
	assert_failure 3
	assert_output --partial "/payload/system_state_snapshot/last_successful_msg_id: is null but the SSOT's is $D"
	escalation_payload 0 "$D" approved "[\"$D\"]"
	run amp send escalation --task $T --from executor --payload esc.json
	assert_failure 3
	assert_output --partial "/payload/system_state_snapshot/task_status: is \"approved\" but the task is in_progress"
	escalation_payload 0 "$D" in_progress "[\"task_result-$T-1772116330000\"]"
	run amp send escalation --task $T --from executor --payload esc.json
	assert_failure 3
	assert_output --partial "/payload/affected_msgs/0: task_result-$T-1772116330000 is not in the SSOT"
	escalation_payload 0 "$D" in_progress "[\"$D\"]"
	run amp send escalation --task $T --from executor --payload esc.json
	assert_success
}

@test "a critical escalation may show the state it puts the task in" {
	dispatch_acked
	at 10
	escalation_payload 0 "$D" suspended "[\"$D\"]"
	sed -i 's/"warning"/"critical"/' esc.json
	run amp send escalation --task $T --from executor --payload esc.json
	assert_success
	run amp status $T --json
	assert_output --partial '"state": "suspended"'
}

@test "amp's own escalations take the snapshot at commit time, also with verdicts racing" {
	local i
	dispatch_acked
	write_reject_payload
	for i in 1 2; do
		at $((i * 100)); redispatch_if_rejected; review_round $((i - 1))
		at $((i * 100 + 50))
		amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json" > /dev/null &
		amp escalate $T --from executor --type conflict --severity warning --description "race $i" > /dev/null &
		wait
		V=$(amp status $T --json | json_get '[m["msg_id"] for m in d["messages"] if m["type"] == "review_verdict"][-1]')
		amp ack "$V" --from coordinator > /dev/null
	done
	# every escalation agrees with the records before it
	run $PY - <<'PY'
import json, subprocess
names = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/amp/messages"], capture_output=True, text=True).stdout.split()
rejects = 0
bad = []
for n in sorted(names):
    if ".msg." not in n:
        continue
    d = json.loads(subprocess.run(["git", "show", "refs/amp/messages:" + n], capture_output=True, text=True).stdout)
    if d["type"] == "review_verdict" and d["payload"]["decision"] == "rejected":
        rejects += 1
    if d["type"] == "escalation" and d["payload"]["system_state_snapshot"]["reject_count"] != rejects:
        bad.append(n)
print("bad", bad)
PY
	assert_output "bad []"
	assert_equal "$(escalation_count conflict)" 2
}
