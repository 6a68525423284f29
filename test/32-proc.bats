#!/usr/bin/env bats
# A sync's processes and the hub's word to the clone (issue 32, item 3):
# the hub's post-receive marks an inbox it left to the join under way on
# refs/amp-joined/<id>/<name> ("left <tip>"), which the clone fetches, so
# the clone does not read the hook's prose; a join that refuses an inbox
# says why there, and the clone's sync says the hub's reason.  Clones a and
# b of a bare hub on the file system (clones.bash), a in inbox mode; the
# test holds the join's lock as a join under way does (clones.bash: hold).

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	clones_setup
	on a git config amp.syncPush inbox
	on a git config amp.syncId a1
	LOCK=$HUB/amp/refs_amp-in.flock
	HOLDER=
}

teardown() {
	let_go
	[ -z "${PROXY:-}" ] || { kill "$PROXY" 2> /dev/null; wait "$PROXY" 2> /dev/null; } || true
	stop_servers
	clones_teardown
}

@test "a push left to the join under way is marked on the hub (refs/amp-joined/<id>/messages: left <tip>), and the clone waits for that marker, not for the hook's words" {
	D=$(send a T-2026-0101)
	# a hub whose post-receive says nothing to the pusher (its stderr
	# dropped): only the marker tells the clone
	mv "$HUB/hooks/post-receive" "$HUB/hooks/post-receive.amp"
	printf '#!/bin/sh\nexec "%s" 2> /dev/null\n' "$HUB/hooks/post-receive.amp" > "$HUB/hooks/post-receive"
	chmod +x "$HUB/hooks/post-receive"
	on a git config amp.syncRetries 1
	hold
	run -0 on a amp sync --json
	refute_output --partial "amp hook: left"
	assert_output --regexp '"pending":true'
	assert_output --regexp '"refetched":1'
	tip=$(git -C a rev-parse refs/amp/messages)
	run -0 git -C "$HUB" cat-file -p refs/amp-joined/a1/messages
	assert_output "left $tip"
	# the clone's copy of the marker says the same
	run -0 git -C a cat-file -p refs/amp-sync-joined/origin/messages
	assert_output "left $tip"
	# the join under way, after it lets go, takes it and its marker says so
	let_go
	run -0 env -C "$HUB" amp hook post-receive < /dev/null
	assert_output --partial "amp hook: joined refs/amp-in/a1/messages into refs/amp/messages"
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$tip" ]
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$D\.json$"
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}

@test "a join that has marked an inbox joined or refused keeps its word: the hook's left marker does not replace it" {
	send a T-2026-0201 > /dev/null
	run -0 on a amp sync --json
	assert_output --regexp '"pending":false'
	tip=$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$tip" ]
	# the same tip pushed again (a second push of the same ref by hand,
	# the hook running while a join is under way): joined stays joined
	hold
	run -0 env -C "$HUB" amp hook post-receive <<< "0000000000000000000000000000000000000000 $tip refs/amp-in/a1/messages"
	assert_output --partial "amp hook: left refs/amp-in/a1/messages to the join under way"
	[ "$(git -C "$HUB" rev-parse refs/amp-joined/a1/messages)" = "$tip" ]
}

@test "a join that refuses an inbox says why on its marker, and the clone's sync says the hub's reason (exit 4, nothing lost)" {
	on a amp register --agent alice --role executor > /dev/null
	path=$(git -C a ls-tree -r --name-only refs/amp/messages | grep '/register-')
	# the hub holds another content at the same path (by hand, past the
	# hooks): a name that lies about its content, which no join takes
	git -C a cat-file blob "refs/amp/messages:$path" |
		sed 's/"timestamp"/"capabilities": ["go"], "timestamp"/' > forged.json
	blob=$(git -C "$HUB" hash-object -w "$BATS_TEST_TMPDIR/forged.json")
	before=$(git -C "$HUB" rev-parse refs/amp/messages)
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C "$HUB" read-tree refs/amp/messages
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C "$HUB" update-index --add --cacheinfo "100644,$blob,$path"
	tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C "$HUB" write-tree)
	git -C "$HUB" update-ref refs/amp/messages "$(git -C "$HUB" commit-tree "$tree" -p refs/amp/messages -m forged)"
	tip=$(git -C a rev-parse refs/amp/messages)
	run -3 on a amp sync
	assert_output --partial "amp hook: error: refs/amp-in/a1/messages: conflict: $path holds other content on each side (the inbox stays as it is)"
	run -0 git -C "$HUB" cat-file -p refs/amp-joined/a1/messages
	assert_output "refused $tip: conflict: $path holds other content on each side"
	# the admin takes the forged record back: the clone's own join is
	# clean now, and its inbox, still at the refused tip, is not taken
	# again; the clone says the hub's reason
	git -C "$HUB" update-ref refs/amp/messages "$before"
	run -4 on a amp sync
	assert_output --partial "amp sync: error: origin's join refused the push to its inbox: conflict: $path holds other content on each side; nothing lost: the local history stays on refs/amp/messages"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$tip" ]
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
	[ "$(git -C "$HUB" rev-parse refs/amp-in/a1/messages)" = "$tip" ]
}

# git_runs FILE: the git commands (trace2 "start" events of GIT_TRACE2_EVENT
# FILE: every git process, the clone's and the hub's), one a line, sorted.
git_runs() {
	python3 -c 'import json, os, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") != "start":
        continue
    a = e["argv"]
    name = os.path.basename(a[0])
    if name.startswith("git-"):
        print(name[4:])
        continue
    a = a[1:]
    while a and (a[0].startswith("--git-dir=") or a[0] == "-c"):
        a = a[2:] if a[0] == "-c" else a[1:]
    print(a[0])' "$1" | sort
}

@test "a hub's git gc --auto runs only when it has work: amp hook install --server turns receive-pack's off, and a sync in inbox mode runs 11 git processes in all (clone and hub), none of them gc" {
	run -0 git -C "$HUB" config receive.autogc
	assert_output false
	send a T-2026-0401 > /dev/null
	run -0 env GIT_TRACE2_EVENT="$BATS_TEST_TMPDIR/trace" sh -c 'cd a && amp sync --json'
	assert_output --regexp '"pending":false'
	# the clone: push (pack-objects), fetch (unpack-objects, rev-list);
	# the hub: receive-pack (unpack-objects, rev-list, for-each-ref),
	# upload-pack (pack-objects) -- no gc
	run -0 git_runs "$BATS_TEST_TMPDIR/trace"
	assert_output "fetch
for-each-ref
pack-objects
pack-objects
push
receive-pack
rev-list
rev-list
unpack-objects
unpack-objects
upload-pack"
	refute_output --partial gc
}

@test "the hub's post-receive runs git gc --auto when git would find work: more packs than gc.autoPackLimit are packed into one" {
	# receive-pack's own gc off (as amp hook install --server sets it):
	# only the hook can pack
	git -C "$HUB" config receive.autogc false
	git -C "$HUB" config gc.autoPackLimit 2
	git -C "$HUB" config gc.autoDetach false
	# every push kept as a pack
	git -C "$HUB" config receive.unpackLimit 1
	for t in T-2026-0501 T-2026-0502; do
		send a "$t" > /dev/null
		on a amp sync > /dev/null
	done
	packs=$(ls "$HUB"/objects/pack/*.pack | wc -l)
	[ "$packs" -le 2 ]
	send a T-2026-0503 > /dev/null
	on a amp sync > /dev/null
	[ "$(ls "$HUB"/objects/pack/*.pack | wc -l)" = 1 ]
	git -C "$HUB" fsck --no-dangling
	run -0 git -C "$HUB" rev-list --count refs/amp/messages
	[ "$output" -ge 4 ]
}

# reset_proxy N: a TCP proxy on a free loopback port in front of $URL's git
# daemon that reads the first N connections' request and resets them (RST,
# as the kernel resets what git daemon's listen queue has no room for),
# then relays every other; sets PROXY_URL, PROXY (its pid), and counts the
# resets in $BATS_TEST_TMPDIR/resets.
reset_proxy() {
	local port
	port=$(free_port)
	python3 -c '
import socket, struct, sys, threading
n, port, back = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
count = sys.argv[4]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(64)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
resets = 0
while True:
    c, _ = ls.accept()
    if resets < n:
        c.recv(65536)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        resets += 1
        open(count, "w").write(str(resets))
        continue
    s = socket.create_connection(("127.0.0.1", back))
    threading.Thread(target=pipe, args=(c, s), daemon=True).start()
    threading.Thread(target=pipe, args=(s, c), daemon=True).start()
' "$1" "$port" "$PORT" "$BATS_TEST_TMPDIR/resets" > /dev/null 2>&1 3>&- &
	PROXY=$!
	PROXY_URL=git://127.0.0.1:$port/hub.git
	until python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$port" 2> /dev/null; do sleep 0.05; done
}

@test "a fetch or push the server resets (git daemon with more clones at once than its listen queue) is tried again, as a race is, within amp.syncRetries" {
	HUB_BASE=$BATS_TEST_TMPDIR
	start_daemon --max-connections=0
	D=$(send a T-2026-0601)
	# the first two connections reset: the push, then the fetch
	reset_proxy 2
	on a git remote set-url origin "$PROXY_URL"
	run -0 on a amp sync --json
	assert_output --partial "Connection reset by peer"
	assert_output --regexp '"pending":false'
	[ "$(cat "$BATS_TEST_TMPDIR/resets")" = 2 ]
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$D\.json$"
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	# more resets than amp.syncRetries: exit 4, nothing changed
	kill "$PROXY"
	wait "$PROXY" 2> /dev/null || true
	send a T-2026-0602 > /dev/null
	reset_proxy 10
	on a git remote set-url origin "$PROXY_URL"
	on a git config amp.syncRetries 2
	run -4 on a amp sync
	assert_output --regexp "amp sync: error: (git fetch from origin was reset 3 times|origin: the push was reset by the server 3 times)"
}
