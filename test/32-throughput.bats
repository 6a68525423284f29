#!/usr/bin/env bats
# A hub that keeps up (issue 32, item 3): amp sync runs its git calls over
# one ssh connection kept open (OpenSSH's ControlMaster, git config
# amp.sshControl) where the user's ssh allows it, never over what the user
# set up themselves; and an inbox-mode hub joins concurrent pushes, each
# once, losing nothing.  A real sshd on loopback (test/hub.bash) whose log
# says how many logins there were.  No timing is asserted: the speed is
# make bench-hub's (share/bench-hub.sh).

bats_require_minimum_version 1.5.0

load helpers
load hub

setup() {
	export AMP_NOW=2026-03-01T00:00:00+00:00
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	git config --global init.defaultBranch main
	# a short directory: ssh's socket paths are short (sync_ssh.c)
	S=$(mktemp -d /tmp/amp32t.XXXXXX)
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	amp hook install --server --repo "$HUB" > /dev/null
	cat > "$BATS_TEST_TMPDIR/d.json" <<'JSON'
{"description": "d", "repo": "/srv/x", "branch": "feature/x",
 "subtasks": [{"subtask_id": "S1", "description": "s", "estimated_lines": 1}],
 "acceptance_criteria": ["ok"], "risk_level": "low"}
JSON
}

teardown() {
	local m
	# the masters amp's syncs (and the user's ssh) left running
	for m in "$S"/*/.git/amp/ssh/* "$S"/user-* "${XDG_RUNTIME_DIR:-/nonexistent}"/amp-ssh-*/*; do
		[ -S "$m" ] && ssh -o ControlPath="$m" -O exit x 2> /dev/null
	done
	cd / || return 1
	stop_servers
	rm -rf "$S" "${XDG_RUNTIME_DIR:-/nonexistent}"
	fsck_all_repos
}

# logins: how many logins sshd took so far (LogLevel INFO).
logins() { grep -c 'Accepted publickey' "$HUB_BASE/sshd/log" || true; }

# clone NAME: a clone of the hub at $S/NAME, pointed at the sshd, with
# amp's SSOT; amp init is the first clone's.
clone() {
	git clone -q "$HUB" "$S/$1" 2> /dev/null
	git -C "$S/$1" remote set-url origin "$SSH_URL"
	git -C "$S/$1" config amp.checkRepo false
	[ -n "$(git -C "$HUB" for-each-ref refs/amp/messages)" ] || (cd "$S/$1" && amp init > /dev/null && amp sync > /dev/null)
}

# send_sync NAME N: in clone NAME, a dispatch of task T-2026-N then amp sync.
send_sync() {
	(cd "$S/$1" && amp send task_dispatch --task "T-2026-$2" --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/d.json" > /dev/null && amp sync > /dev/null)
}

# user_ssh [OPTION...]: the user's own `ssh` first on PATH: OpenSSH with
# the user's ssh_config (the test's key, and OPTIONs), as ~/.ssh/config
# would be; GIT_SSH_COMMAND unset, so git runs plain `ssh`.
user_ssh() {
	local d=$HUB_BASE/sshd o
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	{
		echo "IdentityFile $d/user_key"
		printf '%s\n' IdentitiesOnly\ yes BatchMode\ yes StrictHostKeyChecking\ no \
			UserKnownHostsFile\ /dev/null LogLevel\ ERROR SendEnv\ AMP_NOW
		for o in "$@"; do echo "$o"; done
	} > "$BATS_TEST_TMPDIR/ssh_config"
	printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$BATS_TEST_TMPDIR/ssh_config" > "$BATS_TEST_TMPDIR/bin/ssh"
	chmod +x "$BATS_TEST_TMPDIR/bin/ssh"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH
	unset GIT_SSH_COMMAND
}

@test "amp.sshControl true: two syncs with a message each run their git fetches and pushes over one ssh login, the master's socket in the clone's private .git/amp/ssh" {
	HUB_SSHD_LOGLEVEL=INFO start_sshd
	clone a
	git -C "$S/a" config amp.sshControl true
	before=$(logins)
	send_sync a 001
	send_sync a 002
	# one login for both syncs (each a fetch and a push at least)
	[ "$(logins)" = $((before + 1)) ]
	[ "$(stat -c '%a %u' "$S/a/.git/amp/ssh")" = "700 $(id -u)" ]
	run -0 find "$S/a/.git/amp/ssh" -type s
	[ "${#lines[@]}" = 1 ]
	ssh -o ControlPath="${lines[0]}" -O check x
	# and what was sent is on the hub
	[ "$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 2 ]
}

@test "amp.sshControl auto (the default): a plain ssh multiplexes; a user's GIT_SSH_COMMAND is left as it is, and a GIT_SSH program even with true: a login per git run" {
	start_sshd_info_user_ssh
	before=$(logins)
	clone a # amp init's sync
	send_sync a 001
	send_sync a 002
	[ "$(logins)" = $((before + 1)) ]
	run -0 find "$S/a/.git/amp/ssh" -type s
	[ "${#lines[@]}" = 1 ]
	# the user's own command: amp adds nothing to it
	ssh -o ControlPath="${lines[0]}" -O exit x 2> /dev/null
	rm -rf "$S/a/.git/amp/ssh"
	export GIT_SSH_COMMAND=$BATS_TEST_TMPDIR/bin/ssh
	before=$(logins)
	send_sync a 003
	[ "$(logins)" -ge $((before + 2)) ]
	[ ! -e "$S/a/.git/amp/ssh" ]
	# a GIT_SSH program, even with amp.sshControl true: amp adds nothing
	unset GIT_SSH_COMMAND
	git -C "$S/a" config amp.sshControl true
	before=$(logins)
	GIT_SSH=$BATS_TEST_TMPDIR/bin/ssh send_sync a 005
	[ "$(logins)" -ge $((before + 2)) ]
	[ ! -e "$S/a/.git/amp/ssh" ]
	# amp.sshControl false: not even a plain ssh
	git -C "$S/a" config amp.sshControl false
	before=$(logins)
	send_sync a 004
	[ "$(logins)" -ge $((before + 2)) ]
	[ ! -e "$S/a/.git/amp/ssh" ]
}

# start_sshd_info_user_ssh [OPTION...]: the sshd, logging logins, and the
# user's ssh (user_ssh OPTION...).
start_sshd_info_user_ssh() {
	HUB_SSHD_LOGLEVEL=INFO start_sshd
	user_ssh "$@"
}

@test "a user's ssh_config that multiplexes is respected: its ControlPath is the one used, amp makes none, even with amp.sshControl true" {
	start_sshd_info_user_ssh "ControlMaster auto" "ControlPath $S/user-%C" "ControlPersist 30"
	clone a
	git -C "$S/a" config amp.sshControl true
	send_sync a 001
	run -0 find "$S" -maxdepth 1 -name 'user-*' -type s
	[ "${#lines[@]}" = 1 ]
	[ ! -e "$S/a/.git/amp/ssh" ]
	# a GIT_SSH_COMMAND that names its own ControlPath: the same
	user_ssh
	export GIT_SSH_COMMAND="$BATS_TEST_TMPDIR/bin/ssh -o ControlMaster=auto -o ControlPath=$S/user2-%C -o ControlPersist=30"
	send_sync a 002
	run -0 find "$S" -maxdepth 1 -name 'user2-*' -type s
	[ "${#lines[@]}" = 1 ]
	[ ! -e "$S/a/.git/amp/ssh" ]
	for m in "$S"/user2-*; do ssh -o ControlPath="$m" -O exit x 2> /dev/null; done
}

@test "a clone whose path is too long for a socket puts it in a private runtime directory, XDG_RUNTIME_DIR/amp-ssh-<uid> (mode 0700), named by a hash of the clone; a path with a blank gets none" {
	HUB_SSHD_LOGLEVEL=INFO start_sshd
	long=deep/$(printf 'd%.0s' $(seq 60))
	mkdir -p "$S/$long"
	clone "$long/a"
	XDG_RUNTIME_DIR=$(mktemp -d /tmp/r.XXXXXX)
	export XDG_RUNTIME_DIR
	git -C "$S/$long/a" config amp.sshControl true
	before=$(logins)
	send_sync "$long/a" 001
	send_sync "$long/a" 002
	[ "$(logins)" = $((before + 1)) ]
	[ ! -e "$S/$long/a/.git/amp/ssh" ]
	[ "$(stat -c '%a %u' "$XDG_RUNTIME_DIR/amp-ssh-$(id -u)")" = "700 $(id -u)" ]
	run -0 find "$XDG_RUNTIME_DIR/amp-ssh-$(id -u)" -type s
	[ "${#lines[@]}" = 1 ]
	[[ "${lines[0]##*/}" =~ ^[0-9a-f]{16}-[0-9a-f]{40}$ ]]
	# a socket directory someone else could enter is made private again
	chmod 755 "$XDG_RUNTIME_DIR/amp-ssh-$(id -u)"
	send_sync "$long/a" 003
	[ "$(stat -c '%a' "$XDG_RUNTIME_DIR/amp-ssh-$(id -u)")" = 700 ]
	# a clone whose path has a blank: no socket (ssh would split its
	# path), a login per git run, and the sync works
	clone "b c"
	git -C "$S/b c" fetch -q origin 'refs/amp/*:refs/amp/*'
	git -C "$S/b c" config amp.sshControl true
	before=$(logins)
	send_sync "b c" 004
	[ "$(logins)" -ge $((before + 2)) ]
	[ ! -e "$S/b c/.git/amp/ssh" ]
}

@test "amp.sshControl other than auto, true or false is refused: exit 2, nothing fetched" {
	HUB_SSHD_LOGLEVEL=INFO start_sshd
	clone a
	git -C "$S/a" config amp.sshControl sometimes
	before=$(logins)
	cd "$S/a"
	run -2 amp sync
	assert_output --partial "amp.sshControl: 'sometimes' is not auto, true or false"
	[ "$(logins)" = "$before" ]
}

@test "eight clones pushing to an inbox-mode hub at once: every record is on the hub, each push's inbox is joined once (the hub's reflog), and with AMP_TRACE the hook says how long each join waited for the others and took" {
	git -C "$HUB" config core.logAllRefUpdates always
	AMP_TRACE=1 start_daemon
	for i in 1 2 3 4 5 6 7 8; do
		git clone -q "$HUB" "$S/c$i" 2> /dev/null
		git -C "$S/c$i" remote set-url origin "$URL"
		git -C "$S/c$i" config amp.checkRepo false
		[ "$i" != 1 ] || (cd "$S/c1" && amp init > /dev/null && amp sync > /dev/null)
		git -C "$S/c$i" config amp.syncPush inbox
	done
	for i in 2 3 4 5 6 7 8; do git -C "$S/c$i" fetch -q origin 'refs/amp/*:refs/amp/*'; done
	for i in 1 2 3 4 5 6 7 8; do
		(cd "$S/c$i" && amp send task_dispatch --task "T-2026-10$i" --from coordinator --to executor \
			--payload "$BATS_TEST_TMPDIR/d.json" > sent)
	done
	pids=""
	for i in 1 2 3 4 5 6 7 8; do
		(cd "$S/c$i" && amp sync > sync.out 2> sync.err; echo $? > sync.rc) &
		pids="$pids $!"
	done
	wait $pids
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(cat "$S/c$i/sync.rc")" = 0 ] || { cat "$S/c$i/sync.err"; false; }
		# its hook joined (its own inbox, and those left to it), or
		# left its inbox to the join under way (test/32-join.bats)
		grep -Eq "^remote: amp hook: (trace: join of refs/amp-in/[0-9a-f]{16}/messages: waited_ms=[0-9]+ joined_ms=[0-9]+|left refs/amp-in/[0-9a-f]{16}/messages to the join under way) *$" "$S/c$i/sync.err" ||
			{ cat "$S/c$i/sync.err"; false; }
		id=$(cat "$S/c$i/sent")
		git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.$id\.json$"
	done
	[ "$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 8 ]
	# no inbox's join traced twice, by whichever hook took it (a join
	# that went on detached traces to /dev/null)
	run -0 sh -c "cat '$S'/c*/sync.err | grep -Eo 'trace: join of refs/amp-in/[0-9a-f]{16}/messages:' | sort | uniq -d"
	assert_output ""
	# each inbox's tip joined once: one "amp hook: joined <oid>" per push
	run -0 git -C "$HUB" reflog show --format=%gs refs/amp/messages
	joined=$(printf '%s\n' "${lines[@]}" | sed -n 's/^amp hook: joined //p')
	[ "$(echo "$joined" | wc -l)" = 8 ]
	[ "$(echo "$joined" | sort -u | wc -l)" = 8 ]
}
