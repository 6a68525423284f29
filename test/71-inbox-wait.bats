#!/usr/bin/env bats
# amp inbox and amp wait (issue 9): what waits for a role, as of the tip
# read, from a cache (<git dir>/amp/inbox.json) that is never trusted over
# the SSOT; and waiting for it without spinning.  Time moves with AMP_NOW,
# except in the tests of amp wait, where waiting is the thing tested.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	# a background amp wait of a failed test
	[ -z "${WPID:-}" ] || kill "$WPID" 2> /dev/null || true
	fsck_teardown
}

# fresh ROLE: the msg_ids addressed to ROLE without an ACK, oldest first,
# read straight from the messages ref by git and Python (not by amp): the
# oracle the cache must always agree with.
fresh() {
	git ls-tree -r refs/amp/messages | $PY -c '
import json, re, subprocess, sys, datetime
role = sys.argv[1]
msgs, acks = [], set()
for line in sys.stdin:
    meta, path = line.rstrip("\n").split("\t", 1)
    # layout 1: tasks/<YYYY>/<S>/<task>/; layout 2: tasks/<YYYY>/<A>/<B>/<task>/<s1>/<s2>/
    m = re.match(r"tasks/[^/]+/(?:[^/]+/){1,2}(T-[^/]+)/(?:\d\d/\d\d/)?\d{6}\.(msg|ack)\.(.+)\.json$", path)
    if not m:
        continue
    if m.group(2) == "ack":
        acks.add((m.group(1), m.group(3)))
        continue
    doc = json.loads(subprocess.check_output(["git", "cat-file", "blob", meta.split()[2]]))
    if doc.get("to") == role:
        ts = datetime.datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00"))
        msgs.append((ts, m.group(3), m.group(1)))
for ts, i, t in sorted(msgs):
    if (t, i) not in acks:
        print(i)' "$1"
}

# ids ROLE [ARGS]: the msg_ids amp inbox --json lists, one a line.
ids() {
	amp inbox "$@" --json | json_get '"\n".join(m["msg_id"] for m in d["messages"])' | sed '/^$/d'
}

# assert_inbox_right: every role's inbox (ids) equals the oracle, and the
# whole answer equals one computed with no cache.
assert_inbox_right() {
	local role a b
	for role in executor coordinator reviewer admin; do
		a=$(ids $role) || return 1
		b=$(fresh $role)
		[ "$a" = "$b" ] || { echo "$role: amp says [$a], the SSOT says [$b]"; return 1; }
		a=$(amp inbox $role --json)
		rm -f .git/amp/inbox.json
		b=$(amp inbox $role --json)
		[ "$a" = "$b" ] || { echo "$role: cached [$a], fresh [$b]"; return 1; }
	done
}

# a conversation: dispatch D at 0 (ACKed at 5), result R at 60, review
# request Q at 120 (not ACKed yet).
conversation() {
	dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 120; Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
}

@test "each role sees what is addressed to it and not ACKed, before and after the ACKs" {
	send_dispatch
	run amp inbox executor
	assert_success
	assert_line --index 0 --regexp "^2026-02-26 14:32:07 \+0000  task_dispatch +coordinator -> executor +$T  $D  due in 5m$"
	for role in coordinator reviewer admin; do
		run amp inbox $role
		assert_output "nothing for $role as of $(git rev-parse --short=7 refs/amp/messages) (refs/amp/messages)"
	done
	at 5; amp ack "$D" --from executor
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 120; Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	run ids executor
	assert_output ""
	run ids coordinator
	assert_output "$R"
	run ids reviewer
	assert_output "$Q"
	at 130; E=$(amp escalate $T --type conflict --severity info --description "two reviewers disagree" --from reviewer)
	run ids admin
	assert_output "$E"
	at 140; amp ack "$R" --from coordinator
	amp ack "$Q" --from reviewer
	for role in executor coordinator reviewer; do
		run ids $role
		assert_output ""
	done
	assert_inbox_right
}

@test "oldest first: two tasks, by timestamp then msg_id" {
	send_dispatch
	at 30; D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	at 10; D3=$(amp send task_dispatch --task T-2026-046 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run ids executor
	assert_output "$(printf '%s\n' "$D" "$D3" "$D2")"
	assert_inbox_right
}

@test "--all adds the ACKed messages, marked acked; --task keeps one task" {
	conversation
	at 10; D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run ids executor
	assert_output "$D2"
	run amp inbox executor --all
	assert_success
	assert_line --index 0 --regexp "  $D  acked$"
	assert_line --index 1 --regexp "  $D2  due in 5m$"
	run amp inbox executor --all --json
	assert_equal "$(echo "$output" | json_get '[(m["msg_id"], m["acked"]) for m in d["messages"]]')" "[[\"$D\", true], [\"$D2\", false]]"
	run ids executor --task $T
	assert_output ""
	run ids executor --task T-2026-045
	assert_output "$D2"
	run ids executor --all --task $T
	assert_output "$D"
	run amp inbox executor --task T-2026-
	assert_failure 2
	assert_output --partial "--task: 'T-2026-' is not"
}

@test "deadlines in words against AMP_NOW: due, overdue, compact units, no ACK required" {
	D=$(amp send task_dispatch --task $T --from coordinator --ack-timeout 604800 --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	for step in "0 due in 7d 604800" "338400 due in 3d2h 266400" "600900 due in 1h05m 3900" \
		    "604560 due in 4m 240" "604755 due in 45s 45" "604900 overdue 1m -100" \
		    "608500 overdue 1h01m -3700" "700000 overdue 1d2h -95200"; do
		set -- $step
		at "$1"
		run amp inbox executor
		assert_line --index 0 --regexp "  $D  ${*:2:$#-2}$"
		run amp inbox executor --json
		assert_equal "$(echo "$output" | json_get 'd["messages"][0]["due_seconds"]')" "${!#}"
		assert_equal "$(echo "$output" | json_get 'd["messages"][0]["deadline"]')" "2026-03-05T14:32:07+00:00"
	done
	# an escalation asks for no ACK (AMP/1.0 "ACK Optional")
	E=$(amp escalate T-2026-045 --type conflict --severity info --description "x" --from executor)
	run amp inbox admin
	assert_line --index 0 --regexp "  $E  no ACK required$"
	run amp inbox admin --json
	assert_equal "$(echo "$output" | json_get 'd["messages"][0]')" \
		"$(printf '{"msg_id": "%s", "task_id": "T-2026-045", "type": "escalation", "from": "executor", "to": "admin", "timestamp": "%s", "requires_ack": false, "deadline": null, "due_seconds": null, "acked": false, "path": "%s", "agent": null}' "$E" "$AMP_NOW" "$(record_path T-2026-045 "000001.msg.$E.json")")"
}

@test "every answer names its tip: the as-of line and the json tip are the ref's commit" {
	send_dispatch
	run amp inbox executor
	assert_line --index 1 "as of $(git rev-parse --short=7 refs/amp/messages) (refs/amp/messages)"
	run amp inbox executor --json
	# the executor's inbox adds what the team reports (issue 33)
	assert_equal "$(echo "$output" | json_get 'sorted(d)')" '["answers", "format", "messages", "ref", "released", "role", "tip"]'
	assert_equal "$(echo "$output" | json_get 'd["tip"]')" "$(git rev-parse refs/amp/messages)"
	assert_equal "$(echo "$output" | json_get 'd["ref"]')" refs/amp/messages
	assert_equal "$(echo "$output" | json_get 'd["role"]')" executor
	run amp inbox reviewer --json
	assert_equal "$(echo "$output" | json_get 'sorted(d)')" '["format", "messages", "ref", "role", "tip"]'
	assert_equal "$(echo "$output" | json_get 'd["messages"]')" '[]'
	assert_equal "$(echo "$output" | json_get 'd["tip"]')" "$(git rev-parse refs/amp/messages)"
}

@test "a role that is not one is exit 2; no SSOT is exit 4 with the reason, never an empty inbox" {
	run amp inbox system
	assert_failure 2
	assert_output --partial "<role>: 'system' is not a role"
	run amp wait nobody --timeout 1
	assert_failure 2
	run amp inbox
	assert_failure 2
	run amp wait executor --timeout 0
	assert_failure 2
	git update-ref -d refs/amp/messages
	run amp inbox executor
	assert_failure 4
	assert_output "amp inbox: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp wait executor --timeout 1
	assert_failure 4
	assert_output --partial "run 'amp init'"
}

@test "an unchanged SSOT is answered from the cache without reading one git object" {
	conversation
	run amp inbox reviewer
	expected=$output
	assert_file_exists .git/amp/inbox.json
	# every object away: only an answer that reads none can be given
	mkdir "$BATS_TEST_TMPDIR/away"
	mv .git/objects/* "$BATS_TEST_TMPDIR/away/"
	run amp inbox reviewer
	mv "$BATS_TEST_TMPDIR/away"/* .git/objects/
	assert_success
	assert_output "$expected"
}

@test "the cache: deleted, garbage, truncated, foreign, or of another tip, the answers stay right" {
	conversation
	assert_inbox_right
	old=$(cat .git/amp/inbox.json)
	at 200; amp ack "$Q" --from reviewer
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	# the cache of an older tip of this SSOT: caught up by the tree diff
	echo "$old" > .git/amp/inbox.json
	run ids reviewer
	assert_output ""
	run ids executor
	assert_output "$D2"
	assert_inbox_right
	# garbage, truncated, valid JSON of a tip this repository does not
	# have, of another version: rebuilt
	for bad in 'garbage' "$(head -c 60 .git/amp/inbox.json)" \
		   "$(sed 's/"tip":"[0-9a-f]*"/"tip":"0123456789012345678901234567890123456789"/' .git/amp/inbox.json)" \
		   "$(sed 's/"version":[0-9]*/"version":99/' .git/amp/inbox.json)" '{}' '[]'; do
		# a foreign cache that would hide the dispatch if it were trusted
		printf '%s' "$bad" | sed 's/"to":"executor"/"to":"admin"/' > .git/amp/inbox.json
		run ids executor
		assert_output "$D2"
	done
	# a cache naming the current tip with the wrong content is trusted
	# (it is keyed by the tip): only amp writes it; deleting it is safe
	rm .git/amp/inbox.json
	run ids executor
	assert_output "$D2"
	assert_inbox_right
}

@test "the ref moved behind amp's back: an older commit, a hand-made commit, a deleted task" {
	conversation
	before=$(git rev-parse refs/amp/messages~1)
	assert_inbox_right
	# back to before the review request
	git update-ref refs/amp/messages "$before"
	run ids reviewer
	assert_output ""
	run ids coordinator
	assert_output "$R"
	# back to the root commit: no task at all
	git update-ref refs/amp/messages "$(git rev-list --max-parents=0 refs/amp/messages)"
	for role in executor coordinator reviewer; do
		run amp inbox $role
		assert_output --partial "nothing for $role"
	done
	# forward again, then a dispatch planted by hand as a fetch brings it
	git update-ref refs/amp/messages "$before"
	at 300
	P=task_dispatch-$T-$((1772116327300 + 0))
	$PY - "$P" "$T" "$AMP_NOW" "$BATS_TEST_TMPDIR/p/dispatch.json" <<'PY' | plant "$(next_path $T "$P")"
import json, sys
i, t, now, p = sys.argv[1:]
print(json.dumps({"msg_id": i, "protocol_version": "AMP/1.0", "type": "task_dispatch", "from": "coordinator",
                  "to": "executor", "task_id": t, "timestamp": now, "requires_ack": True,
                  "ack_timeout_sec": 600, "payload": json.load(open(p))}, indent=2))
PY
	run ids executor
	assert_output "$P"
	run amp inbox executor
	assert_line --index 0 --regexp "  $P  due in 10m$"
	assert_inbox_right
}

@test "a task directory that cannot be read is exit 4, not an empty inbox" {
	send_dispatch
	amp inbox executor > /dev/null
	# the task's tree object disappears (a damaged object database)
	tree=$(git rev-parse "refs/amp/messages:$(task_path "$T")")
	at 10; D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	loosen_objects
	mv ".git/objects/${tree:0:2}/${tree:2}" "$BATS_TEST_TMPDIR/tree.away"
	# the cache knows the task from before; built anew, it cannot
	rm .git/amp/inbox.json
	run amp inbox executor
	assert_failure 4
	assert_output --partial "task $T cannot be read"
	run amp inbox executor --task T-2026-045
	assert_success
	assert_output --partial "$D2"
	mv "$BATS_TEST_TMPDIR/tree.away" ".git/objects/${tree:0:2}/${tree:2}"
	run ids executor
	assert_output "$(printf '%s\n' "$D" "$D2")"
}

@test "amp wait prints at once what already waits" {
	send_dispatch
	run amp wait executor --timeout 1
	assert_success
	assert_line --index 0 --regexp "  $D  due in 5m$"
	assert_line --index 1 "as of $(git rev-parse --short=7 refs/amp/messages) (refs/amp/messages)"
	run amp wait executor --json
	assert_success
	assert_equal "$(echo "$output" | json_get 'd["messages"][0]["msg_id"]')" "$D"
	run amp wait executor --task T-2026-045 --timeout 1
	assert_failure 5
}

@test "amp wait --timeout 1 exits 5 with a message on stderr and nothing on stdout" {
	send_dispatch
	start=$(date +%s%N)
	run --separate-stderr amp wait reviewer --timeout 1
	end=$(date +%s%N)
	assert_failure 5
	assert_output ""
	assert_equal "$stderr" "amp wait: nothing for reviewer after 1s"
	[ $(((end - start) / 1000000)) -ge 1000 ]
	# AMP_NOW does not shorten a real-time wait
	at 999999
	start=$(date +%s%N)
	run amp wait reviewer --timeout 1
	end=$(date +%s%N)
	assert_failure 5
	[ $(((end - start) / 1000000)) -ge 1000 ]
}

# wait_in_background ROLE [ENV...]: amp wait ROLE in the background, its
# output in wait.out, its pid in WPID; returns once it is blocked.
wait_in_background() {
	local role=$1
	shift
	env "$@" amp wait "$role" > "$BATS_TEST_TMPDIR/wait.out" 2>&1 &
	WPID=$!
	# blocked: sleeping in the kernel, not running
	for _ in $(seq 100); do
		[ "$(awk '{print $3}' /proc/$WPID/stat 2> /dev/null)" = S ] && return 0
		sleep 0.02
	done
	return 1
}

# woken_within MS: waits for $WPID to exit; fails when it takes MS.
woken_within() {
	local start=$(date +%s%N) rc=0
	for _ in $(seq 300); do kill -0 $WPID 2> /dev/null || break; sleep 0.01; done
	wait $WPID || rc=$?
	WPID=
	echo "woke after $((($(date +%s%N) - start) / 1000000)) ms, rc $rc"
	[ $rc = 0 ] && [ $((($(date +%s%N) - start) / 1000000)) -lt "$1" ]
}

@test "amp wait wakes on a send from another process and prints the new dispatch (inotify)" {
	wait_in_background executor
	sleep 0.3
	kill -0 $WPID
	send_dispatch
	woken_within 2000
	run cat "$BATS_TEST_TMPDIR/wait.out"
	assert_line --index 0 --regexp "  $D  due in 5m$"
	assert_line --index 1 "as of $(git rev-parse --short=7 refs/amp/messages) (refs/amp/messages)"
}

@test "amp wait wakes when the ref is packed into packed-refs or moved by git update-ref" {
	send_dispatch
	amp ack "$D" --from executor
	git pack-refs --all
	wait_in_background coordinator
	# a result written by hand and packed: the loose ref file goes away
	at 60
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	woken_within 2000
	grep -q "  $R  " "$BATS_TEST_TMPDIR/wait.out"
	amp ack "$R" --from coordinator
	# moved back by git update-ref (a loose ref file again)
	tip=$(git rev-parse refs/amp/messages)
	git update-ref refs/amp/messages "$tip~2"
	git pack-refs --all
	wait_in_background coordinator
	git update-ref refs/amp/messages "$tip~1"
	woken_within 2000
	grep -q "  $R  " "$BATS_TEST_TMPDIR/wait.out"
	# packed-refs alone rewritten (as a fetch into packed refs does)
	git update-ref refs/amp/messages "$tip"
	git pack-refs --all
	[ ! -e .git/refs/amp/messages ]
	wait_in_background coordinator
	sed "s/^$tip /$(git rev-parse "$tip~1") /" .git/packed-refs > .git/packed-refs.new
	mv .git/packed-refs.new .git/packed-refs
	woken_within 2000
	grep -q "  $R  " "$BATS_TEST_TMPDIR/wait.out"
	git update-ref refs/amp/messages "$tip"
}

@test "without inotify amp wait polls with backoff and still wakes" {
	wait_in_background executor AMP_WAIT_POLL=1
	sleep 0.5
	send_dispatch
	woken_within 2500
	grep -q "  $D  " "$BATS_TEST_TMPDIR/wait.out"
}

@test "amp wait uses no CPU while it waits" {
	wait_in_background executor
	sleep 1.2
	# utime + stime in clock ticks (usually 10 ms): the start-up only
	ticks=$(awk '{print $14 + $15}' /proc/$WPID/stat)
	echo "ticks: $ticks"
	[ "$ticks" -le 5 ]
	sleep 1
	[ "$(awk '{print $14 + $15}' /proc/$WPID/stat)" -eq "$ticks" ]
	send_dispatch
	woken_within 2000
}

@test "SIGINT and SIGTERM end amp wait as they end a shell command (130, 143)" {
	for sig in INT TERM; do
		wait_in_background executor
		kill -$sig $WPID
		rc=0
		wait $WPID || rc=$?
		WPID=
		[ $rc = $((128 + $(kill -l $sig))) ]
		run cat "$BATS_TEST_TMPDIR/wait.out"
		assert_output ""
	done
}

@test "the round trip: an executor that only uses amp waits, reads its dispatch with amp show --context, ACKs and reports" {
	# the executor, with amp alone on its PATH (no git command at all):
	# wait for the dispatch, read it whole with amp show --context, ACK,
	# build the result from what it read, send it
	(
		export PATH=$AMP_BIN
		id=$(amp wait executor --timeout 20 --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["messages"][0]["msg_id"])') &&
		amp show "$id" --context --json > "$BATS_TEST_TMPDIR/context.json" &&
		amp ack "$id" --from executor > /dev/null &&
		$PY - "$BATS_TEST_TMPDIR/context.json" > "$BATS_TEST_TMPDIR/r.json" <<'PY' &&
import json, sys
dispatch = json.load(open(sys.argv[1]))["messages"][-1]["payload"]
print(json.dumps({
    "subtask_id": dispatch["subtasks"][0]["subtask_id"],
    "completion_status": "complete",
    "diff_summary": {"files_changed": ["BreathEngine.swift"], "lines_added": 1, "lines_removed": 0},
    "self_assessment": {"criteria_met": [True] * len(dispatch["acceptance_criteria"]),
                        "notes": ["done"] * len(dispatch["acceptance_criteria"])},
    "work_log": [{"timestamp": "2026-02-26T14:33:00Z", "action": "edit", "file": "BreathEngine.swift",
                  "detail": dispatch["description"][:40]}]}))
PY
		amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/r.json" > "$BATS_TEST_TMPDIR/executor.out"
	) &
	exec_pid=$!
	sleep 0.3
	send_dispatch
	# the coordinator waits for the result the same way
	run amp wait coordinator --timeout 20 --json
	assert_success
	wait $exec_pid
	R=$(cat "$BATS_TEST_TMPDIR/executor.out")
	assert_equal "$(echo "$output" | json_get '[m["msg_id"] for m in d["messages"]]')" "[\"$R\"]"
	run ids executor
	assert_output ""
	run amp inbox executor --all --json
	assert_equal "$(echo "$output" | json_get '[(m["msg_id"], m["acked"]) for m in d["messages"]]')" "[[\"$D\", true]]"
	assert_inbox_right
}

@test "an aborted task's messages wait for nobody but the admin: they can never be ACKed" {
	send_dispatch
	run amp inbox executor --json
	assert_output --partial "\"msg_id\": \"$D\""
	at 10; amp abort $T --from coordinator --reason "plan changed" > /dev/null
	run amp ack "$D" --from executor
	assert_failure 3
	run amp inbox executor
	assert_success
	assert_output --regexp "^nothing for executor as of [0-9a-f]+ \(refs/amp/messages\)$"
	run amp inbox executor --all --json
	assert_output --partial "\"msg_id\": \"$D\""
	run amp wait executor --timeout 1
	assert_failure 5
}
