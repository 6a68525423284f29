#!/usr/bin/env bats
# Many writers, killed writers: nothing valid is ever lost.

load helpers
load conversation

teardown() {
	fsck_teardown
}

setup() {
	make_ssot
	send_dispatch
}

# writer N COUNT: sends COUNT dispatches on task T-2026-1NN, printing the ids.
writer() {
	local i task
	task=$(printf 'T-2026-%03d' $((100 + $1)))
	for ((i = 0; i < $2; i++)); do
		amp send task_dispatch --task "$task" --from coordinator \
			--payload "$BATS_TEST_TMPDIR/p/dispatch.json" >> "$BATS_TEST_TMPDIR/ok.$1" ||
			echo "writer $1 message $i failed: $?" >> "$BATS_TEST_TMPDIR/failures"
	done
}

@test "8 concurrent senders x 100 messages: all 800 present, history linear" {
	for w in 1 2 3 4 5 6 7 8; do
		writer $w 100 &
	done
	wait
	assert_file_not_exists "$BATS_TEST_TMPDIR/failures"
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/ok.* | sort -u | wc -l)" 800
	# every msg_id printed is in the tree, and nothing else was added
	for w in 1 2 3 4 5 6 7 8; do
		task=$(printf 'T-2026-%03d' $((100 + w)))
		run amp status "$task" --json
		assert_equal "$(echo "$output" | grep -c '"msg_id"')" 100
	done
	git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.task_dispatch-T-2026-1' > n
	assert_equal "$(cat n)" 800
	assert_equal "$(commit_count)" 802
	assert_equal "$(git rev-list --min-parents=2 --count refs/amp/messages)" 0
	assert_fsck_clean
}

@test "concurrent senders on one task keep one sequence and unique msg_ids" {
	for w in 1 2 3 4; do
		( for i in 1 2 3 4 5 6 7 8 9 10; do
			amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" >> "$BATS_TEST_TMPDIR/ids"
		  done ) &
	done
	wait
	assert_equal "$(sort -u "$BATS_TEST_TMPDIR/ids" | wc -l)" 40
	run git ls-tree -r --name-only "refs/amp/messages:$(task_path T-2026-044)"
	assert_equal "${#lines[@]}" 41
	assert_equal "$(printf '%s\n' "${lines[@]##*/}" | cut -c1-6 | sort -u | wc -l)" 41
	assert_fsck_clean
}

@test "senders killed at random instants leave a valid ref and lose no acknowledged message" {
	for round in 1 2 3 4 5 6; do
		pids=()
		for w in 1 2 3; do
			writer $w 1000 &
			pids+=($!)
		done
		sleep 0.$((RANDOM % 5 + 2))
		# SIGKILL the writers' loops, then every sender they started,
		# wherever each one is in its work; only this test's senders
		# (their payload path is this test's own), never another run's
		kill -KILL "${pids[@]}" 2>/dev/null || true
		pkill -KILL -f "amp-send task_dispatch --task T-2026-10[0-9] .*--payload $BATS_TEST_TMPDIR/p/dispatch.json" || true
		wait || true
		# a killed writer may leave a lock; the next writer must get through
		run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
		assert_success
		git rev-parse --verify -q refs/amp/messages^{commit}
	done
	# every msg_id a sender printed (it exits 0 only after the ref holds it)
	cat "$BATS_TEST_TMPDIR"/ok.* | grep . > printed || true
	git ls-tree -r --name-only refs/amp/messages > tree
	while read -r id; do
		grep -q "\.msg\.$id\.json\$" tree || fail "acknowledged $id is missing"
	done < printed
	assert_fsck_clean
}
