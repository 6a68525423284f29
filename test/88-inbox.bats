#!/usr/bin/env bats
# git config amp.syncPush inbox (issue 10, many agents on one hub): a clone
# pushes, with force, to its own inbox on the hub, refs/amp-in/<id>/...,
# so no two clones race for one ref; the hub's post-receive hook joins the
# inbox into refs/amp/messages (every record checked again in its place,
# set aside when a rule refuses it), and one fetch brings the join back.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	clones_setup
	on a git config amp.syncPush inbox
	on b git config amp.syncPush inbox
}

teardown() {
	stop_servers
	clones_teardown
}

@test "two clones in inbox mode deliver to each other; the hub's history stays linear and passes amp fsck" {
	D=$(on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 on a amp sync --json
	assert_output --regexp '"push":true'
	assert_output --regexp '"pushed":1,'
	id=$(on a git config amp.syncId)
	[[ $id =~ ^[0-9a-f]{16}$ ]]
	run -0 git -C "$HUB" for-each-ref --format='%(refname)' "refs/amp-in/$id/"
	assert_output "refs/amp-in/$id/messages"
	run -0 on b amp sync
	assert_output --regexp '^fetched 1 record'
	at 5
	run -0 on b amp ack "$D" --from executor --sync
	run -0 on a amp sync
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	run -0 git -C "$HUB" rev-list --merges --count refs/amp/messages
	assert_output 0
	run -0 git -C "$HUB" log --format=%an refs/amp/messages
	assert_output "$(printf 'executor\ncoordinator\nsystem')"
	run -0 amp fsck --repo "$HUB"
	run -0 on a amp status $T --json
	assert_output --partial '"acked_at"'
}

@test "inbox mode over git daemon: 6 clones writing and syncing at once lose nothing and never race" {
	start_daemon
	local i j pids=""
	for i in 1 2 3 4 5 6; do
		git clone -q "$URL" "c$i" 2> /dev/null
		git -C "c$i" config amp.syncPush inbox
		(cd "c$i" && amp sync > /dev/null)
	done
	for i in 1 2 3 4 5 6; do
		(cd "c$i" && for j in 1 2 3 4 5; do
			amp send task_dispatch --task "T-2026-$i$((100 + j))" --from coordinator \
				--payload "$BATS_TEST_TMPDIR/p/dispatch.json" >> sent || exit 1
			amp sync --json >> syncs || exit 1
		done) &
		pids="$pids $!"
	done
	for i in $pids; do wait "$i"; done
	run -0 cat c*/syncs
	refute_output --regexp '"retries":[1-9]'
	for i in 1 2 3 4 5 6; do
		while read -r id; do
			git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$id\.json$"
		done < "c$i/sent"
	done
	[ "$(cat c*/sent | wc -l)" = 30 ]
	run -0 git -C "$HUB" rev-list --merges --count refs/amp/messages
	assert_output 0
}

@test "the hub's join sets aside the second verdict on one review_request, as a clone's join does" {
	cd a
	dispatch_acked
	at 10
	review_round 0
	amp sync > /dev/null
	cd ..
	on b amp sync > /dev/null
	at 100
	V1=$(on a amp verdict $T --decision approved --confidence 0.9 --from reviewer)
	at 101
	V2=$(on b amp verdict $T --decision approved --confidence 0.95 --from reviewer)
	run -0 on a amp sync
	# b pushes its verdict to its inbox first: the hub's join sets it aside
	run -0 on b amp sync
	assert_output --partial "1 set aside"
	run -0 on b amp status $T --json
	run -0 json_get '[d["subtasks"][0]["verdict"], [(s["id"], s["by"]) for s in d["superseded"]]]' <<< "$output"
	assert_output "[\"$V1\", [[\"$V2\", \"$V1\"]]]"
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}

@test "a record that is not well-formed is refused at the inbox, and the hub does not move" {
	before=$(git -C "$HUB" rev-parse refs/amp/messages)
	cd a
	plant "$(next_path $T junk-1 msg)" <<< 'not json'
	run -4 amp sync
	assert_output --partial "refused refs/amp-in/"
	assert_output --partial "invalid JSON"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
}

@test "amp.syncPush and amp.syncId are checked; a strict hub checks an inbox's commits as it checks a push: an unsigned one is refused" {
	on a git config amp.syncPush sideways
	run -2 on a amp sync
	assert_output --partial "git config amp.syncPush: 'sideways' is not ref or inbox"
	on a git config amp.syncPush inbox
	on a git config amp.syncId 'a b'
	run -2 on a amp sync
	assert_output --partial "git config amp.syncId: 'a b' is not [A-Za-z0-9_-]{1,64}"
	on a git config amp.syncId a1
	git -C "$HUB" config amp.requireSigned true
	: > "$BATS_TEST_TMPDIR/signers"
	git -C "$HUB" config amp.allowedSigners "$BATS_TEST_TMPDIR/signers"
	on a amp heartbeat $T --from coordinator 2> /dev/null || on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	unset AMP_NOW
	run -4 on a amp sync
	assert_output --partial "refused refs/amp-in/a1/messages: commit "
	assert_output --partial "written as coordinator, but it is not signed (git config amp.requireSigned)"
}

@test "an empty hub takes its first history through an inbox" {
	EMPTY=$BATS_TEST_TMPDIR/empty.git
	git init -q --bare "$EMPTY"
	amp hook install --server --repo "$EMPTY" > /dev/null
	git clone -q "$EMPTY" e 2> /dev/null
	on e git config amp.syncPush inbox
	on e amp init > /dev/null
	on e amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	run -0 on e amp sync
	[ "$(git -C e rev-parse refs/amp/messages)" = "$(git -C "$EMPTY" rev-parse refs/amp/messages)" ]
}

@test "an empty hub's first history through an inbox is checked whole: a rule broken there is refused" {
	EMPTY=$BATS_TEST_TMPDIR/empty.git
	git init -q --bare "$EMPTY"
	amp hook install --server --repo "$EMPTY" > /dev/null
	git clone -q "$EMPTY" e 2> /dev/null
	cd e
	git config amp.syncPush inbox
	amp init > /dev/null
	send_dispatch
	# a result before the dispatch's ACK, committed by hand
	R=task_result-$T-1772116400000
	python3 - "$R" "$T" "$D" "$BATS_TEST_TMPDIR/p/result.json" <<'PY' | plant "$(next_path $T "$R")"
import json, sys
r, t, d, payload = sys.argv[1:]
print(json.dumps({"msg_id": r, "protocol_version": "AMP/1.0", "type": "task_result", "from": "executor",
                  "to": "coordinator", "task_id": t, "timestamp": "2026-02-26T14:33:20+00:00",
                  "requires_ack": True, "ack_timeout_sec": 120, "context_ref": [d],
                  "payload": json.load(open(payload))}, indent=2))
PY
	run -4 amp sync
	assert_output --partial "refused refs/amp-in/"
	run -1 git -C "$EMPTY" rev-parse -q --verify refs/amp/messages
}

@test "the same msg_id with other content: the hub's join of the inbox gives b's record the next free millisecond, and b's next join agrees" {
	D=$(on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on a amp sync > /dev/null
	f=$(git -C a ls-tree -r --name-only refs/amp/messages | grep "msg.$D.json")
	# b holds the same msg_id with other content, by hand
	git -C a cat-file blob "refs/amp/messages:$f" | sed 's/Reconstruct/Rewrite/' > forged.json
	(cd b && blob=$(git hash-object -w ../forged.json) &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git read-tree refs/amp/messages &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git update-index --add --cacheinfo "100644,$blob,$f" &&
		tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git write-tree) &&
		git update-ref refs/amp/messages "$(git commit-tree "$tree" -p refs/amp/messages -m forged)")
	run -0 on b amp sync
	assert_output --partial "1 record replayed, 0 set aside"
	D2=task_dispatch-$T-$((${D##*-} + 1))
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "\.msg\.$D\.json$"
	assert_line --regexp "\.msg\.$D2\.json$"
	run -0 git -C "$HUB" log -1 --format=%B refs/amp/messages
	assert_output --partial "Amp-Renamed: message $D as $D2"
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}
