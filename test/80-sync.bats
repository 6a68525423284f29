#!/usr/bin/env bats
# amp sync (issue 10): one SSOT shared through real git remotes -- a bare
# hub reached as a plain path, and the same hub served by `git daemon` on
# loopback (started and stopped by the test, test/hub.bash).  Clones fetch into
# refs/amp-sync/<remote>/, join by replaying their own records onto the
# remote's tip, and push without force.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	make_repo # the work repository the dispatches name
	write_payloads
	at 0
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	git config --global init.defaultBranch main
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	stop_daemon
	clones_teardown
}

# clone URL NAME: a clone of the hub at $BATS_TEST_TMPDIR/NAME.
clone() {
	git clone -q "$1" "$BATS_TEST_TMPDIR/$2" 2> /dev/null
}

# dispatch NAME TASK: sends a dispatch for TASK from clone NAME; prints its id.
dispatch() {
	on "$1" amp send task_dispatch --task "$2" --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
}

# assert_same_records: clones a and b and the hub hold the same records,
# none twice, and at least $1 of them.
assert_same_records() {
	local a b h
	a=$(records "$BATS_TEST_TMPDIR/a")
	b=$(records "$BATS_TEST_TMPDIR/b")
	h=$(records "$HUB")
	[ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b"); return 1; }
	[ "$a" = "$h" ] || { diff <(echo "$a") <(echo "$h"); return 1; }
	[ -z "$(echo "$a" | uniq -d)" ]
	[ "$(echo "$a" | grep -c .)" -ge "$1" ]
	# and one seq per record in each task directory
	[ -z "$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages |
		sed -n 's#^\(tasks/.*/[0-9]\{6\}\)\..*#\1#p' | sort | uniq -d)" ]
}

# the_round_trip REMOTE: A sends, B syncs, ACKs and syncs, A syncs and
# sees the ACK.
the_round_trip() {
	clone "$1" a
	clone "$1" b
	on a amp init > /dev/null
	D=$(dispatch a $T)
	run -0 on a amp sync
	assert_output --regexp "^fetched 0 records, pushed 1 record to origin \([0-9a-f]{7}\)$"
	run -0 on b amp sync
	assert_output --regexp "^fetched 1 record \([0-9a-f]{7}\)$"
	run -0 on b amp inbox executor --json
	assert_output --partial "$D"
	run -0 on b amp ack "$D" --from executor
	run -0 on b amp sync --json
	assert_output --regexp '^\{"format":\{"name":"sync","version":1\},"remote":"origin","fetched":0,"replayed":0,"superseded":0,"pushed":1,"push":true,"tip":"[0-9a-f]{40}","retries":0,"errors_synced":true\}$'
	run -0 on a amp sync
	assert_output --regexp "^fetched 1 record \([0-9a-f]{7}\)$"
	run -0 on a amp status $T --json
	assert_output --partial '"acked_at"'
	run -0 on a amp sync
	assert_output --regexp "^up to date with origin \([0-9a-f]{7}\)$"
	# who wrote what, on every side
	run -0 git -C "$HUB" log --format=%an refs/amp/messages
	assert_output "$(printf 'executor\ncoordinator\nsystem')"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C b rev-parse refs/amp/messages)" ]
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	# the remote's refs were fetched beside local history, never over it
	run -0 git -C a for-each-ref --format='%(refname)' 'refs/amp-sync/'
	assert_output "$(printf 'refs/amp-sync/origin/errors\nrefs/amp-sync/origin/messages')"
}

@test "a message sent on one clone reaches another through a bare hub given as a path, and its ACK comes back" {
	the_round_trip "$HUB"
}

@test "a message sent on one clone reaches another through git daemon, and its ACK comes back" {
	start_daemon
	the_round_trip "$URL"
}

@test "clones that both wrote before syncing end with the union, in linear history, each commit's author kept" {
	start_daemon
	clone "$URL" a
	clone "$URL" b
	on a amp init > /dev/null
	on a amp sync > /dev/null
	on b amp sync > /dev/null
	D=$(dispatch a $T)
	E=$(dispatch b T-2026-045)
	on b amp ack "$E" --from executor > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --regexp '"fetched":1,"replayed":2,"superseded":0,"pushed":2,"push":true'
	run -0 on a amp sync
	assert_output --regexp "^fetched 2 records \([0-9a-f]{7}\)$"
	assert_same_records 3
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C b rev-parse refs/amp/messages)" ]
	# linear: no merge commit, one root
	[ "$(git -C "$HUB" rev-list --merges --count refs/amp/messages)" = 0 ]
	[ "$(git -C "$HUB" rev-list --max-parents=0 refs/amp/messages | wc -l)" = 1 ]
	# B's commits replayed with their author and author time; the
	# message (and its trailers) kept
	run -0 git -C "$HUB" log --format='%an|%at|%s' refs/amp/messages
	assert_line --index 0 "executor|$(git -C b log -1 --format=%at refs/amp/messages)|ack $E executor -> coordinator"
	assert_line --index 1 --regexp "^coordinator\|[0-9]+\|task_dispatch T-2026-045 coordinator -> executor$"
	assert_line --index 2 --regexp "^coordinator\|[0-9]+\|task_dispatch $T coordinator -> executor$"
	run -0 git -C "$HUB" log -1 --skip=1 --format=%B refs/amp/messages
	assert_output --partial "Amp-Msg-Id: $E"
	# the states amp reads are the same on both sides
	[ "$(on a amp status --json)" = "$(on b amp status --json)" ]
}

@test "two clones that each ran amp init before their first sync join" {
	clone "$HUB" a
	clone "$HUB" b
	on a amp init > /dev/null
	on b amp init > /dev/null
	D=$(dispatch a $T)
	E=$(dispatch b T-2026-045)
	run -0 on a amp sync
	run -0 on b amp sync
	assert_output --regexp "^fetched 1 record, replayed 1 local record onto origin, pushed 1 record to origin \([0-9a-f]{7}\)$"
	run -0 on a amp sync
	assert_same_records 2
	# B's own root was left behind: the joined history has A's
	[ "$(git -C "$HUB" rev-list --max-parents=0 refs/amp/messages | wc -l)" = 1 ]
	run -0 on b amp status T-2026-045 --json
	assert_output --partial '"state": "dispatched"'
}

@test "the same msg_id with different content on two clones: the join gives the local record the next free millisecond, nothing is lost, nothing escalated" {
	clone "$HUB" a
	clone "$HUB" b
	on a amp init > /dev/null
	on a amp sync > /dev/null
	on b amp sync > /dev/null
	D=$(dispatch a $T)
	f=$(git -C a ls-tree -r --name-only refs/amp/messages | grep "msg.$D.json")
	# B gets a record of the same msg_id with other content, by hand
	git -C a cat-file blob "refs/amp/messages:$f" | sed 's/Reconstruct/Rewrite/' > forged.json
	(cd b && GIT_COMMITTER_DATE=@1772116327 &&
		blob=$(git hash-object -w ../forged.json) &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git read-tree refs/amp/messages &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git update-index --add --cacheinfo "100644,$blob,$f" &&
		tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git write-tree) &&
		git update-ref refs/amp/messages "$(git commit-tree "$tree" -p refs/amp/messages -m forged)")
	run -0 on b amp sync
	run -0 on a amp sync
	D2=task_dispatch-$T-$((${D##*-} + 1))
	# the hub's record keeps the id; a's has the next millisecond
	run -0 git -C "$HUB" cat-file blob "refs/amp/messages:$f"
	assert_output --partial Rewrite
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "^$(cd a && task_path "$T")/([0-9]{2}/[0-9]{2}/)?[0-9]{6}\.msg\.$D2\.json$"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	run -0 on a escalations
	assert_output '[]'
}

@test "two clones syncing at the same time in a loop lose nothing" {
	start_daemon
	clone "$URL" a
	clone "$URL" b
	on a amp init > /dev/null
	on a amp sync > /dev/null
	on b amp sync > /dev/null
	local round pa pb
	for round in 1 2 3 4 5; do
		dispatch a "T-2026-1${round}1" > /dev/null
		dispatch b "T-2026-1${round}2" > /dev/null
		on a amp sync > "a.$round.out" 2>&1 &
		pa=$!
		on b amp sync > "b.$round.out" 2>&1 &
		pb=$!
		wait $pa || { cat "a.$round.out"; false; }
		wait $pb || { cat "b.$round.out"; false; }
	done
	on a amp sync > /dev/null
	on b amp sync > /dev/null
	on a amp sync > /dev/null
	assert_same_records 10
	[ "$(git -C "$HUB" rev-list --merges --count refs/amp/messages)" = 0 ]
}

@test "offline: sends succeed, amp sync fails with exit 4 naming the remote, and one sync delivers them all when the hub is back" {
	start_daemon
	clone "$URL" a
	clone "$URL" b
	on a amp init > /dev/null
	on a amp sync > /dev/null
	stop_daemon
	dispatch a $T > /dev/null
	dispatch a T-2026-045 > /dev/null
	dispatch a T-2026-046 > /dev/null
	before=$(git -C a rev-parse refs/amp/messages)
	run -4 on a amp sync
	assert_output --partial "amp sync: error: git fetch from origin failed"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$before" ]
	start_daemon
	run -0 on a amp sync
	assert_output --regexp "^fetched 0 records, pushed 3 records to origin \([0-9a-f]{7}\)$"
	run -0 on b amp sync
	assert_output --regexp "^fetched 3 records \([0-9a-f]{7}\)$"
	[ "$(records a)" = "$(records b)" ]
}

@test "a push that keeps losing the race is retried amp.syncRetries times, then exit 4 with nothing lost" {
	clone "$HUB" a
	clone "$HUB" b
	on a amp init > /dev/null
	on a amp sync > /dev/null
	on b amp sync > /dev/null
	# A git that lets clone B push a new message just before each push of
	# clone A: A always finds the hub moved.
	mkdir wrap
	cat > wrap/git <<SH
#!/bin/sh
case " \$* " in
*" push "*)
	n=\$(cat $BATS_TEST_TMPDIR/races 2> /dev/null || echo 0)
	n=\$((n + 1)); echo \$n > $BATS_TEST_TMPDIR/races
	(cd $BATS_TEST_TMPDIR/b && amp send task_dispatch --task T-2026-2\$(printf %02d \$n) --from coordinator \
		--to executor --payload $BATS_TEST_TMPDIR/p/dispatch.json > /dev/null &&
	 $(command -v git) push -q origin refs/amp/messages:refs/amp/messages) >&2 ;;
esac
exec $(command -v git) "\$@"
SH
	chmod +x wrap/git
	dispatch a $T > /dev/null
	on a git config amp.syncRetries 2
	run -4 env PATH="$BATS_TEST_TMPDIR/wrap:$PATH" bash -c "cd a && amp sync"
	assert_output --partial "amp sync: error: origin: the push was refused 3 times because others pushed first (amp.syncRetries)"
	[ "$(cat races)" = 3 ]
	# A holds its own record and the two it fetched
	run -0 records a
	assert_line --partial "msg.task_dispatch-$T-"
	assert_line --partial "msg.task_dispatch-T-2026-201-"
	assert_line --partial "msg.task_dispatch-T-2026-202-"
	# without the race, the next sync delivers
	run -0 on a amp sync --json
	assert_output --regexp '"retries":0'
	run -0 on b amp sync
	assert_same_records 4
}

@test "amp sync: usage errors and a bad amp.syncRetries exit 2" {
	clone "$HUB" a
	on a amp init > /dev/null
	run -2 on a amp sync --force
	assert_line --index 0 "amp sync: error: unknown option '--force'"
	run -2 on a amp sync origin extra
	assert_line --index 0 "amp sync: error: unexpected argument 'extra'"
	run -2 on a amp sync -- -origin
	assert_line --index 0 "amp sync: error: '-origin' is not a remote"
	on a git config amp.syncRetries 0
	run -2 on a amp sync
	assert_output --partial "git config amp.syncRetries: 0 is out of range (1..100)"
	on a git config amp.syncRetries 101
	run -2 on a amp sync
	assert_output --partial "out of range (1..100)"
}

@test "amp sync takes git config amp.remote, and a remote given as a path gets its own mirror" {
	clone "$HUB" a
	on a amp init > /dev/null
	on a git remote add hub "$HUB"
	on a git remote set-url origin /nonexistent
	on a git config amp.remote hub
	run -0 on a amp sync
	assert_output --regexp "pushed 0 records to hub"
	git -C a rev-parse -q --verify refs/amp-sync/hub/messages
	run -0 on a amp sync "$HUB"
	run -0 git -C a for-each-ref --format='%(refname)' 'refs/amp-sync/url-*/messages'
	assert_output --regexp '^refs/amp-sync/url-[0-9a-f]{16}/messages$'
	run -4 on a amp sync origin
	assert_output --partial "git fetch from origin failed"
}
