#!/usr/bin/env bats
# The hub's join never makes a push wait for another's (issue 32, item 3):
# with amp.syncPush inbox, a push whose post-receive hook finds a join under
# way (its lock, $HUB/amp/refs_amp-in.flock, held) leaves its inbox to that
# join and returns at once; the join takes every pending inbox before it
# lets go, and says what it made of each in refs/amp-joined/<id>/<name>,
# which the clone's sync fetches: it fetches again (amp.syncRetries times)
# while its records are not joined, and says so when they are still not.
# Here the test holds the lock (a real flock, as a join under way does).

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
	on a git config amp.syncId a1
	on b git config amp.syncId b1
	LOCK=$HUB/amp/refs_amp-in.flock
	HOLDER=
}

teardown() {
	local m
	let_go
	for m in "${S:-/nonexistent}"/c/.git/amp/ssh/*; do
		[ -S "$m" ] && ssh -o ControlPath="$m" -O exit x 2> /dev/null
	done
	stop_servers
	[ -z "${S:-}" ] || rm -rf "$S"
	clones_teardown
}

# on_abs DIR CMD...: runs CMD in directory DIR.
on_abs() {
	local dir=$1
	shift
	(cd "$dir" && "$@")
}

# on_hub ID: the hub's messages ref holds the message ID.
on_hub() {
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$1\.json$"
}

# joined_count OID: how often the hub's reflog says it joined OID.
joined_count() {
	git -C "$HUB" reflog show --format=%gs refs/amp/messages | grep -c "^amp hook: joined $1" || true
}

@test "with a join under way, a push to an inbox returns at once: the sync says its records are not joined yet, and the join under way takes them" {
	git -C "$HUB" config core.logAllRefUpdates always
	D=$(send a T-2026-0101)
	before=$(git -C "$HUB" rev-parse refs/amp/messages)
	on a git config amp.syncRetries 2
	hold
	run -0 on a amp sync --json
	assert_output --partial "amp hook: left refs/amp-in/a1/messages to the join under way"
	assert_output --regexp '"pending":true'
	assert_output --regexp '"refetched":2'
	assert_output --regexp '"push":true'
	# the inbox holds a's records; the hub's ref did not move; the marker
	# says the push was left to the join under way
	tip=$(git -C a rev-parse refs/amp/messages)
	[ "$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)" = "$tip" ]
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
	run -0 git -C "$HUB" cat-file -p refs/amp-joined/a1/messages
	assert_output "left $tip"
	run -0 on a amp sync
	assert_output --regexp "^fetched 0 records, pushed 1 record to origin's inbox, not joined yet"
	# the join under way, after it lets go, looks again and takes it
	let_go
	run -0 env -C "$HUB" amp hook post-receive < /dev/null
	assert_output --partial "amp hook: joined refs/amp-in/a1/messages into refs/amp/messages"
	on_hub "$D"
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$tip" ]
	[ "$(joined_count "$tip")" = 1 ]
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	# a join with nothing pending takes nothing
	run -0 env -C "$HUB" amp hook post-receive < /dev/null
	refute_output --partial "joined"
}

@test "clones that pushed while a join ran all end delivered: the next join takes every pending inbox, each once" {
	git -C "$HUB" config core.logAllRefUpdates always
	git clone -q "$HUB" c 2> /dev/null
	on c git config amp.syncPush inbox
	on c git config amp.syncId c1
	on c amp sync > /dev/null
	on a git config amp.syncRetries 1
	on b git config amp.syncRetries 1
	A=$(send a T-2026-0201)
	B=$(send b T-2026-0202)
	C=$(send c T-2026-0203)
	hold
	run -0 on a amp sync
	assert_output --partial "not joined yet"
	run -0 on b amp sync
	assert_output --partial "not joined yet"
	ta=$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)
	tb=$(git -C "$HUB" rev-parse refs/amp-in/b1/messages)
	let_go
	# c's push finds no join under way: its hook's join takes all three
	run -0 on c amp sync
	refute_output --partial "not joined yet"
	tc=$(git -C "$HUB" rev-parse refs/amp-in/c1/messages)
	for id in "$A" "$B" "$C"; do on_hub "$id"; done
	for t in "$ta" "$tb" "$tc"; do [ "$(joined_count "$t")" = 1 ]; done
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$ta" ]
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/b1/messages)" = "$tb" ]
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
	run -0 on b amp sync --json
	assert_output --regexp '"pending":false'
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	run -0 git -C "$HUB" rev-list --merges --count refs/amp/messages
	assert_output 0
}

@test "a clone whose records are not joined yet fetches again, and ends delivered when the join under way takes them meanwhile" {
	D=$(send a T-2026-0301)
	hold
	# the clone's git: at its second fetch the join under way has let go
	# and taken the inbox (the holder ends, the hub's join runs)
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat > "$BATS_TEST_TMPDIR/bin/git" <<SH
#!/bin/sh
case " \$* " in *" fetch "*)
	n=\$(cat "$BATS_TEST_TMPDIR/fetches" 2> /dev/null || echo 0); n=\$((n + 1))
	echo \$n > "$BATS_TEST_TMPDIR/fetches"
	[ \$n != 2 ] || { kill $HOLDER; flock "$LOCK" true
		(cd "$HUB" && amp hook post-receive < /dev/null > "$BATS_TEST_TMPDIR/join.out" 2>&1); } ;;
esac
exec /usr/bin/git "\$@"
SH
	chmod +x "$BATS_TEST_TMPDIR/bin/git"
	run -0 env PATH="$BATS_TEST_TMPDIR/bin:$PATH" sh -c 'cd a && amp sync --json'
	assert_output --regexp '"pending":false'
	assert_output --regexp '"refetched":1'
	assert_output --regexp '"pushed":1'
	run -0 cat "$BATS_TEST_TMPDIR/join.out"
	assert_output --partial "amp hook: joined refs/amp-in/a1/messages into refs/amp/messages"
	on_hub "$D"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	HOLDER=
}

@test "nothing is lost when a join dies: one killed before it took the inbox, one killed after it joined but before its marker; the next join takes both, each joined once" {
	git -C "$HUB" config core.logAllRefUpdates always
	on a git config amp.syncRetries 1
	A=$(send a T-2026-0401)
	hold
	run -0 on a amp sync
	assert_output --partial "not joined yet"
	ta=$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)
	let_go KILL
	# b's inbox joined, and its marker lost: as a join killed between the
	# two leaves it
	B=$(send b T-2026-0402)
	run -0 on b amp sync
	tb=$(git -C "$HUB" rev-parse refs/amp-in/b1/messages)
	on_hub "$A"
	on_hub "$B"
	git -C "$HUB" update-ref -d refs/amp-joined/b1/messages
	git -C "$HUB" update-ref -d refs/amp-joined/a1/messages
	hub_tip=$(git -C "$HUB" rev-parse refs/amp/messages)
	run -0 env -C "$HUB" amp hook post-receive < /dev/null
	assert_output --partial "joined refs/amp-in/a1/messages"
	assert_output --partial "joined refs/amp-in/b1/messages"
	# taken again, nothing made twice: the hub's ref did not move
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$hub_tip" ]
	[ "$(joined_count "$ta")" = 1 ]
	[ "$(joined_count "$tb")" = 1 ]
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$ta" ]
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/b1/messages)" = "$tb" ]
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
	run -0 amp fsck --repo "$HUB"
}

@test "a join still finding inboxes pending after its first look goes on detached: the push that started it returns, and the detached join takes the rest" {
	git clone -q "$HUB" c 2> /dev/null
	on c git config amp.syncPush inbox
	on c git config amp.syncId c1
	on c amp sync > /dev/null
	on a git config amp.syncRetries 1
	A=$(send a T-2026-0601)
	C=$(send c T-2026-0602)
	# the ref's writers held: the join c's push starts waits in its first look
	hold "$HUB/amp/refs_amp_messages.flock"
	(cd c && amp sync > sync.out 2>&1; echo $? > sync.rc) &
	c_sync=$!
	for _ in $(seq 600); do flock -n "$LOCK" true || break; sleep 0.05; done
	run -0 on a amp sync
	assert_output --partial "amp hook: left refs/amp-in/a1/messages to the join under way"
	assert_output --partial "not joined yet"
	let_go
	wait "$c_sync"
	[ "$(cat c/sync.rc)" = 0 ]
	run -0 cat c/sync.out
	assert_output --partial "amp hook: joined refs/amp-in/c1/messages into refs/amp/messages"
	refute_output --partial "joined refs/amp-in/a1/messages"
	on_hub "$C"
	# the detached join, stdio on /dev/null, takes a's inbox (its marker
	# said "left" until then)
	for _ in $(seq 600); do
		[ "$(git -C "$HUB" rev-parse -q --verify refs/amp-joined/a1/messages)" != \
			"$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)" ] || break
		sleep 0.05
	done
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)" ]
	on_hub "$A"
	flock "$LOCK" true # the detached join has let go
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
}

@test "only the hub's join writes refs/amp-joined/: a clone's push there is refused" {
	tip=$(git -C a rev-parse refs/amp/messages)
	run -1 git -C a push origin "$tip:refs/amp-joined/b1/messages"
	assert_output --partial "only the hub's join writes refs/amp-joined/"
	run -1 git -C "$HUB" rev-parse -q --verify refs/amp-joined/b1/messages
}

@test "amp sync asks the user's ssh for its config (ssh -G) once for a hub, not at every sync; again once ~/.ssh/config changed, or ten minutes passed" {
	S=$(mktemp -d /tmp/amp32j.XXXXXX) # ssh's socket paths are short
	start_sshd
	git clone -q "$HUB" "$S/c" 2> /dev/null
	git -C "$S/c" remote set-url origin "$SSH_URL"
	git -C "$S/c" config amp.sshControl true
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\ncase " $* " in *" -G "*) echo G >> %s ;; esac\nexec /usr/bin/ssh "$@"\n' \
		"$BATS_TEST_TMPDIR/asked" > "$BATS_TEST_TMPDIR/bin/ssh"
	chmod +x "$BATS_TEST_TMPDIR/bin/ssh"
	GIT_SSH_COMMAND="$BATS_TEST_TMPDIR/bin/ssh ${GIT_SSH_COMMAND#ssh }"
	run -0 on_abs "$S/c" amp sync
	for n in 1 2 3; do
		send "$S/c" "T-2026-050$n" > /dev/null
		run -0 on_abs "$S/c" amp sync
	done
	[ "$(wc -l < "$BATS_TEST_TMPDIR/asked")" = 1 ]
	# the master amp made carries every sync
	run -0 find "$S/c/.git/amp/ssh" -type s
	[ "${#lines[@]}" = 1 ]
	mkdir -p "$HOME/.ssh"
	touch "$HOME/.ssh/config"
	run -0 on_abs "$S/c" amp sync
	[ "$(wc -l < "$BATS_TEST_TMPDIR/asked")" = 2 ]
	run -0 on_abs "$S/c" amp sync
	[ "$(wc -l < "$BATS_TEST_TMPDIR/asked")" = 2 ]
	rm "$HOME/.ssh/config"
	touch -d '-11 minutes' "$S/c/.git/amp"/ssh-G-*
	run -0 on_abs "$S/c" amp sync
	[ "$(wc -l < "$BATS_TEST_TMPDIR/asked")" = 3 ]
}
