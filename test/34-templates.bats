#!/usr/bin/env bats
# Issue 34, "templates that work": amp send TYPE --template prints a
# payload whose placeholders start with example- (the repo /example-repo);
# filled in, amp send takes it.  With --task, what the SSOT knows is filled
# in: the dispatch's work repository, its first subtask, one criteria_met
# (and one criteria_results entry) per acceptance criterion, the references.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
	T=T-2026-034
}

# A dispatch made from its template, the placeholders filled with sed:
# the work repository, two subtasks' ids and three acceptance criteria.
dispatch_from_template() {
	amp send task_dispatch --template > "$BATS_TEST_TMPDIR/d.json"
	git -C "$PWD" checkout -q -b feature
	sed -i -e "s#/example-repo#$PWD#" -e 's/example-branch/feature/' \
		-e 's/"example-subtask_id"/"parse-input"/' \
		-e 's/"example-acceptance_criteria"/"parses", "rejects bad input", "documented"/' \
		"$BATS_TEST_TMPDIR/d.json"
}

@test "the dispatch template's placeholders are marked, and no placeholder is a real repository" {
	run -0 --separate-stderr amp send task_dispatch --template
	run -0 python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["repo"], d["description"], d["subtasks"][0]["subtask_id"])' "$output"
	assert_output "/example-repo example-description example-subtask_id"
	# as it is, amp send refuses it for the repository, by its path
	amp send task_dispatch --template > "$BATS_TEST_TMPDIR/raw.json"
	run -3 --separate-stderr amp send task_dispatch --task $T --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/raw.json"
	[[ $stderr == "amp send: error: /payload/repo: /example-repo"* ]] || fail "$stderr"
}

@test "amp send task_dispatch --template, filled with sed, is sent" {
	dispatch_from_template
	run -0 --separate-stderr amp send task_dispatch --task $T --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/d.json"
	assert_regex "$output" "^task_dispatch-$T-[0-9]+\$"
	run -0 amp status $T
	assert_line --regexp "^$T +dispatched"
}

@test "the task_result template of a dispatched task names its subtask and one criteria_met per criterion, and is sent" {
	dispatch_from_template
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/d.json")
	amp ack "$D" --from executor > /dev/null
	run -0 --separate-stderr amp send task_result --template --task $T
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/r.json"
	run -0 python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["subtask_id"], r["self_assessment"]["criteria_met"])' "$BATS_TEST_TMPDIR/r.json"
	assert_output "parse-input [True, True, True]"
	sed -i 's/example-notes/all three hold/' "$BATS_TEST_TMPDIR/r.json"
	run -0 --separate-stderr amp send task_result --task $T --from executor \
		--payload "$BATS_TEST_TMPDIR/r.json"
	assert_regex "$output" "^task_result-$T-[0-9]+\$"
}

@test "the review_request and review_verdict templates carry the dispatch's criteria and the task's references" {
	dispatch_from_template
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/d.json")
	amp ack "$D" --from executor > /dev/null
	amp send task_result --template --task $T > "$BATS_TEST_TMPDIR/r.json"
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/r.json")
	amp ack "$R" --from coordinator > /dev/null
	amp send review_request --template --task $T > "$BATS_TEST_TMPDIR/q.json"
	run -0 python3 -c '
import json, sys
q = json.load(open(sys.argv[1]))
print(q["original_dispatch_ref"], q["task_result_ref"])' "$BATS_TEST_TMPDIR/q.json"
	assert_output "$D $R"
	Q=$(amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/q.json")
	amp ack "$Q" --from reviewer > /dev/null
	amp send review_verdict --template --task $T > "$BATS_TEST_TMPDIR/v.json"
	run -0 python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
print([c["criterion"] for c in v["criteria_results"]])' "$BATS_TEST_TMPDIR/v.json"
	assert_output "['parses', 'rejects bad input', 'documented']"
	run -0 --separate-stderr amp send review_verdict --task $T --from reviewer \
		--payload "$BATS_TEST_TMPDIR/v.json"
	run -0 amp status $T
	assert_line --regexp "^$T +approved"
}
