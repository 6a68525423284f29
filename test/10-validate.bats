#!/usr/bin/env bats
# amp validate against the AMP/1.0 schemas: every valid fixture passes, every
# invalid fixture fails naming the JSON pointer of the rule it breaks
# (test/fixtures/invalid/EXPECTED.tsv), --json agrees, and JSON lines get a
# verdict per line.  The corpus and the per-rule tests at the end are written
# by test/fixtures/mkfixtures.py.

load helpers
bats_require_minimum_version 1.5.0

PY=/usr/bin/python3

setup() {
	export AMP_SCHEMA_DIR=$AMP_SRC/schemas
}

# Sets SCHEMA_ARGS for fixture $1: files named ack-*.json are ACK records
# (ack.schema.json, which refers to common.schema.json); everything else is
# a message, amp validate's default schema.
schema_args() {
	SCHEMA_ARGS=()
	case ${1##*/} in
	ack-*) SCHEMA_ARGS=(--schema "$AMP_SRC/schemas/ack.schema.json"
		--ref "$AMP_SRC/schemas/common.schema.json") ;;
	esac
}

# True when one of the stderr lines of `amp validate` for $file names the
# JSON pointer $pointer, or, when $prop is given (a missing or unexpected
# property), names the object $pointer and $prop, or $pointer/$prop itself.
names_pointer() {
	local file=$1 pointer=$2 prop=$3 line rest ptr
	while IFS= read -r line; do
		rest=${line#"amp validate: error: $file"}
		[ "$rest" != "$line" ] || continue
		[[ $rest =~ ^(:[0-9]+)?:\ (.*)$ ]] || continue
		rest=${BASH_REMATCH[2]}
		if [[ $rest == /* || $rest == :* ]]; then
			ptr=${rest%%: *}
			rest=${rest#"$ptr: "}
		else
			ptr=""	# an error about the whole value, path left out
		fi
		if [ -z "$prop" ]; then
			[ "$ptr" = "$pointer" ] && return 0
		else
			[ "$ptr" = "$pointer/$prop" ] && return 0
			[ "$ptr" = "$pointer" ] && [[ $rest == *"$prop"* ]] && return 0
		fi
	done <<<"$stderr"
	return 1
}

# assert_rejected FIXTURE POINTER [PROPERTY]
assert_rejected() {
	local file=$FIXTURES/invalid/$1
	schema_args "$1"
	run --separate-stderr amp validate "${SCHEMA_ARGS[@]}" "$file"
	[ "$status" -eq 1 ] || fail "exit $status, expected 1 for $1; stderr: $stderr"
	[ -z "$output" ] || fail "stdout should be empty for an invalid value: $output"
	names_pointer "$file" "$2" "${3:-}" ||
		fail "no error naming '${2}'${3:+ and '$3'} for $1; stderr was:
$stderr"
}

@test "every valid fixture is accepted with exit 0 and '<file>: ok' on stdout" {
	local f n=0
	for f in "$FIXTURES"/valid/*.json; do
		schema_args "$f"
		run --separate-stderr amp validate "${SCHEMA_ARGS[@]}" "$f"
		[ "$status" -eq 0 ] || fail "$f: exit $status; stderr: $stderr"
		[ "$output" = "$f: ok" ] || fail "$f: stdout was: $output"
		[ -z "$stderr" ] || fail "$f: stderr was: $stderr"
		n=$((n + 1))
	done
	[ "$n" -ge 14 ]
}

@test "all valid messages given at once are each reported ok" {
	local files=() f
	for f in "$FIXTURES"/valid/*.json; do
		case ${f##*/} in ack-*) ;; *) files+=("$f") ;; esac
	done
	run --separate-stderr amp validate "${files[@]}"
	assert_success
	[ "${#lines[@]}" -eq "${#files[@]}" ]
	for f in "${files[@]}"; do
		assert_line "$f: ok"
	done
}

@test "the seed's hallucination-lock escalation is a valid message" {
	run --separate-stderr amp validate "$FIXTURES/valid/seed-escalation-hallucination-lock.json"
	assert_success
	assert_output "$FIXTURES/valid/seed-escalation-hallucination-lock.json: ok"
}

@test "a message read from stdin with '-' is reported as <stdin>" {
	run --separate-stderr amp validate - <"$FIXTURES/valid/seed-review_request.json"
	assert_success
	assert_output "<stdin>: ok"
	run --separate-stderr amp validate - <"$FIXTURES/invalid/dispatch-branch-main.json"
	assert_failure 1
	[[ $stderr == *"/payload/branch"* ]]
}

@test "one invalid file among valid ones makes the exit 1 and the others still ok" {
	local good=$FIXTURES/valid/seed-task_result.json bad=$FIXTURES/invalid/verdict-confidence-1.5.json
	run --separate-stderr amp validate "$good" "$bad"
	assert_failure 1
	assert_output "$good: ok"
	[[ $stderr == *"$bad"*"/payload/confidence"* ]]
}

@test "a file that is not JSON is rejected with exit 1" {
	printf '{"msg_id": ' >"$BATS_TEST_TMPDIR/broken.json"
	run --separate-stderr amp validate "$BATS_TEST_TMPDIR/broken.json"
	assert_failure 1
	[[ $stderr == "amp validate: error: $BATS_TEST_TMPDIR/broken.json"* ]]
}

@test "an ACK record is not a message: message.schema.json rejects it" {
	run --separate-stderr amp validate "$FIXTURES/valid/ack-task_dispatch-by-executor.json"
	assert_failure 1
}

@test "--json reports valid:true with no errors for every valid fixture" {
	local f
	for f in "$FIXTURES"/valid/*.json; do
		schema_args "$f"
		run --separate-stderr amp validate --json "${SCHEMA_ARGS[@]}" "$f"
		[ "$status" -eq 0 ] || fail "$f: exit $status"
		$PY -c '
import json, sys
doc = json.loads(sys.argv[1])
r = doc["results"]
assert doc["valid"] is True and len(r) == 1, doc
assert r[0]["file"] == sys.argv[2] and r[0]["valid"] is True and r[0]["errors"] == [], r
' "$output" "$f" || fail "$f: --json output was: $output"
	done
}

@test "--json names the same pointer as the human output for every invalid fixture" {
	local row file pointer prop bad=""
	while IFS= read -r row; do
		[[ $row == \#* ]] && continue
		file=${row%%$'\t'*} row=${row#*$'\t'}
		pointer=${row%%$'\t'*} row=${row#*$'\t'}
		prop=${row%%$'\t'*}
		schema_args "$file"
		run --separate-stderr amp validate --json "${SCHEMA_ARGS[@]}" "$FIXTURES/invalid/$file"
		if [ "$status" -ne 1 ] || ! $PY -c '
import json, sys
doc = json.loads(sys.argv[1]); pointer, prop = sys.argv[2], sys.argv[3]
assert doc["valid"] is False and len(doc["results"]) == 1
r = doc["results"][0]
assert r["valid"] is False and r["errors"]
def names(e):
    if not prop:
        return e["path"] == pointer
    return e["path"] == pointer + "/" + prop or (e["path"] == pointer and prop in e["message"])
assert any(names(e) for e in r["errors"]), r["errors"]
' "$output" "$pointer" "$prop" 2>/dev/null; then
			bad+="$file (exit $status): $output"$'\n'
		fi
	done <"$FIXTURES/invalid/EXPECTED.tsv"
	[ -z "$bad" ] || fail "$bad"
}

@test "a JSON-lines file gets a verdict per line: lines 2 and 4 invalid" {
	local f=$FIXTURES/lines/mixed.jsonl
	run --separate-stderr amp validate "$f"
	assert_failure 1
	[[ $stderr == *"$f:2: /payload/branch: "* ]] || fail "stderr: $stderr"
	[[ $stderr == *"$f:4: /payload/confidence: "* ]] || fail "stderr: $stderr"
	[[ $stderr != *"$f:1:"* && $stderr != *"$f:3:"* ]] || fail "stderr: $stderr"
	run --separate-stderr amp validate --json "$f"
	assert_failure 1
	$PY -c '
import json, sys
doc = json.loads(sys.argv[1])
assert doc["valid"] is False
got = [(r["line"], r["valid"]) for r in doc["results"]]
assert got == [(1, True), (2, False), (3, True), (4, False)], got
assert [e["path"] for e in doc["results"][1]["errors"]] == ["/payload/branch"], doc["results"][1]
assert [e["path"] for e in doc["results"][3]["errors"]] == ["/payload/confidence"], doc["results"][3]
' "$output" || fail "--json output: $output"
}

@test "every row of EXPECTED.tsv has a fixture and a test below, and every fixture a row" {
	local listed actual
	listed=$(grep -v '^#' "$FIXTURES/invalid/EXPECTED.tsv" | cut -f1 | sort)
	actual=$(cd "$FIXTURES/invalid" && ls -- *.json | sort)
	[ "$listed" = "$actual" ] || fail "$(diff <(echo "$listed") <(echo "$actual"))"
	for f in $listed; do
		grep -q "assert_rejected $f " "$BATS_TEST_FILENAME" || fail "no test for $f"
	done
}

@test "a task_id with a trailing newline is rejected (ECMA-262 \$, unlike python's re)" {
	local f=$FIXTURES/python-differs/task_id-trailing-newline.json
	run --separate-stderr amp validate "$f"
	assert_failure 1
	[[ $stderr == "amp validate: error: $f: /task_id: "* ]] || fail "stderr: $stderr"
}

@test "a timestamp on 2026-02-29 is rejected by the date-time format" {
	local f=$FIXTURES/python-differs/timestamp-february-29-2026.json
	run --separate-stderr amp validate "$f"
	assert_failure 1
	[[ $stderr == "amp validate: error: $f: /timestamp: "* ]] || fail "stderr: $stderr"
}

# One test per rule: each fixture breaks exactly that rule.
# BEGIN generated by test/fixtures/mkfixtures.py

@test "a message without msg_id is rejected naming the message and msg_id" {
	assert_rejected envelope-missing-msg_id.json "" "msg_id"
}

@test "a message without protocol_version is rejected naming the message and protocol_version" {
	assert_rejected envelope-missing-protocol_version.json "" "protocol_version"
}

@test "a message without type is rejected naming the message and type" {
	assert_rejected envelope-missing-type.json "" "type"
}

@test "a message without from is rejected naming the message and from" {
	assert_rejected envelope-missing-from.json "" "from"
}

@test "a message without to is rejected naming the message and to" {
	assert_rejected envelope-missing-to.json "" "to"
}

@test "a message without task_id is rejected naming the message and task_id" {
	assert_rejected envelope-missing-task_id.json "" "task_id"
}

@test "a message without timestamp is rejected naming the message and timestamp" {
	assert_rejected envelope-missing-timestamp.json "" "timestamp"
}

@test "a message without requires_ack is rejected naming the message and requires_ack" {
	assert_rejected envelope-missing-requires_ack.json "" "requires_ack"
}

@test "a message without payload is rejected naming the message and payload" {
	assert_rejected envelope-missing-payload.json "" "payload"
}

@test "a message that is a JSON array is rejected naming the message" {
	assert_rejected envelope-not-an-object.json "" ""
}

@test "a message with a field outside the envelope is rejected naming the message and priority" {
	assert_rejected envelope-extra-field.json "" "priority"
}

@test "protocol_version other than AMP/1.0 is rejected naming /protocol_version" {
	assert_rejected envelope-wrong-protocol-version.json "/protocol_version" ""
}

@test "a type outside the five message types is rejected naming /type" {
	assert_rejected envelope-unknown-type.json "/type" ""
}

@test "from outside the five roles is rejected naming /from" {
	assert_rejected envelope-from-unknown-role.json "/from" ""
}

@test "to system is rejected (system never receives) naming /to" {
	assert_rejected envelope-to-system.json "/to" ""
}

@test "task_id not T-YYYY-NNN is rejected naming /task_id" {
	assert_rejected envelope-task_id-bad-format.json "/task_id" ""
}

@test "task_id with a two-digit number is rejected naming /task_id" {
	assert_rejected envelope-task_id-two-digit-number.json "/task_id" ""
}

@test "msg_id not {type}-{task_id}-{unix_ms} is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-bad-format.json "/msg_id" ""
}

@test "msg_id naming another type than the message's is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-other-type.json "/msg_id" ""
}

@test "msg_id with the seed's ... placeholder is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-placeholder.json "/msg_id" ""
}

@test "msg_id whose unix_ms has leading zeros is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-leading-zero-ms.json "/msg_id" ""
}

@test "timestamp without a zone offset is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-without-offset.json "/timestamp" ""
}

@test "timestamp not in ISO 8601 is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-not-iso.json "/timestamp" ""
}

@test "timestamp with hour 25 is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-hour-25.json "/timestamp" ""
}

@test "timestamp with month 13 is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-month-13.json "/timestamp" ""
}

@test "timestamp on February 30 is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-february-30.json "/timestamp" ""
}

@test "timestamp with second 60 is rejected naming /timestamp" {
	assert_rejected envelope-timestamp-leap-second.json "/timestamp" ""
}

@test "requires_ack that is not a boolean is rejected naming /requires_ack" {
	assert_rejected envelope-requires_ack-string.json "/requires_ack" ""
}

@test "ack_timeout_sec 0 is rejected naming /ack_timeout_sec" {
	assert_rejected envelope-ack_timeout_sec-zero.json "/ack_timeout_sec" ""
}

@test "ack_timeout_sec 30.5 is rejected naming /ack_timeout_sec" {
	assert_rejected envelope-ack_timeout_sec-fractional.json "/ack_timeout_sec" ""
}

@test "ack_timeout_sec when requires_ack is false is rejected naming /ack_timeout_sec" {
	assert_rejected envelope-ack_timeout_sec-without-requires_ack.json "/ack_timeout_sec" ""
}

@test "context_ref entry that is not a msg_id is rejected naming /context_ref/0" {
	assert_rejected envelope-context_ref-not-msg_id.json "/context_ref/0" ""
}

@test "context_ref that is not an array is rejected naming /context_ref" {
	assert_rejected envelope-context_ref-string.json "/context_ref" ""
}

@test "payload that is not an object is rejected naming /payload" {
	assert_rejected envelope-payload-not-object.json "/payload" ""
}

@test "task_dispatch without ACK is rejected naming /requires_ack" {
	assert_rejected dispatch-requires_ack-false.json "/requires_ack" ""
}

@test "task_result without ACK is rejected naming /requires_ack" {
	assert_rejected result-requires_ack-false.json "/requires_ack" ""
}

@test "review_request without ACK is rejected naming /requires_ack" {
	assert_rejected review_request-requires_ack-false.json "/requires_ack" ""
}

@test "review_verdict without ACK is rejected naming /requires_ack" {
	assert_rejected verdict-requires_ack-false.json "/requires_ack" ""
}

@test "task_dispatch from executor is rejected naming /from" {
	assert_rejected dispatch-from-executor.json "/from" ""
}

@test "task_dispatch to reviewer is rejected naming /to" {
	assert_rejected dispatch-to-reviewer.json "/to" ""
}

@test "task_result from coordinator is rejected naming /from" {
	assert_rejected result-from-coordinator.json "/from" ""
}

@test "task_result to executor is rejected naming /to" {
	assert_rejected result-to-executor.json "/to" ""
}

@test "review_request from admin is rejected naming /from" {
	assert_rejected review_request-from-admin.json "/from" ""
}

@test "review_request to executor is rejected naming /to" {
	assert_rejected review_request-to-executor.json "/to" ""
}

@test "review_verdict from executor is rejected naming /from" {
	assert_rejected verdict-from-executor.json "/from" ""
}

@test "review_verdict to executor is rejected naming /to" {
	assert_rejected verdict-to-executor.json "/to" ""
}

@test "escalation from admin is rejected naming /from" {
	assert_rejected escalation-from-admin.json "/from" ""
}

@test "escalation to coordinator is rejected naming /to" {
	assert_rejected escalation-to-coordinator.json "/to" ""
}

@test "task_dispatch without description is rejected naming /payload and description" {
	assert_rejected dispatch-missing-description.json "/payload" "description"
}

@test "task_dispatch without repo is rejected naming /payload and repo" {
	assert_rejected dispatch-missing-repo.json "/payload" "repo"
}

@test "task_dispatch without branch is rejected naming /payload and branch" {
	assert_rejected dispatch-missing-branch.json "/payload" "branch"
}

@test "task_dispatch without subtasks is rejected naming /payload and subtasks" {
	assert_rejected dispatch-missing-subtasks.json "/payload" "subtasks"
}

@test "task_dispatch without acceptance_criteria is rejected naming /payload and acceptance_criteria" {
	assert_rejected dispatch-missing-acceptance_criteria.json "/payload" "acceptance_criteria"
}

@test "task_dispatch without risk_level is rejected naming /payload and risk_level" {
	assert_rejected dispatch-missing-risk_level.json "/payload" "risk_level"
}

@test "task_dispatch with a payload field outside §01 is rejected naming /payload and deadline" {
	assert_rejected dispatch-extra-payload-field.json "/payload" "deadline"
}

@test "task_dispatch with an empty description is rejected naming /payload/description" {
	assert_rejected dispatch-description-empty.json "/payload/description" ""
}

@test "task_dispatch to a relative repo path is rejected naming /payload/repo" {
	assert_rejected dispatch-repo-relative-path.json "/payload/repo" ""
}

@test "dispatch to branch main is rejected naming /payload/branch" {
	assert_rejected dispatch-branch-main.json "/payload/branch" ""
}

@test "dispatch to branch master is rejected naming /payload/branch" {
	assert_rejected dispatch-branch-master.json "/payload/branch" ""
}

@test "dispatch to an empty branch name is rejected naming /payload/branch" {
	assert_rejected dispatch-branch-empty.json "/payload/branch" ""
}

@test "task_dispatch with no subtasks is rejected naming /payload/subtasks" {
	assert_rejected dispatch-empty-subtasks.json "/payload/subtasks" ""
}

@test "a subtask without subtask_id is rejected naming /payload/subtasks/0 and subtask_id" {
	assert_rejected dispatch-subtask-missing-subtask_id.json "/payload/subtasks/0" "subtask_id"
}

@test "a subtask without description is rejected naming /payload/subtasks/0 and description" {
	assert_rejected dispatch-subtask-missing-description.json "/payload/subtasks/0" "description"
}

@test "a subtask without estimated_lines is rejected naming /payload/subtasks/0 and estimated_lines" {
	assert_rejected dispatch-subtask-missing-estimated_lines.json "/payload/subtasks/0" "estimated_lines"
}

@test "a subtask with negative estimated_lines is rejected naming /payload/subtasks/1/estimated_lines" {
	assert_rejected dispatch-subtask-negative-estimated_lines.json "/payload/subtasks/1/estimated_lines" ""
}

@test "a subtask with fractional estimated_lines is rejected naming /payload/subtasks/1/estimated_lines" {
	assert_rejected dispatch-subtask-fractional-estimated_lines.json "/payload/subtasks/1/estimated_lines" ""
}

@test "a subtask with a field outside §01 is rejected naming /payload/subtasks/0 and owner" {
	assert_rejected dispatch-subtask-extra-field.json "/payload/subtasks/0" "owner"
}

@test "task_dispatch with empty acceptance_criteria is rejected naming /payload/acceptance_criteria" {
	assert_rejected dispatch-empty-acceptance-criteria.json "/payload/acceptance_criteria" ""
}

@test "an empty acceptance criterion is rejected naming /payload/acceptance_criteria/1" {
	assert_rejected dispatch-blank-acceptance-criterion.json "/payload/acceptance_criteria/1" ""
}

@test "risk_level outside low/medium/high is rejected naming /payload/risk_level" {
	assert_rejected dispatch-risk_level-critical.json "/payload/risk_level" ""
}

@test "forbidden_actions that is not an array is rejected naming /payload/forbidden_actions" {
	assert_rejected dispatch-forbidden_actions-string.json "/payload/forbidden_actions" ""
}

@test "tech_constraints that is not an object is rejected naming /payload/tech_constraints" {
	assert_rejected dispatch-tech_constraints-array.json "/payload/tech_constraints" ""
}

@test "task_result without subtask_id is rejected naming /payload and subtask_id" {
	assert_rejected result-missing-subtask_id.json "/payload" "subtask_id"
}

@test "task_result without completion_status is rejected naming /payload and completion_status" {
	assert_rejected result-missing-completion_status.json "/payload" "completion_status"
}

@test "task_result without diff_summary is rejected naming /payload and diff_summary" {
	assert_rejected result-missing-diff_summary.json "/payload" "diff_summary"
}

@test "task_result without self_assessment is rejected naming /payload and self_assessment" {
	assert_rejected result-missing-self_assessment.json "/payload" "self_assessment"
}

@test "task_result without work_log is rejected naming /payload and work_log" {
	assert_rejected result-missing-work_log.json "/payload" "work_log"
}

@test "partial task_result without blockers is rejected naming /payload and blockers" {
	assert_rejected result-partial-without-blockers.json "/payload" "blockers"
}

@test "failed task_result without blockers is rejected naming /payload and blockers" {
	assert_rejected result-failed-without-blockers.json "/payload" "blockers"
}

@test "partial task_result with empty blockers is rejected naming /payload/blockers" {
	assert_rejected result-partial-empty-blockers.json "/payload/blockers" ""
}

@test "completion_status outside complete/partial/failed is rejected naming /payload/completion_status" {
	assert_rejected result-completion_status-done.json "/payload/completion_status" ""
}

@test "task_result with a payload field outside §02 is rejected naming /payload and merged" {
	assert_rejected result-extra-payload-field.json "/payload" "merged"
}

@test "diff_summary without lines_added is rejected naming /payload/diff_summary and lines_added" {
	assert_rejected result-diff_summary-missing-lines_added.json "/payload/diff_summary" "lines_added"
}

@test "negative lines_added is rejected naming /payload/diff_summary/lines_added" {
	assert_rejected result-lines_added-negative.json "/payload/diff_summary/lines_added" ""
}

@test "lines_removed that is not an integer is rejected naming /payload/diff_summary/lines_removed" {
	assert_rejected result-lines_removed-string.json "/payload/diff_summary/lines_removed" ""
}

@test "files_changed that is not an array is rejected naming /payload/diff_summary/files_changed" {
	assert_rejected result-files_changed-string.json "/payload/diff_summary/files_changed" ""
}

@test "self_assessment without notes is rejected naming /payload/self_assessment and notes" {
	assert_rejected result-self_assessment-missing-notes.json "/payload/self_assessment" "notes"
}

@test "criteria_met entry that is not bool or null is rejected naming /payload/self_assessment/criteria_met/1" {
	assert_rejected result-criteria_met-string.json "/payload/self_assessment/criteria_met/1" ""
}

@test "empty criteria_met is rejected naming /payload/self_assessment/criteria_met" {
	assert_rejected result-criteria_met-empty.json "/payload/self_assessment/criteria_met" ""
}

@test "work_log entry without action is rejected naming /payload/work_log/0 and action" {
	assert_rejected result-work_log-missing-action.json "/payload/work_log/0" "action"
}

@test "work_log timestamp without offset is rejected naming /payload/work_log/0/timestamp" {
	assert_rejected result-work_log-timestamp-without-offset.json "/payload/work_log/0/timestamp" ""
}

@test "commit_hash that is not hexadecimal is rejected naming /payload/commit_hash" {
	assert_rejected result-commit_hash-not-hex.json "/payload/commit_hash" ""
}

@test "commit_hash shorter than 7 digits is rejected naming /payload/commit_hash" {
	assert_rejected result-commit_hash-too-short.json "/payload/commit_hash" ""
}

@test "review_request without original_dispatch_ref is rejected naming /payload and original_dispatch_ref" {
	assert_rejected review_request-missing-original_dispatch_ref.json "/payload" "original_dispatch_ref"
}

@test "review_request without task_result_ref is rejected naming /payload and task_result_ref" {
	assert_rejected review_request-missing-task_result_ref.json "/payload" "task_result_ref"
}

@test "review_request without review_scope is rejected naming /payload and review_scope" {
	assert_rejected review_request-missing-review_scope.json "/payload" "review_scope"
}

@test "review_request without diff_url is rejected naming /payload and diff_url" {
	assert_rejected review_request-missing-diff_url.json "/payload" "diff_url"
}

@test "review_request without reject_count is rejected naming /payload and reject_count" {
	assert_rejected review_request-missing-reject_count.json "/payload" "reject_count"
}

@test "review_request with a payload field outside §03 is rejected naming /payload and deadline" {
	assert_rejected review_request-extra-payload-field.json "/payload" "deadline"
}

@test "original_dispatch_ref with the seed's ... placeholder is rejected naming /payload/original_dispatch_ref" {
	assert_rejected review_request-original_dispatch_ref-placeholder.json "/payload/original_dispatch_ref" ""
}

@test "original_dispatch_ref naming a task_result is rejected naming /payload/original_dispatch_ref" {
	assert_rejected review_request-original_dispatch_ref-not-dispatch.json "/payload/original_dispatch_ref" ""
}

@test "task_result_ref naming a task_dispatch is rejected naming /payload/task_result_ref" {
	assert_rejected review_request-task_result_ref-not-result.json "/payload/task_result_ref" ""
}

@test "review_scope outside full/incremental is rejected naming /payload/review_scope" {
	assert_rejected review_request-review_scope-partial.json "/payload/review_scope" ""
}

@test "empty diff_url is rejected naming /payload/diff_url" {
	assert_rejected review_request-diff_url-empty.json "/payload/diff_url" ""
}

@test "negative reject_count is rejected naming /payload/reject_count" {
	assert_rejected review_request-reject_count-negative.json "/payload/reject_count" ""
}

@test "fractional reject_count is rejected naming /payload/reject_count" {
	assert_rejected review_request-reject_count-fractional.json "/payload/reject_count" ""
}

@test "ci_status entry that is not a string is rejected naming /payload/ci_status/xcode_cloud" {
	assert_rejected review_request-ci_status-not-string.json "/payload/ci_status/xcode_cloud" ""
}

@test "review_verdict without decision is rejected naming /payload and decision" {
	assert_rejected verdict-missing-decision.json "/payload" "decision"
}

@test "review_verdict without criteria_results is rejected naming /payload and criteria_results" {
	assert_rejected verdict-missing-criteria_results.json "/payload" "criteria_results"
}

@test "review_verdict without confidence is rejected naming /payload and confidence" {
	assert_rejected verdict-missing-confidence.json "/payload" "confidence"
}

@test "review_verdict with a payload field outside §04 is rejected naming /payload and score" {
	assert_rejected verdict-extra-payload-field.json "/payload" "score"
}

@test "decision outside approved/approved_with_fix/rejected is rejected naming /payload/decision" {
	assert_rejected verdict-decision-unknown.json "/payload/decision" ""
}

@test "rejected verdict without issues is rejected naming /payload and issues" {
	assert_rejected verdict-rejected-without-issues.json "/payload" "issues"
}

@test "rejected verdict with empty issues is rejected naming /payload/issues" {
	assert_rejected verdict-rejected-empty-issues.json "/payload/issues" ""
}

@test "approved verdict with a criterion passed false is rejected naming /payload/criteria_results/0/passed" {
	assert_rejected verdict-approved-criterion-failed.json "/payload/criteria_results/0/passed" ""
}

@test "approved_with_fix verdict without direct_fixes is rejected naming /payload and direct_fixes" {
	assert_rejected verdict-approved_with_fix-without-direct_fixes.json "/payload" "direct_fixes"
}

@test "direct fix of 5 lines is rejected naming /payload/direct_fixes/0/diff_lines" {
	assert_rejected verdict-direct-fix-5-lines.json "/payload/direct_fixes/0/diff_lines" ""
}

@test "direct fix of 6 lines is rejected naming /payload/direct_fixes/0/diff_lines" {
	assert_rejected verdict-direct-fix-6-lines.json "/payload/direct_fixes/0/diff_lines" ""
}

@test "direct fix of -1 lines is rejected naming /payload/direct_fixes/0/diff_lines" {
	assert_rejected verdict-direct-fix-negative-lines.json "/payload/direct_fixes/0/diff_lines" ""
}

@test "direct fix of change_type refactor is rejected naming /payload/direct_fixes/0/change_type" {
	assert_rejected verdict-direct-fix-change_type-refactor.json "/payload/direct_fixes/0/change_type" ""
}

@test "direct fix without file is rejected naming /payload/direct_fixes/0 and file" {
	assert_rejected verdict-direct-fix-missing-file.json "/payload/direct_fixes/0" "file"
}

@test "approved_with_fix with empty direct_fixes is rejected naming /payload/direct_fixes" {
	assert_rejected verdict-approved_with_fix-empty-direct_fixes.json "/payload/direct_fixes" ""
}

@test "approved verdict carrying direct_fixes is rejected naming /payload/direct_fixes" {
	assert_rejected verdict-approved-with-direct_fixes.json "/payload/direct_fixes" ""
}

@test "rejected verdict carrying direct_fixes is rejected naming /payload/direct_fixes" {
	assert_rejected verdict-rejected-with-direct_fixes.json "/payload/direct_fixes" ""
}

@test "approved verdict with a critical issue is rejected naming /payload/issues/0/severity" {
	assert_rejected verdict-approved-with-critical-issue.json "/payload/issues/0/severity" ""
}

@test "approved_with_fix verdict with a major issue is rejected naming /payload/issues/0/severity" {
	assert_rejected verdict-approved_with_fix-with-major-issue.json "/payload/issues/0/severity" ""
}

@test "issue severity outside critical/major/minor is rejected naming /payload/issues/0/severity" {
	assert_rejected verdict-issue-severity-blocker.json "/payload/issues/0/severity" ""
}

@test "issue without severity is rejected naming /payload/issues/0 and severity" {
	assert_rejected verdict-issue-missing-severity.json "/payload/issues/0" "severity"
}

@test "issue without file is rejected naming /payload/issues/0 and file" {
	assert_rejected verdict-issue-missing-file.json "/payload/issues/0" "file"
}

@test "issue without line is rejected naming /payload/issues/0 and line" {
	assert_rejected verdict-issue-missing-line.json "/payload/issues/0" "line"
}

@test "issue without description is rejected naming /payload/issues/0 and description" {
	assert_rejected verdict-issue-missing-description.json "/payload/issues/0" "description"
}

@test "issue without suggested_fix is rejected naming /payload/issues/0 and suggested_fix" {
	assert_rejected verdict-issue-missing-suggested_fix.json "/payload/issues/0" "suggested_fix"
}

@test "issue at line 0 is rejected naming /payload/issues/0/line" {
	assert_rejected verdict-issue-line-zero.json "/payload/issues/0/line" ""
}

@test "verdict with empty criteria_results is rejected naming /payload/criteria_results" {
	assert_rejected verdict-empty-criteria_results.json "/payload/criteria_results" ""
}

@test "criteria_results passed that is not bool or null is rejected naming /payload/criteria_results/0/passed" {
	assert_rejected verdict-criterion-passed-string.json "/payload/criteria_results/0/passed" ""
}

@test "criteria_results entry without evidence is rejected naming /payload/criteria_results/0 and evidence" {
	assert_rejected verdict-criterion-missing-evidence.json "/payload/criteria_results/0" "evidence"
}

@test "confidence 1.5 is rejected naming /payload/confidence" {
	assert_rejected verdict-confidence-1.5.json "/payload/confidence" ""
}

@test "confidence -0.1 is rejected naming /payload/confidence" {
	assert_rejected verdict-confidence-negative.json "/payload/confidence" ""
}

@test "confidence that is a string is rejected naming /payload/confidence" {
	assert_rejected verdict-confidence-string.json "/payload/confidence" ""
}

@test "escalation without escalation_type is rejected naming /payload and escalation_type" {
	assert_rejected escalation-missing-escalation_type.json "/payload" "escalation_type"
}

@test "escalation without severity is rejected naming /payload and severity" {
	assert_rejected escalation-missing-severity.json "/payload" "severity"
}

@test "escalation without triggered_by is rejected naming /payload and triggered_by" {
	assert_rejected escalation-missing-triggered_by.json "/payload" "triggered_by"
}

@test "escalation without description is rejected naming /payload and description" {
	assert_rejected escalation-missing-description.json "/payload" "description"
}

@test "escalation without affected_msgs is rejected naming /payload and affected_msgs" {
	assert_rejected escalation-missing-affected_msgs.json "/payload" "affected_msgs"
}

@test "escalation without system_state_snapshot is rejected naming /payload and system_state_snapshot" {
	assert_rejected escalation-missing-system_state_snapshot.json "/payload" "system_state_snapshot"
}

@test "escalation without auto_suspended is rejected naming /payload and auto_suspended" {
	assert_rejected escalation-missing-auto_suspended.json "/payload" "auto_suspended"
}

@test "escalation with a payload field outside §05 is rejected naming /payload and telegram_chat" {
	assert_rejected escalation-extra-payload-field.json "/payload" "telegram_chat"
}

@test "critical escalation with auto_suspended false is rejected naming /payload/auto_suspended" {
	assert_rejected escalation-critical-not-suspended.json "/payload/auto_suspended" ""
}

@test "warning escalation with auto_suspended false is rejected naming /payload/auto_suspended" {
	assert_rejected escalation-warning-not-suspended.json "/payload/auto_suspended" ""
}

@test "auto_suspended that is not a boolean is rejected naming /payload/auto_suspended" {
	assert_rejected escalation-auto_suspended-string.json "/payload/auto_suspended" ""
}

@test "escalation_type outside the eight is rejected naming /payload/escalation_type" {
	assert_rejected escalation-type-timeout.json "/payload/escalation_type" ""
}

@test "escalation severity outside critical/warning/info is rejected naming /payload/severity" {
	assert_rejected escalation-severity-fatal.json "/payload/severity" ""
}

@test "escalation triggered_by admin is rejected naming /payload/triggered_by" {
	assert_rejected escalation-triggered_by-admin.json "/payload/triggered_by" ""
}

@test "escalation with an empty description is rejected naming /payload/description" {
	assert_rejected escalation-description-empty.json "/payload/description" ""
}

@test "affected_msgs with the seed's short ids is rejected naming /payload/affected_msgs/0" {
	assert_rejected escalation-affected_msgs-placeholder.json "/payload/affected_msgs/0" ""
}

@test "suggested_actions that is not an array is rejected naming /payload/suggested_actions" {
	assert_rejected escalation-suggested_actions-string.json "/payload/suggested_actions" ""
}

@test "system_state_snapshot without task_status is rejected naming /payload/system_state_snapshot and task_status" {
	assert_rejected escalation-snapshot-missing-task_status.json "/payload/system_state_snapshot" "task_status"
}

@test "system_state_snapshot without reject_count is rejected naming /payload/system_state_snapshot and reject_count" {
	assert_rejected escalation-snapshot-missing-reject_count.json "/payload/system_state_snapshot" "reject_count"
}

@test "system_state_snapshot without last_successful_msg_id is rejected naming /payload/system_state_snapshot and last_successful_msg_id" {
	assert_rejected escalation-snapshot-missing-last_successful_msg_id.json "/payload/system_state_snapshot" "last_successful_msg_id"
}

@test "snapshot with negative reject_count is rejected naming /payload/system_state_snapshot/reject_count" {
	assert_rejected escalation-snapshot-reject_count-negative.json "/payload/system_state_snapshot/reject_count" ""
}

@test "snapshot last_successful_msg_id that is not a msg_id is rejected naming /payload/system_state_snapshot/last_successful_msg_id" {
	assert_rejected escalation-snapshot-last_successful_msg_id-placeholder.json "/payload/system_state_snapshot/last_successful_msg_id" ""
}

@test "a task_id with more than nine digits is rejected naming /task_id" {
	assert_rejected envelope-task_id-ten-digits.json "/task_id" ""
}

@test "a msg_id whose task_id has more than nine digits is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-task-ten-digits.json "/msg_id" ""
}

@test "a msg_id whose unix_ms has more than 15 digits is rejected naming /msg_id" {
	assert_rejected envelope-msg_id-unix_ms-sixteen-digits.json "/msg_id" ""
}

@test "a context_ref of more than 1000 msg_ids is rejected naming /context_ref" {
	assert_rejected envelope-context_ref-too-many.json "/context_ref" ""
}

@test "a string longer than 65536 characters is rejected naming /payload/description" {
	assert_rejected dispatch-description-too-long.json "/payload/description" ""
}

@test "more than 1000 acceptance criteria are rejected naming /payload/acceptance_criteria" {
	assert_rejected dispatch-acceptance_criteria-too-many.json "/payload/acceptance_criteria" ""
}

@test "tech_constraints with more than 1000 members is rejected naming /payload/tech_constraints" {
	assert_rejected dispatch-tech_constraints-too-many-members.json "/payload/tech_constraints" ""
}

@test "ci_status with more than 1000 members is rejected naming /payload/ci_status" {
	assert_rejected review_request-ci_status-too-many-members.json "/payload/ci_status" ""
}

@test "affected_msgs of more than 1000 msg_ids is rejected naming /payload/affected_msgs" {
	assert_rejected escalation-affected_msgs-too-many.json "/payload/affected_msgs" ""
}

@test "ACK without protocol_version is rejected naming the message and protocol_version" {
	assert_rejected ack-missing-protocol_version.json "" "protocol_version"
}

@test "ACK without type is rejected naming the message and type" {
	assert_rejected ack-missing-type.json "" "type"
}

@test "ACK without ack_for is rejected naming the message and ack_for" {
	assert_rejected ack-missing-ack_for.json "" "ack_for"
}

@test "ACK without task_id is rejected naming the message and task_id" {
	assert_rejected ack-missing-task_id.json "" "task_id"
}

@test "ACK without from is rejected naming the message and from" {
	assert_rejected ack-missing-from.json "" "from"
}

@test "ACK without to is rejected naming the message and to" {
	assert_rejected ack-missing-to.json "" "to"
}

@test "ACK without timestamp is rejected naming the message and timestamp" {
	assert_rejected ack-missing-timestamp.json "" "timestamp"
}

@test "ACK with a field outside the record is rejected naming the message and status" {
	assert_rejected ack-extra-field.json "" "status"
}

@test "ACK whose type is not ack is rejected naming /type" {
	assert_rejected ack-type-not-ack.json "/type" ""
}

@test "ACK with protocol_version other than AMP/1.0 is rejected naming /protocol_version" {
	assert_rejected ack-wrong-protocol-version.json "/protocol_version" ""
}

@test "ACK for something that is not a msg_id is rejected naming /ack_for" {
	assert_rejected ack-ack_for-not-msg_id.json "/ack_for" ""
}

@test "ACK from system is rejected (system is never an addressee) naming /from" {
	assert_rejected ack-from-system.json "/from" ""
}

@test "ACK timestamp without offset is rejected naming /timestamp" {
	assert_rejected ack-timestamp-without-offset.json "/timestamp" ""
}

# END generated
