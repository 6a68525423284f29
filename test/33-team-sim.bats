#!/usr/bin/env bats
# A team, simulated (issue 33): share/team-sim.sh runs 2 coordinators, 3
# executors, 2 reviewers and a watcher (the admin), each in its own clone of
# a hub guarded by amp's server hook, through 8 tasks -- dispatches to a
# named executor found in its own inbox view, claims, ACKs, results,
# reviews, rejects, one lock and the admin's resume, one abort, one
# dependency -- and the end state is checked on the hub and every clone.

bats_require_minimum_version 1.5.0

load helpers
load enforcer

@test "a simulated team of 2 coordinators, 3 executors, 2 reviewers and a watcher runs 8 tasks through a hub: every task ends approved or aborted, only the planted escalation, fsck clean everywhere, every clone's status the same" {
	team=$BATS_TEST_TMPDIR/team
	run share/team-sim.sh "$team" 2 3 2 8
	assert_success
	assert_line --regexp '^task T-2026-001 approved in '
	assert_line --regexp '^task T-2026-003 aborted in '
	assert_line --regexp '^team: 2 coordinators, 3 executors, 2 reviewers, 8 tasks in '
	export AMP_NOW=2026-02-27T00:00:00+00:00
	# The end state, as the hub holds it: every task approved but the
	# aborted one, which says why.
	cd "$team/w"
	run amp status --all --json
	assert_success
	echo "$output" | json_get '" ".join(t["task_id"] + "=" + t["state"] for t in d["tasks"])' > "$BATS_TEST_TMPDIR/states"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/states")" "T-2026-001=approved T-2026-002=approved T-2026-003=aborted T-2026-004=approved T-2026-005=approved T-2026-006=approved T-2026-007=approved T-2026-008=approved"
	run amp status T-2026-003
	assert_line --regexp "^control: .*  abort by coordinator: the feature was dropped\$"
	# No escalation but the planted lock of T-2026-002.
	run bash -c "git -C '$team/hub.git' ls-tree -r --name-only refs/amp/messages | grep '\.msg\.escalation-'"
	assert_output --regexp '^tasks/2026/0/(0/)?T-2026-002/([0-9]{2}/[0-9]{2}/)?[0-9]{6}\.msg\.escalation-T-2026-002-[0-9]+\.json$'
	git -C "$team/hub.git" show "refs/amp/messages:$output" | json_get 'd["payload"]["escalation_type"]' | grep -qx hallucination_lock
	# The dispatches went to named executors: one address record each.
	[ "$(git -C "$team/hub.git" ls-tree -r --name-only refs/amp/messages | grep -c '\.ctl\.address-')" -eq 10 ]
	# amp fsck on the hub and every clone; the same status everywhere.
	run amp fsck --repo "$team/hub.git"
	assert_success
	amp status --all --json > "$BATS_TEST_TMPDIR/status.w"
	for c in c1 c2 e1 e2 e3 r1 r2; do
		(cd "$team/$c" && amp fsck > /dev/null) || fail "amp fsck fails in $c"
		(cd "$team/$c" && amp status --all --json) > "$BATS_TEST_TMPDIR/status.$c"
		cmp "$BATS_TEST_TMPDIR/status.w" "$BATS_TEST_TMPDIR/status.$c" || fail "$c's amp status --json differs from w's"
	done
	# git fsck --strict on every repository: the suite's teardown.
}
