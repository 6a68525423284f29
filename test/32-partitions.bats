#!/usr/bin/env bats
# Partitions (issue 32, item 5): four clones of one hub guarded by amp's
# hook; group A (a1, a2) keeps the hub, group B (b1, b2) loses it and
# syncs through a hub of its own (a bare copy, guarded the same way) while
# both groups write what conflicts: a claim of one task, a verdict on one
# review_request, the two halves of a dependency cycle, and what builds on
# them; each group also writes what conflicts with nothing.  Then B comes
# back to the hub, the clones syncing in three different orders, each run
# from the same start with the same clock.

bats_require_minimum_version 1.5.0

load partition # setup, teardown and the scenario

@test "partitioned groups writing conflicting claims, verdicts and dependencies, rejoined in three orders: every clone ends with the hub's SSOT, each conflict decided alike whatever the order, each loser set aside and escalated once, nothing lost" {
	local order n=0 c
	for order in "b1 b2 a1 a2" "a1 b2 a2 b1" "b2 a2 b1 a1"; do
		n=$((n + 1))
		before_partition "$BATS_TEST_TMPDIR/run$n"
		partitioned
		every_record > "$HUB_BASE/written"
		# shellcheck disable=SC2086
		rejoin $order
		# every clone holds the hub's SSOT, byte for byte
		for c in a1 a2 b1 b2; do
			[ "$(git -C "$HUB_BASE/$c" rev-parse refs/amp/messages)" = "$(git -C "$HUB_BASE/hub.git" rev-parse refs/amp/messages)" ]
			[ "$(git -C "$HUB_BASE/$c" rev-parse refs/amp/errors)" = "$(git -C "$HUB_BASE/hub.git" rev-parse refs/amp/errors)" ]
		done
		[ "$(git -C "$HUB_BASE/hub.git" rev-list --merges --count refs/amp/messages)" = 0 ]
		# nothing lost: every record either group wrote is on the hub
		records "$HUB_BASE/hub.git" > "$HUB_BASE/records"
		comm -23 "$HUB_BASE/written" "$HUB_BASE/records" > "$HUB_BASE/lost"
		[ ! -s "$HUB_BASE/lost" ] || { cat "$HUB_BASE/lost"; false; }
		# the first in the hub's order wins each conflict (group A kept
		# the hub); B's records are kept, set aside after a marker
		run -0 on a1 amp status $T --json
		run -0 json_get '[d["state"], d["subtasks"][0]["verdict"], sorted((s["kind"], s["id"], s["by"]) for s in d["superseded"])]' <<< "$output"
		assert_output "[\"approved\", \"$VA\", [[\"ack\", \"$VB\", null], [\"message\", \"$VB\", \"$VA\"]]]"
		run -0 on a1 amp status $C --json
		run -0 json_get '[[c["agent"] for c in d["claims"]], sorted((s["type"], s["from"]) for s in d["superseded"])]' <<< "$output"
		assert_output '[["alice"], [["claim", "executor"], ["heartbeat", "executor"]]]'
		run -0 on a1 amp status T-2026-101 --json
		run -0 json_get '[w["task_id"] for w in d["waits_for"]]' <<< "$output"
		assert_output '["T-2026-102"]'
		run -0 on a1 amp status T-2026-102 --json
		run -0 json_get '[[w["task_id"] for w in d["waits_for"]], [(s["type"], s["from"]) for s in d["superseded"]]]' <<< "$output"
		assert_output '[[], [["depend", "coordinator"]]]'
		# each loser escalated to the admin once, whichever clone joined
		# it: the claim and bob's heartbeat on it, the verdict (with its
		# ACK: one cause), the half of the cycle
		for c in a1 a2 b1 b2; do
			conflicts $C $c > "$HUB_BASE/conflicts.$c"
			for t in $T T-2026-102; do conflicts $t $c >> "$HUB_BASE/conflicts.$c"; done
			cmp "$HUB_BASE/conflicts.a1" "$HUB_BASE/conflicts.$c"
		done
		run -0 cat "$HUB_BASE/conflicts.a1"
		assert_equal "${#lines[@]}" 4
		assert_line --index 0 --partial "set aside control claim-"
		assert_line --index 1 --partial "set aside control heartbeat-"
		assert_line --index 2 --partial "set aside message $VB"
		assert_line --index 3 --partial "set aside control depend-"
		[ -z "$(sort "$HUB_BASE/conflicts.a1" | uniq -d)" ]
		# every clone decided alike
		decided a1 > "$HUB_BASE/decided"
		for c in a2 b1 b2; do
			diff "$HUB_BASE/decided" <(decided $c)
		done
		cd "$BATS_TEST_TMPDIR"
	done
	# whatever the order: the same records, the same decisions, the same
	# escalations
	for n in 2 3; do
		cmp "$BATS_TEST_TMPDIR/run1/records" "$BATS_TEST_TMPDIR/run$n/records"
		cmp "$BATS_TEST_TMPDIR/run1/decided" "$BATS_TEST_TMPDIR/run$n/decided"
		cmp "$BATS_TEST_TMPDIR/run1/conflicts.a1" "$BATS_TEST_TMPDIR/run$n/conflicts.a1"
	done
}
