#!/usr/bin/env bats
# amp status without a task reads each task's summary from a cache keyed by
# the task directory's tree (issue 12, cached reads): what it prints must be
# what reading every record prints, whatever the time, the records or the
# settings, and damage still shows.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	send_dispatch
	amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
}

cache=.git/amp/status.json

# uncached: amp status --json with no cache, the cache it writes removed.
uncached() {
	rm -f "$cache"
	amp status --json
	rm -f "$cache"
}

@test "the cached listing is the listing read from the records, as time passes" {
	expected=$(uncached)
	run -0 amp status --json
	assert_output "$expected"
	assert_file_exists "$cache"
	# from the cache now: the same
	run -0 amp status --json
	assert_output "$expected"
	assert_output --partial '"acks_pending": 1'
	# later: the dispatches' ACKs are overdue, counted from the cached deadlines
	at 400
	expected=$(uncached)
	amp status --json > /dev/null
	run -0 amp status --json
	assert_output "$expected"
	assert_output --partial '"acks_overdue": 1'
	refute_output --partial '"acks_pending": 1'
}

@test "a new record in a task, or another setting, is read again; the other tasks come from the cache" {
	amp status --json > /dev/null
	at 5
	amp ack "$D" --from executor > /dev/null
	expected=$(uncached)
	amp status --json > /dev/null
	run -0 amp status --json
	assert_output "$expected"
	run -0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sorted(d["tasks"]))' "$cache"
	assert_output "['T-2026-044', 'T-2026-045']"
	# a setting the states depend on makes a new cache
	git config amp.approvalRequired "low medium high"
	expected=$(uncached)
	amp status --json > /dev/null
	run -0 amp status --json
	assert_output "$expected"
	assert_output --partial '"state": "awaiting_approval"'
}

@test "a cache that is not JSON, or not amp's, is rebuilt" {
	expected=$(uncached)
	echo 'not json' > "$cache"
	run -0 amp status --json
	assert_output "$expected"
	echo '{"policy": "1 3 4 300000", "tasks": {"T-2026-044": {"tree": "x", "summary": 1, "deadlines": 2}}}' > "$cache"
	run -0 amp status --json
	assert_output "$expected"
}

@test "a task directory whose tree is gone is still reported unreadable, cache or not" {
	amp status --json > /dev/null
	tree=$(git rev-parse "refs/amp/messages:tasks/2026/0/T-2026-045")
	rm -f ".git/objects/${tree:0:2}/${tree:2}"
	run -4 amp status --json
	assert_output --partial '"state": "unreadable"'
	assert_output --partial 'T-2026-044'
}
