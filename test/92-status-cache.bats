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

cache=.git/amp/status.cache

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
	run -0 bash -c "tail -n +2 '$cache' | cut -f1 | sort | paste -sd' '"
	assert_output "T-2026-044 T-2026-045"
	# a setting the states depend on makes a new cache
	git config amp.approvalRequired "low medium high"
	expected=$(uncached)
	amp status --json > /dev/null
	run -0 amp status --json
	assert_output "$expected"
	assert_output --partial '"state": "awaiting_approval"'
}

@test "a cache that is not amp's, damaged, cut short or lying about a tree is rebuilt, line by line" {
	expected=$(uncached)
	echo 'not a cache' > "$cache"
	run -0 amp status --json
	assert_output "$expected"
	# the JSON cache of before, and a cache of another policy
	echo '{"policy": "3 4 300000", "tasks": {"T-2026-044": {"tree": "x", "summary": 1, "deadlines": 2}}}' > "$cache"
	run -0 amp status --json
	assert_output "$expected"
	sed -i '1s/\t.*/\t9 9 9/' "$cache"
	run -0 amp status --json
	assert_output "$expected"
	head -n 1 "$cache" | grep -q $'\t3 4 300000$'
	# a line claiming the current tree with a wrong state and counts is
	# believed (the tree is the key: that is the contract), so the lines
	# below keep the tree and break the form instead
	amp status --json > /dev/null
	local t44 good
	good=$(cat "$cache")
	t44=$(grep "^T-2026-044"$'\t' "$cache")
	for bad in "${t44//dispatched/DISPATCHED}" "${t44/$'\t'0$'\t'/$'\t'x$'\t'}" \
		"$(cut -f1-11 <<< "$t44")" "${t44}"$'\textra' "${t44/$'\ts'/$'\tq'}" \
		"${t44/T-2026-044/T-2026-044\\q}"; do
		{ head -n 1 <<< "$good"; printf '%s\n' "$bad"; grep -v "^T-2026-044"$'\t' <<< "$good" | tail -n +2; } > "$cache"
		run -0 amp status --json
		assert_output "$expected"
		# the line is written again as it should be
		grep -qx -- "$t44" "$cache"
	done
	# cut short in the middle of a line; then bytes flipped at random
	head -c 90 <<< "$good" > "$cache"
	run -0 amp status --json
	assert_output "$expected"
	printf '%s\n' "$good" | tr 'a-f' 'A-F' > "$cache"
	run -0 amp status --json
	assert_output "$expected"
}

@test "a fetched record whose timestamp holds a tab, a newline, a backslash or is no string is cached escaped, and listed the same from the cache" {
	local id ts
	for ts in '"2026-02-26T14:31:00\t+00:00\n\\x"' '{"x": [1, "\t"]}'; do
		id=task_result-T-2026-045-$((1772116300000 + ${#ts}))
		printf '{"protocol_version": "AMP/1.0", "msg_id": "%s", "type": "task_result", "from": "executor", "to": "coordinator", "task_id": "T-2026-045", "timestamp": %s, "requires_ack": false, "payload": {}}' \
			"$id" "$ts" | plant "$(next_path T-2026-045 "$id")"
		expected=$(uncached)
		amp status --json > /dev/null
		[ "$(wc -l < "$cache")" = 3 ] # the header and one line per task
		if [[ $ts == '"'* ]]; then
			grep -qF 's2026-02-26T14:31:00\x09+00:00\x0a\\x' "$cache"
		fi
		run -0 amp status --json
		assert_output "$expected"
	done
	grep -qF $'\tj{"x":[1,"\\\\t"]}\t' "$cache"
	run -0 amp status --json
	assert_output --partial '"last_timestamp": {'
}

@test "a task directory whose tree is gone is still reported unreadable, cache or not" {
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a tree removed on purpose"
	amp status --json > /dev/null
	tree=$(git rev-parse "refs/amp/messages:$(task_path "T-2026-045")")
	loosen_objects
	rm ".git/objects/${tree:0:2}/${tree:2}"
	run -4 amp status --json
	assert_output --partial '"state": "unreadable"'
	assert_output --partial 'T-2026-044'
}

# human_from_json: the listing's lines as amp status prints them, rebuilt
# from amp status --json (state, messages, rejects, ACKs, unreadable).
human_from_json() {
	amp status --json | $PY -c '
import json, sys
for t in json.load(sys.stdin)["tasks"]:
    line = "%s %s %d msgs %d rejects" % (t["task_id"], t["state"], t["messages"], t["reject_count"])
    if t["acks_overdue"]: line += " ACK overdue"
    if t["acks_pending"]: line += " ACK pending"
    if t["unreadable"]: line += " %d unreadable" % t["unreadable"]
    print(line)'
}

@test "the human listing, printed from the brief summaries, says what --json says of every task, cached or not, as time passes" {
	# one task with its dispatch ACKed, one without
	amp ack "$(amp status T-2026-045 --json | json_get 'd["messages"][0]["msg_id"]')" --from executor > /dev/null
	for when in 10 400; do
		at $when
		for pass in uncached cached; do
			[ $pass = uncached ] && rm -f "$cache"
			expected=$(human_from_json)
			run -0 env NO_COLOR=1 amp status
			# the columns are padded: compare word by word, holders aside
			assert_equal "$(echo "$output" | sed 's/  held by.*//; s/  waits for.*//' | tr -s ' ')" "$expected"
		done
	done
	assert_output --partial "ACK overdue"
}

# finish_044: T-2026-044 through review to an approved verdict (sets V,
# not ACKed yet).
finish_044() {
	at 5; amp ack "$D" --from executor > /dev/null
	at 60; review_round 0
	at 100
	V=$(amp verdict "$T" --decision approved --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
}

@test "amp status lists the tasks not finished, --all every task: approved or aborted with no ACK awaited is finished" {
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a tree removed on purpose (the unreadable task)"
	finish_044
	# approved, but the verdict's ACK is still awaited: listed
	run -0 env NO_COLOR=1 amp status
	assert_line --regexp '^T-2026-044 +approved .*ACK pending'
	assert_line --regexp '^T-2026-045 +dispatched'
	refute_output --partial finished
	at 110; amp ack "$V" --from coordinator > /dev/null
	run -0 env NO_COLOR=1 amp status
	refute_output --partial T-2026-044
	assert_line --regexp '^T-2026-045 +dispatched'
	assert_line "and 1 finished task (amp status --all lists them)"
	[ "${#lines[@]}" = 2 ]
	run -0 env NO_COLOR=1 amp status --all
	assert_line --regexp '^T-2026-044 +approved'
	assert_line --regexp '^T-2026-045 +dispatched'
	[ "${#lines[@]}" = 2 ]
	# --json lists the same tasks as the text, with or without --all
	run -0 amp status --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = '["T-2026-045"]' ]
	run -0 amp status --all --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = '["T-2026-044", "T-2026-045"]' ]
	# aborted: its dispatch ACKed, nothing awaited
	amp ack "$(amp status T-2026-045 --json | json_get 'd["messages"][0]["msg_id"]')" --from executor > /dev/null
	amp abort T-2026-045 --reason "not needed" --from admin > /dev/null
	run -0 env NO_COLOR=1 amp status
	assert_output "no open tasks; 2 finished (amp status --all lists them)"
	run -0 amp status --json
	assert_output --partial '"tasks": []'
	run -0 env NO_COLOR=1 amp status --all
	assert_line --regexp '^T-2026-045 +aborted'
	# a finished task whose tree is lost: the default listing does not
	# read it, --all reports it
	tree=$(git rev-parse "refs/amp/messages:$(task_path "T-2026-044")")
	loosen_objects
	rm ".git/objects/${tree:0:2}/${tree:2}"
	run -0 env NO_COLOR=1 amp status
	assert_output "no open tasks; 2 finished (amp status --all lists them)"
	run -4 env NO_COLOR=1 amp status --all
	assert_line --regexp '^T-2026-044 +unreadable'
	# --all is about the listing
	run -2 amp status T-2026-044 --all
	assert_output --partial "amp status: error: --all lists every task: not with a task id"
}

shards=.git/amp/status.shards

@test "the shards file: a shard whose tree did not change is not read again; a new record, damage or another policy is read" {
	finish_044
	at 110; amp ack "$V" --from coordinator > /dev/null
	expected=$(amp status --all --json | json_get '[t["task_id"] for t in d["tasks"] if t["state"] != "approved"]')
	run -0 amp status
	# the shard of both tasks: tasks/2026/0 (layout 1), its key 2026/0
	key=$(dirname "$(task_path T-2026-045)")
	shard=$(git rev-parse "refs/amp/messages:$key")
	key=${key#tasks/}
	tree45=$(git rev-parse "refs/amp/messages:$(task_path "T-2026-045")")
	assert_file_exists "$shards"
	run -0 tail -n +2 "$shards"
	assert_output "$key"$'\t'"$shard"$'\t'"2"$'\t'"T-2026-045"$'\t'"$tree45"
	# believed while the shard's tree is the one it names (that is the
	# contract, as with the cache): a line that keeps the tree and drops
	# the open task hides it
	good=$(cat "$shards")
	printf '%s\n%s\n' "$(head -n 1 <<< "$good")" "$key"$'\t'"$shard"$'\t'"2" > "$shards"
	run -0 amp status
	assert_output "no open tasks; 2 finished (amp status --all lists them)"
	# a new record in the shard: its tree changes, it is read again
	at 120; amp heartbeat T-2026-045 --from executor > /dev/null
	run -0 amp status --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = "$expected" ]
	grep -q $'\tT-2026-045\t' "$shards"
	# lines that do not read back, a file of another policy or none: read
	good=$(cat "$shards")
	line=$(tail -n 1 <<< "$good")
	for bad in "${line/$'\t'2$'\t'/$'\t'x$'\t'}" "${line%$'\t'*}" "${line:0:20}" \
		"$line"$'\textra' "${line/T-2026-045/}"; do
		printf '%s\n%s\n' "$(head -n 1 <<< "$good")" "$bad" > "$shards"
		run -0 amp status --json
		[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = "$expected" ]
		[ "$(cat "$shards")" = "$good" ]
	done
	sed -i '1s/\t.*/\t9 9 9/' "$shards"
	run -0 amp status --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = "$expected" ]
	head -n 1 "$shards" | grep -q $'\t3 4 300000$'
	echo garbage > "$shards"
	run -0 amp status --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = "$expected" ]
	[ "$(cat "$shards")" = "$good" ]
	# another policy (the states depend on it): a file of its own
	git config amp.lockThreshold 5
	run -0 amp status --json
	[ "$(json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output")" = "$expected" ]
	head -n 1 "$shards" | grep -q $'\t5 4 300000$'
}
