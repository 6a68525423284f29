#!/usr/bin/env bats
# amp verdict: the reviewer's review_verdict, answering the review_request
# found in the SSOT; AMP/1.0 §04 Direct Fix Scope (rule 9).

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	dispatch_acked
	at 60; review_round 0
	at 100
}

@test "verdict answers the latest review_request: context_ref, flags fill decision and confidence" {
	run amp verdict $T --decision approved --confidence 0.93 --payload "$BATS_TEST_TMPDIR/p/verdict.json" --architecture-notes "Extract a TimeKeeper actor later"
	assert_success
	assert_output "review_verdict-$T-1772116427000"
	V=$output
	run git show "refs/amp/messages:$(next_path $T x | sed 's#/[^/]*$##')/000007.msg.$V.json"
	assert_success
	assert_output --partial '"from": "reviewer"'
	assert_output --partial '"to": "coordinator"'
	assert_output --partial "\"context_ref\": [
    \"$Q\"
  ]"
	assert_output --partial '"decision": "approved"'
	assert_output --partial '"confidence": 0.93'
	assert_output --partial '"architecture_notes": "Extract a TimeKeeper actor later"'
	assert_output --partial '"evidence": "measured 200ms"'
	run amp status $T --json
	assert_output --partial '"state": "approved"'
	assert_fsck_clean
}

@test "verdict without criteria_results gets one 'not assessed' result per acceptance criterion" {
	run amp verdict $T --decision approved --confidence 0.9
	assert_success
	run amp status $T --json
	run escalation_file "$(amp status $T --json | json_get '[m["msg_id"] for m in d["messages"] if m["type"] == "review_verdict"][0]')"
	assert_output --partial '"criterion": "timing error < 500ms"'
	assert_output --partial '"criterion": "no memory leak"'
	assert_output --partial '"passed": null'
}

@test "verdict names the review_request with --context-ref, and refuses one that is not a review_request" {
	run amp verdict $T --decision approved --confidence 0.9 --context-ref "$Q" --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_success
	run amp verdict $T --decision approved --confidence 0.9 --context-ref "$D" --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_failure 3
	assert_output --partial "/context_ref: $D is not a review_request of task $T"
}

@test "verdict on a task with no review_request is refused with exit 3" {
	local before
	before=$(error_count)
	run amp verdict T-2026-099 --decision approved --confidence 0.9
	assert_failure 3
	assert_output --partial "no review_request of task T-2026-099 in the SSOT"
	# refused before a message is built, and still logged
	assert_equal "$(error_count)" $((before + 1))
	run amp errors --json
	assert_output --partial '"command": "verdict"'
	assert_output --partial "nothing to give a verdict on"
}

@test "a rejected verdict must list issues (exit 1, schema)" {
	run amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_failure 1
	assert_output --partial "issues"
	write_reject_payload
	run amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json"
	assert_success
	run amp status $T --json
	assert_output --partial '"reject_count": 1'
}

@test "rule 9 direct-fix scope: approved_with_fix only with typo/lint/whitespace/import_order under 5 lines" {
	fixes() {
		$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["direct_fixes"]=[{"file":"BreathEngine.swift","change_type":sys.argv[2],"diff_lines":int(sys.argv[3])}]; print(json.dumps(p))' \
			"$BATS_TEST_TMPDIR/p/verdict.json" "$1" "$2" > "$BATS_TEST_TMPDIR/p/fix.json"
	}
	fixes refactor 1
	run amp verdict $T --decision approved_with_fix --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/fix.json"
	assert_failure 1
	assert_output --partial "/payload/direct_fixes/0/change_type"
	fixes whitespace 5
	run amp verdict $T --decision approved_with_fix --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/fix.json"
	assert_failure 1
	assert_output --partial "/payload/direct_fixes/0/diff_lines"
	# the refusals are in the error log
	assert_equal "$(git rev-list --count refs/amp/errors)" 3
	run amp status $T --json
	refute_output --partial '"review_verdict"'
	# direct fixes on a plain approval are refused too
	fixes typo 1
	run amp verdict $T --decision approved --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/fix.json"
	assert_failure 1
	fixes import_order 4
	run amp verdict $T --decision approved_with_fix --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/fix.json"
	assert_success
}

@test "verdict usage: decision and confidence are required and checked" {
	run amp verdict $T --confidence 0.9
	assert_failure 2
	assert_output --partial "--decision"
	run amp verdict $T --decision maybe --confidence 0.9
	assert_failure 2
	run amp verdict $T --decision approved --confidence 1.5
	assert_failure 2
	assert_output --partial "--confidence"
	run amp verdict --help
	assert_success
	assert_output --partial "usage: amp verdict"
}

@test "only the reviewer gives a verdict (exit 1: the schema knows the roles)" {
	run amp verdict $T --from executor --decision approved --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/verdict.json"
	assert_failure 1
	assert_output --partial "/from"
}
