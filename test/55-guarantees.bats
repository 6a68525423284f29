#!/usr/bin/env bats
# The promises of amp-protocol(7) "WHAT AMP PROMISES" that no other suite owns:
# the SSOT is append-only, and a refused message changes nothing on it.

load helpers
load conversation
load enforcer

teardown() {
	fsck_teardown
}

setup() {
	make_repo
	# Keep a reflog of refs/amp/* so that every move of the refs can be
	# checked afterwards (git logs only branches by default).
	git config core.logAllRefUpdates always
	amp init > /dev/null
	write_payloads
	at 0
}

# assert_append_only REF: every commit of REF has one parent (the root
# none), adds files and neither modifies nor deletes one; every recorded
# move of REF went forward (the old tip is an ancestor of the new one).
assert_append_only() {
	local ref=$1 c parents status prev="" cur
	for c in $(git rev-list --reverse "$ref"); do
		parents=$(git rev-list --parents -n 1 "$c" | wc -w)
		if [ -z "$prev" ]; then
			assert_equal "$parents" 1
		else
			assert_equal "$parents" 2
			status=$(git diff-tree --no-commit-id -r --name-status "$c^" "$c" | cut -f1 | sort -u | tr -d '\n')
			[ "$status" = A ] || {
				echo "commit $c of $ref does more than add files:"
				git diff-tree --no-commit-id -r --name-status "$c^" "$c"
				return 1
			}
		fi
		prev=$c
	done
	prev=""
	for cur in $(git reflog show --format=%H "$ref" | tac); do
		if [ -n "$prev" ]; then
			git merge-base --is-ancestor "$prev" "$cur" || {
				echo "$ref moved from $prev to $cur, which does not descend from it"
				return 1
			}
		fi
		prev=$cur
	done
	# the reflog saw every commit: no move was lost from the check
	assert_equal "$(git reflog show "$ref" | wc -l)" "$(git rev-list --count "$ref")"
}

@test "append-only: every commit amp writes only adds files, and the refs only move forward" {
	dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	# refused messages: a schema error and a rule error go to the error log
	run amp send task_dispatch --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	echo '{"original_dispatch_ref": "'"$D"'"}' > "$BATS_TEST_TMPDIR/p/bad.json"
	run amp send review_request --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/bad.json"
	assert_failure 1
	# an ACK timeout the watcher escalates, a critical escalation, a resume
	at 1000; amp watch --once > /dev/null
	amp escalate $T --from executor --type conflict --severity critical --description "cannot agree" > /dev/null
	run amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_failure 3
	amp resume $T --from admin --reason "go on" > /dev/null
	amp ack "$R" --from coordinator > /dev/null
	assert_equal "$(git rev-list --count refs/amp/errors)" 4
	assert_append_only refs/amp/messages
	assert_append_only refs/amp/errors
}

@test "a refused message leaves the messages ref where it was" {
	send_dispatch
	tip=$(git rev-parse refs/amp/messages)
	# schema: not a role of the type
	run amp send task_dispatch --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	# rule: a reference to a message that is not in the SSOT
	run amp send task_dispatch --task $T --from coordinator --context-ref task_dispatch-T-2026-044-1 \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 3
	# not JSON at all
	echo '{"broken' > "$BATS_TEST_TMPDIR/p/broken.json"
	run amp send --envelope "$BATS_TEST_TMPDIR/p/broken.json"
	assert_failure 1
	# only the addressee may ACK
	run amp ack "$D" --from reviewer
	assert_failure 3
	assert_equal "$(git rev-parse refs/amp/messages)" "$tip"
	assert_equal "$(git rev-list --count refs/amp/errors)" 5
}
