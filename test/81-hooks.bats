#!/usr/bin/env bats
# Issue 10: the hooks that guard a shared SSOT.  A bare hub with amp's
# pre-receive hook, reached as a path and through a real git daemon on
# loopback; a clone pushes refs/amp/* to it.  What breaks the SSOT's rules
# is refused with the commit, the file and the field, and the hub's refs
# stay as they were.

load helpers
load conversation
load enforcer

# the directory of the first records of T-2026-044, in the layout amp init writes
DIR=$(dirname "$(record_path T-2026-044 000001.x.json "$(init_layout)")")

setup() {
	make_ssot
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	amp hook install --server --repo "$HUB" > /dev/null
	git remote add hub "$HUB"
	git push -q hub 'refs/amp/*:refs/amp/*'
}

teardown() {
	if [ -n "${DAEMON_PID:-}" ]; then
		kill "$DAEMON_PID" 2> /dev/null || true
		wait "$DAEMON_PID" 2> /dev/null || true
	fi
	fsck_teardown
}

# hub_refs: the hub's amp refs and their ids, but the arrival notes its hook
# keeps.
hub_refs() {
	git -C "$HUB" for-each-ref --format='%(objectname) %(refname)' refs/amp/ |
		grep -v ' refs/amp/arrivals$' # the hook's own notes (32-arrival)
}

# push_refused [REMOTE] [REFSPEC]: pushes (to hub, refs/amp/*) and asserts
# git refused it and the hub's refs did not move; the output is in $output.
push_refused() {
	local before
	before=$(hub_refs)
	run git push "${1:-hub}" "${2:-refs/amp/*:refs/amp/*}"
	assert_failure
	assert_equal "$(hub_refs)" "$before"
}

# push_accepted [REMOTE]: pushes and asserts the hub holds the clone's refs.
push_accepted() {
	run git push "${1:-hub}" 'refs/amp/*:refs/amp/*'
	assert_success
	assert_equal "$(hub_refs)" "$(git for-each-ref --format='%(objectname) %(refname)' refs/amp/)"
}

# plant_msg TYPE FROM TO PAYLOAD_FILE [CONTEXT_REF]: commits a message by hand
# (as a fetch brings one), dated AMP_NOW; sets M to its msg_id and P to its
# path.  PAYLOAD_FILE is JSON; "branch=main" style edits follow as
# PLANT_EDIT (python statements on p).
plant_msg() {
	M=$1-$T-$(($(date -u -d "$AMP_NOW" +%s) * 1000))
	P=$(next_path $T "$M")
	$PY - "$M" "$1" "$2" "$3" "$T" "$AMP_NOW" "$4" "${5:-}" "${PLANT_EDIT:-pass}" <<'PY' | plant "$P"
import json, sys
m, t, f, to, task, now, payload, ctx, edit = sys.argv[1:]
p = json.load(open(payload))
exec(edit)
d = {"msg_id": m, "protocol_version": "AMP/1.0", "type": t, "from": f, "to": to,
     "task_id": task, "timestamp": now, "requires_ack": True, "ack_timeout_sec": 300}
if ctx:
    d["context_ref"] = [ctx]
d["payload"] = p
print(json.dumps(d, indent=2))
PY
}

# short ID: the abbreviated commit id the hook prints.
short() {
	git rev-parse --short=7 "$1"
}

@test "the hub's pre-receive hook accepts a whole conversation pushed by a clone" {
	dispatch_acked
	at 60; review_round 0
	at 120; amp verdict $T --decision approved --confidence 0.95 --from reviewer --payload "$BATS_TEST_TMPDIR/p/verdict.json" > /dev/null
	push_accepted
	assert_equal "$(git -C "$HUB" rev-list --count refs/amp/messages)" "$(commit_count)"
	# and what came later fast-forwards
	at 140; amp heartbeat $T --from executor > /dev/null
	push_accepted
}

@test "a message that is not schema-valid is refused, naming commit, file and field" {
	send_dispatch
	at 1; PLANT_EDIT='p["risk_level"] = "extreme"' plant_msg task_dispatch coordinator executor "$BATS_TEST_TMPDIR/p/dispatch.json"
	push_refused
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $P: /payload/risk_level:"
	assert_output --partial "pre-receive hook declined"
	# the dispatch before it was in the same push: nothing landed
	run git -C "$HUB" cat-file -e "refs/amp/messages:$DIR"
	assert_failure
}

@test "a dispatch to main is refused with the Branch Validation reason" {
	at 1
	PLANT_EDIT='p["branch"] = "main"' plant_msg task_dispatch coordinator executor "$BATS_TEST_TMPDIR/p/dispatch.json"
	push_refused
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $P: /payload/branch: must not be \"main\": a protected branch (AMP/1.0 Branch Validation)"
}

@test "a commit that modifies a record already in the SSOT is refused" {
	dispatch_acked
	push_accepted
	f=$(git ls-tree --name-only -r refs/amp/messages "$DIR/" | head -1)
	git show "refs/amp/messages:$f" | sed 's/feature\/watch-breath-v2/feature\/other/' | plant "$f"
	push_refused
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $f: modifies a file: the SSOT only appends"
}

@test "a commit that deletes a record is refused" {
	dispatch_acked
	push_accepted
	f=$(git ls-tree --name-only -r refs/amp/messages "$DIR/" | tail -1)
	idx=$BATS_TEST_TMPDIR/del.idx
	GIT_INDEX_FILE=$idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$idx git update-index --force-remove "$f"
	c=$(git commit-tree "$(GIT_INDEX_FILE=$idx git write-tree)" -p refs/amp/messages -m "drop $f")
	git update-ref refs/amp/messages "$c"
	push_refused
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short $c): $f: deletes a file: the SSOT only appends"
}

@test "a forced non-fast-forward push is refused" {
	dispatch_acked
	push_accepted
	# rewrite history: drop the ACK, send something else in its place
	git update-ref refs/amp/messages refs/amp/messages~1
	at 10; amp heartbeat $T --from coordinator > /dev/null
	push_refused hub '+refs/amp/*:refs/amp/*'
	assert_output --regexp "amp hook: refused refs/amp/messages: not a fast-forward of [0-9a-f]{12}: the SSOT is append-only"
}

@test "deleting refs/amp/messages on the hub is refused" {
	push_refused hub :refs/amp/messages
	assert_output --partial "amp hook: refused refs/amp/messages: deleting it is refused: the SSOT is append-only"
	run git -C "$HUB" rev-parse --verify -q refs/amp/messages
	assert_success
}

@test "a record that is not JSON, or not a record name, is refused" {
	send_dispatch
	echo 'not json {' | plant "$DIR/000002.msg.task_result-$T-1772116330000.json"
	push_refused
	assert_output --partial "commit $(short refs/amp/messages): $DIR/000002.msg.task_result-$T-1772116330000.json: "
	assert_output --partial "JSON"
	git update-ref refs/amp/messages refs/amp/messages~1
	echo '{}' | plant "$DIR/notes.txt"
	push_refused
	assert_output --partial "commit $(short refs/amp/messages): $DIR/notes.txt: not a record in its task's directory"
}

@test "a record whose file name is not UTF-8 is refused: no list of the records could name it, so no rule would look at it" {
	send_dispatch
	echo '{"hello": "world"}' | plant "$DIR/000002.msg.task_dispatch-$T-"$'\xff\xfe'".json"
	push_refused
	assert_output --partial "commit $(short refs/amp/messages): $DIR/000002.msg.task_dispatch-$T-"'\\xff\\xfe'".json: a file name that is not UTF-8"
}

@test "a merge commit is refused, and the commits on both its sides are checked" {
	local base side merge
	base=$(git rev-parse refs/amp/messages)
	send_dispatch
	# merged with the hub's tip itself: the merge is what is refused
	merge=$(git commit-tree "$(git rev-parse 'refs/amp/messages^{tree}')" -p refs/amp/messages -p "$base" -m "merge by hand")
	git update-ref refs/amp/messages "$merge"
	push_refused
	assert_output --partial "commit ${merge:0:7}: a merge commit: the SSOT keeps a linear history"
	# merged with a side line from the hub's tip, whose commit adds a
	# file that is no record: that commit is checked, and refused
	side=$(git commit-tree "$(git mktree <<< "$(git ls-tree "$base")
100644 blob $(echo note | git hash-object -w --stdin)	notes.txt")" -p "$base" -m side)
	merge=$(git commit-tree "$(git rev-parse 'refs/amp/messages~1^{tree}')" -p refs/amp/messages~1 -p "$side" -m "merge by hand")
	git update-ref refs/amp/messages "$merge"
	push_refused
	assert_output --partial "commit ${side:0:7}: notes.txt: not a record in its task's directory"
}

@test "a push of a line of commits checks each one past the hub's tip, oldest first, and only those" {
	send_dispatch
	# a commit the hub holds that its hook would refuse (put there by hand)
	echo note | plant notes.txt
	git -C "$HUB" fetch -q "$PWD" '+refs/amp/messages:refs/amp/messages'
	# an ACK and a file that is no record on top: the second is refused
	at 5
	amp ack "$D" --from executor > /dev/null
	at 6
	echo '{}' | plant "$DIR/notes.txt"
	push_refused
	assert_output --partial "commit $(short refs/amp/messages): $DIR/notes.txt: not a record in its task's directory"
	refute_output --partial "commit $(short refs/amp/messages~2)"
	# the ACK alone goes through: what the hub held is not checked again
	git update-ref refs/amp/messages refs/amp/messages~1
	push_accepted
}

@test "a message breaking a write-time rule (a result before the dispatch's ACK) is refused" {
	send_dispatch
	at 5
	plant_msg task_result executor coordinator "$BATS_TEST_TMPDIR/p/result.json" "$D"
	push_refused
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $P: /payload/subtask_id: a task_result is refused while subtask T-2026-044-S1 is dispatched: its dispatch has no ACK"
	# the same result after the ACK is fine
	git update-ref refs/amp/messages refs/amp/messages~1
	at 6; amp ack "$D" --from executor > /dev/null
	at 7; plant_msg task_result executor coordinator "$BATS_TEST_TMPDIR/p/result.json" "$D"
	push_accepted
}

@test "an ACK by someone else than the addressee is refused" {
	send_dispatch
	at 5
	$PY - "$D" "$T" "$AMP_NOW" <<'PY' | plant "$DIR/000002.ack.$D.json"
import json, sys
d, t, now = sys.argv[1:]
print(json.dumps({"protocol_version": "AMP/1.0", "type": "ack", "ack_for": d, "task_id": t,
                  "from": "reviewer", "to": "coordinator", "timestamp": now}))
PY
	push_refused
	assert_output --partial "$DIR/000002.ack.$D.json: /from: only the addressee (executor) may ACK, not reviewer"
}

@test "installing over an existing hook chains to it: it runs first on the same input, and its failure refuses" {
	rm "$HUB/hooks/pre-receive"
	cat > "$HUB/hooks/pre-receive" <<EOF
#!/bin/sh
cat > "$BATS_TEST_TMPDIR/chained.in"
exit \$(cat "$BATS_TEST_TMPDIR/chained.rc" 2>/dev/null || echo 0)
EOF
	chmod +x "$HUB/hooks/pre-receive"
	run amp hook install --server --repo "$HUB"
	assert_success
	assert_output --partial "(chained to the hook that was there)"
	# twice: amp's hook is not chained to itself
	amp hook install --server --repo "$HUB" > /dev/null
	run grep -c 'chained.in' "$HUB/hooks/pre-receive.amp-chained"
	assert_output 1
	run grep -c 'Installed by amp hook install' "$HUB/hooks/pre-receive.amp-chained"
	assert_output 0
	dispatch_acked
	push_accepted
	assert_file_contains "$BATS_TEST_TMPDIR/chained.in" " $(git rev-parse refs/amp/messages) refs/amp/messages"
	echo 1 > "$BATS_TEST_TMPDIR/chained.rc"
	at 10; amp heartbeat $T --from executor > /dev/null
	push_refused
	assert_output --partial "pre-receive hook declined"
	# and amp's own check still runs after a chained hook that passes
	echo 0 > "$BATS_TEST_TMPDIR/chained.rc"
	at 11; PLANT_EDIT='p["branch"] = "master"' plant_msg task_dispatch coordinator executor "$BATS_TEST_TMPDIR/p/dispatch.json"
	push_refused
	assert_output --partial "/payload/branch: must not be \"master\""
}

@test "through git daemon on loopback: a good push lands, a dispatch to main is refused" {
	port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	git daemon --enable=receive-pack --export-all --base-path="$BATS_TEST_TMPDIR" \
		--port="$port" --listen=127.0.0.1 --reuseaddr 2> "$BATS_TEST_TMPDIR/daemon.err" &
	DAEMON_PID=$!
	for _ in $(seq 100); do
		git ls-remote "git://127.0.0.1:$port/hub.git" > /dev/null 2>&1 && break
		sleep 0.1
	done
	git remote add daemon "git://127.0.0.1:$port/hub.git"
	dispatch_acked
	push_accepted daemon
	at 10; PLANT_EDIT='p["branch"] = "main"' plant_msg task_dispatch coordinator executor "$BATS_TEST_TMPDIR/p/dispatch.json"
	push_refused daemon
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $P: /payload/branch: must not be \"main\""
}

@test "the client's pre-push hook refuses the same push before it leaves" {
	plain=$BATS_TEST_TMPDIR/plain.git
	git init -q --bare "$plain"
	git remote add plain "$plain"
	run amp hook install
	assert_success
	assert_output "installed $BATS_TEST_TMPDIR/repo/.git/hooks/pre-push"
	dispatch_acked
	run git push plain 'refs/amp/*:refs/amp/*'
	assert_success
	at 10; PLANT_EDIT='p["branch"] = "main"' plant_msg task_dispatch coordinator executor "$BATS_TEST_TMPDIR/p/dispatch.json"
	before=$(git -C "$plain" rev-parse refs/amp/messages)
	run git push plain 'refs/amp/*:refs/amp/*'
	assert_failure
	assert_output --partial "amp hook: refused refs/amp/messages: commit $(short refs/amp/messages): $P: /payload/branch: must not be \"main\""
	assert_output --partial "failed to push"
	assert_equal "$(git -C "$plain" rev-parse refs/amp/messages)" "$before"
	# branches are not amp's business
	git commit -q --allow-empty -m work
	run git push plain HEAD:refs/heads/main
	assert_success
}

@test "amp hook checks its input and arguments" {
	run amp hook
	assert_failure 2
	assert_output --partial "missing subcommand"
	run amp hook pre-push origin
	assert_failure 2
	run amp hook pre-receive <<< "two words"
	assert_failure 2
	assert_output --partial "not a line of git's pre-receive input: two words"
	run amp hook pre-receive <<< "zz 0000000000000000000000000000000000000000 refs/amp/messages"
	assert_failure 2
	assert_output --partial "'zz' is not an object id"
	# refs outside refs/amp pass untouched
	run amp hook pre-receive <<< "0000000000000000000000000000000000000000 0000000000000000000000000000000000000000 refs/heads/main"
	assert_success
}

@test "install honours core.hooksPath: the hook goes there, and it guards the hub" {
	local hub2=$BATS_TEST_TMPDIR/hub2.git
	git init -q --bare "$hub2"
	git -C "$hub2" config core.hooksPath "$BATS_TEST_TMPDIR/shared-hooks"
	mkdir -p "$BATS_TEST_TMPDIR/shared-hooks"
	run amp hook install --server --repo "$hub2"
	assert_success
	assert_file_executable "$BATS_TEST_TMPDIR/shared-hooks/pre-receive"
	assert_file_not_exists "$hub2/hooks/pre-receive"
	git remote add hub2 "$hub2"
	git push -q hub2 'refs/amp/*:refs/amp/*'
	sed 's#feature/watch-breath-v2#main#' "$BATS_TEST_TMPDIR/p/dispatch.json" > main.json
	PLANT_EDIT=pass plant_msg task_dispatch coordinator executor main.json
	run git push hub2 'refs/amp/*:refs/amp/*'
	assert_failure
	assert_output --partial "amp hook: refused refs/amp/messages"
	assert_output --partial "/payload/branch"
}

@test "a control record the transition table refuses is refused: a heartbeat on an aborted task, an approval with nothing awaiting it" {
	send_dispatch
	at 10; amp abort $T --from coordinator --reason "plan changed" > /dev/null
	push_accepted
	at 20
	printf '{"protocol_version":"AMP/1.0","type":"heartbeat","task_id":"%s","from":"executor","timestamp":"%s"}\n' \
		$T "$AMP_NOW" | plant "$(next_path $T heartbeat-1772116347000 ctl)"
	push_refused
	assert_output --partial "/type: task $T was aborted by the coordinator"
	# drop the refused heartbeat from the clone, and try an approval
	git update-ref refs/amp/messages refs/amp/messages~1
	printf '{"protocol_version":"AMP/1.0","type":"approve","task_id":"%s","from":"admin","timestamp":"%s","approves":"%s"}\n' \
		$T "$AMP_NOW" "$D" | plant "$(next_path $T approve-1772116347000 ctl)"
	push_refused
	assert_output --partial "/type: an approve is refused while task $T is aborted: no dispatch of the task awaits approval"
}
