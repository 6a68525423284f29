#!/usr/bin/env bats
# Issue 35, items 0 and 2: nothing reads history to answer a question about
# one record (the record index, <git dir>/amp/recindex/: which commit brought
# each record, kept up to date as the ref moves, rebuilt only when absent,
# checked against the commit it names), and first runs that do not replay
# the world.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# dispatch_by AGENT TASK: a dispatch into TASK written by instance AGENT;
# prints its msg_id.
dispatch_by() {
	amp send task_dispatch --task "$2" --from coordinator --to executor --agent "$1" \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
}

# drop_commits FROM TO: deletes the (loose) objects of the commits of the
# messages ref after FROM and before TO: a history whose middle is gone,
# which any walk from TO down to FROM fails to read.
drop_commits() {
	local c
	loosen_objects
	for c in $(git rev-list "$1..$2^"); do
		rm .git/objects/"${c:0:2}"/"${c:2}"
	done
	fsck_exempt .
}

@test "amp show names who wrote a message from the record index, reading no history: the commits between the message's and the tip are gone" {
	D=$(dispatch_by alice $T)
	C=$(git rev-parse refs/amp/messages)
	for i in 1 2 3 4 5; do
		at $((i * 60))
		N=$(dispatch_by bob T-2026-05$i)
	done
	# a first index reads the history down to the record asked only
	run -0 amp show "$N"
	assert_line "agent       bob"
	grep -q "^bottom $(git rev-parse refs/amp/messages^)\$" .git/amp/recindex/head
	run -0 amp show "$D"
	assert_line "agent       alice"
	grep -q "^bottom $(git rev-parse "$C^")\$" .git/amp/recindex/head
	drop_commits "$C" refs/amp/messages
	# the walk back from the tip cannot pass the gap: without the index
	# this fails
	run -0 amp show "$D"
	assert_line "agent       alice"
	assert_line "message     $D"
	# the index is there, beside the other derived files
	assert_file_exists .git/amp/recindex/head
}

@test "the record index follows the ref: a message sent after it was built is found by reading only the new commits" {
	D=$(dispatch_by alice $T)
	C=$(git rev-parse refs/amp/messages)
	for i in 1 2 3; do
		at $((i * 60))
		dispatch_by bob T-2026-05$i > /dev/null
	done
	run -0 amp show "$D"
	TIP=$(git rev-parse refs/amp/messages)
	drop_commits "$C" "$TIP"
	at 600
	M=$(dispatch_by carol T-2026-060)
	at 660
	amp ack "$D" --from executor --agent dave > /dev/null
	run -0 amp show "$M"
	assert_line "agent       carol"
	run -0 amp show "$D"
	assert_line "agent       alice"
	assert_line --partial "acked by executor"
	grep -q "^tip $(git rev-parse refs/amp/messages)\$" .git/amp/recindex/head
	# one run per update, merged as they grow: every entry stays found
	for k in $(seq 10 29); do
		at $((700 + k))
		ids[k]=$(dispatch_by "agent$k" T-2026-1$k)
		amp show "${ids[k]}" > /dev/null
	done
	[ "$(grep -c '^run ' .git/amp/recindex/head)" -le 6 ]
	# one entry per record of the SSOT, none lost in the merges
	[ "$(awk '/^run / { n += $3 } END { print n }' .git/amp/recindex/head)" = \
	  "$(git ls-tree -r --name-only refs/amp/messages tasks | wc -l)" ]
	for k in $(seq 10 29); do
		run -0 amp show "${ids[k]}"
		assert_line "agent       agent$k"
	done
	run -0 amp show "$M"
	assert_line "agent       carol"
}

@test "the record index is never trusted over the history: a rewritten ref, a deleted or damaged index" {
	at 0
	P=$(git rev-parse refs/amp/messages)
	D=$(dispatch_by alice $T)
	at 60
	dispatch_by bob T-2026-051 > /dev/null
	run -0 amp show "$D"
	assert_line "agent       alice"
	# The ref moved back and the same message written again by bob (same
	# AMP_NOW, same msg_id): the index's entry names alice's commit, which
	# still holds the record, but is no longer in the history.
	git update-ref refs/amp/messages "$P"
	at 0
	[ "$(dispatch_by bob $T)" = "$D" ]
	run -0 amp show "$D"
	assert_line "agent       bob"
	run -0 amp log --json --task $T
	# deleted: rebuilt from the history
	rm -rf .git/amp/recindex
	run -0 amp show "$D"
	assert_line "agent       bob"
	assert_file_exists .git/amp/recindex/head
	# damaged: every run file cut short, or the head not amp's
	for f in .git/amp/recindex/run-*; do
		head -c 10 "$f" > "$f.cut" && mv "$f.cut" "$f"
	done
	run -0 amp show "$D"
	assert_line "agent       bob"
	# the damaged index is dropped, and the next lookup starts it again
	assert_file_not_exists .git/amp/recindex/head
	run -0 amp show "$D"
	assert_line "agent       bob"
	assert_file_exists .git/amp/recindex/head
	# busy (another process updating it): the walk answers
	at 120
	X=$(dispatch_by carol T-2026-052)
	run -0 flock .git/amp/recindex/lock amp show "$X"
	assert_line "agent       carol"
	# what a killed update left goes once it is an hour old
	touch -d '2 hours ago' .git/amp/recindex/run-1.4242.tmp
	touch .git/amp/recindex/run-2.4243.tmp
	run -0 amp show "$X"
	assert_file_not_exists .git/amp/recindex/run-1.4242.tmp
	assert_file_exists .git/amp/recindex/run-2.4243.tmp
	echo garbage > .git/amp/recindex/head
	run -0 amp show "$D"
	assert_line "agent       bob"
	grep -q "^amp-recindex 1" .git/amp/recindex/head
}

@test "the record index over a history longer than its first walk: a rewritten ref marks the old side's records gone and keeps the rest" {
	git config amp.checkRepo false
	at 100000
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 1200 "$BATS_TEST_TMPDIR/old.jsonl" /dev/null 0 100
	amp import "$BATS_TEST_TMPDIR/old.jsonl" > /dev/null
	OLDEST=$(head -1 "$BATS_TEST_TMPDIR/old.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["msg_id"])')
	at 100100
	D=$(dispatch_by alice $T)
	at 100160
	dispatch_by alice T-2026-051 > /dev/null
	run -0 amp show "$OLDEST"
	# the history taken down to the first record: what is left is amp
	# init's commit, which holds none
	BOTTOM=$(grep "^bottom" .git/amp/recindex/head)
	[ "$BOTTOM" = "bottom $(git rev-list --max-parents=0 refs/amp/messages)" ]
	run -0 amp show "$D"
	assert_line "agent       alice"
	# the last two commits replaced by bob's: more than 1,024 commits below
	git update-ref refs/amp/messages refs/amp/messages~2
	at 100100
	[ "$(dispatch_by bob $T)" = "$D" ]
	run -0 amp show "$D"
	assert_line "agent       bob"
	# the old runs kept: the history was not walked again
	grep -qx "$BOTTOM" .git/amp/recindex/head
	[ "$(awk '/^run / { n += $3 } END { print n }' .git/amp/recindex/head)" -ge 1200 ]
	run -0 amp show "$OLDEST"
}

@test "a record past the size bound is read in one pass and never inflated: a 256 MiB blob of zeros, fetched, is unreadable by its size under a 200 MB address-space limit" {
	send_dispatch
	head -c 268435456 /dev/zero | plant "$(next_path $T task_result-$T-1772116400001)"
	run -0 bash -c "ulimit -v 200000 && amp status $T"
	assert_output --partial "unreadable record 000002.msg.task_result-$T-1772116400001.json: 268435456 bytes, more than the 1048576-byte message size limit"
	assert_output --partial "$D"
	run -0 bash -c "ulimit -v 200000 && amp show --json $D"
	run -4 bash -c "ulimit -v 200000 && amp show task_result-$T-1772116400001"
	assert_output --partial "268435456 bytes, more than the 1048576-byte message size limit"
}
