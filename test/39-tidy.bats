#!/usr/bin/env bats
# Review findings (the i-tidy wave): what an `amp inbox` after a write
# reads and rewrites, and the helpers the findings folded.

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

@test "amp inbox after a write keeps the team's reports from the records it read: status.cache is neither rewritten nor made, and the coordinator sees the new progress" {
	send_dispatch
	amp claim "$T" --agent bob > /dev/null
	amp inbox coordinator > /dev/null
	# No listing ran: an inbox does not make amp status's cache.
	amp progress "$T" --percent 30 --note 'first pass' --agent bob > /dev/null
	run amp inbox coordinator --json
	assert_success
	echo "$output" | json_get '[(p["task_id"], p["agent"], p["percent"]) for p in d["progress"]]' > "$BATS_TEST_TMPDIR/progress"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/progress")" '[["'"$T"'", "bob", 30]]'
	[ ! -e .git/amp/status.cache ]
	# With a listing's cache in place, an inbox after a write leaves it
	# as it was (same file, same bytes).
	amp status > /dev/null
	cp .git/amp/status.cache "$BATS_TEST_TMPDIR/before"
	inode=$(stat -c %i .git/amp/status.cache)
	at 10
	amp progress "$T" --percent 60 --agent bob > /dev/null
	run amp inbox coordinator --json
	assert_success
	echo "$output" | json_get '[p["percent"] for p in d["progress"]]' > "$BATS_TEST_TMPDIR/progress"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/progress")" "[60]"
	cmp .git/amp/status.cache "$BATS_TEST_TMPDIR/before"
	[ "$(stat -c %i .git/amp/status.cache)" = "$inode" ]
	# and the listing, which reads its cache, still sees the new report.
	run amp status
	assert_output --partial "progress bob 60%"
}

@test "amp inbox --all reads the team's reports from the records it reads, not from amp status's cache: status.cache is not made, and the progress is the same as without --all" {
	send_dispatch
	amp claim "$T" --agent bob > /dev/null
	amp progress "$T" --percent 40 --agent bob > /dev/null
	run amp inbox coordinator --all --json
	assert_success
	echo "$output" | json_get '[(p["task_id"], p["percent"]) for p in d["progress"]]' > "$BATS_TEST_TMPDIR/all"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/all")" '[["'"$T"'", 40]]'
	[ ! -e .git/amp/status.cache ]
	run amp inbox coordinator --json
	echo "$output" | json_get '[(p["task_id"], p["percent"]) for p in d["progress"]]' > "$BATS_TEST_TMPDIR/warm"
	cmp "$BATS_TEST_TMPDIR/all" "$BATS_TEST_TMPDIR/warm"
	[ ! -e .git/amp/status.cache ]
}

@test "a push to a hub in inbox mode raises the hub's .git/amp/join.wanted before it tries the join's lock, a join under way or not; the join that next looks takes the inbox and clears it" {
	load hub
	load clones
	clones_setup
	on a git config amp.syncPush inbox
	on a git config amp.syncId a1
	on a git config amp.syncRetries 1
	D=$(cd a && amp send task_dispatch --task T-2026-0101 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	# a join under way: this shell holds the join's lock
	mkdir -p "$HUB/amp"
	exec {held}>> "$HUB/amp/refs_amp-in.flock"
	flock "$held"
	run on a amp sync
	flock -u "$held"
	exec {held}>&-
	assert_output --partial "amp hook: left refs/amp-in/a1/messages to the join under way"
	[ -e "$HUB/amp/join.wanted" ]
	run -0 env -C "$HUB" amp hook post-receive < /dev/null
	assert_output --partial "amp hook: joined refs/amp-in/a1/messages into refs/amp/messages"
	[ ! -e "$HUB/amp/join.wanted" ]
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$D\.json$"
	# a push that finds no join under way joins its own inbox, and leaves
	# the flag cleared
	at 10
	(cd a && amp send task_dispatch --task T-2026-0102 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json") > /dev/null
	run -0 on a amp sync
	assert_output --partial "joined"
	[ ! -e "$HUB/amp/join.wanted" ]
}
