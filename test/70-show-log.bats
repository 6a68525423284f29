#!/usr/bin/env bats
# The read side, part one (issue 9): `amp show` prints one message whole
# (its ACK, its references, its payload) and with --context the chain it
# points to; `amp log` is the audit trail, record by record, newest first.
# Both read only what they need: a message's own task directory, and per
# commit the subtrees it changed.

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

# conversation: the dispatch (ACKed at 5), the result (10, ACKed at 15), the
# review request (20, ACKed at 25), the verdict (30, never ACKed), the
# coordinator's heartbeat (35) and a warning escalation naming the verdict
# (40); sets D R Q V E.
conversation() {
	dispatch_acked
	at 10; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 15; amp ack "$R" --from coordinator > /dev/null
	at 20; Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	at 25; amp ack "$Q" --from reviewer > /dev/null
	at 30; V=$(amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	at 35; amp heartbeat $T --from coordinator > /dev/null
	at 40; E=$(amp escalate $T --from coordinator --type unknown --severity warning --description "look at the verdict" --affected "$V")
}

# stored_path ID: the path of message ID in the tip tree.
stored_path() {
	git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$1.json"
}

# other_task: a dispatch of T-2026-045 whose context_ref names $D; sets D2.
other_task() {
	sed 's/T-2026-044/T-2026-045/g' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/dispatch45.json"
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --context-ref "$D" \
		--payload "$BATS_TEST_TMPDIR/p/dispatch45.json")
}

# log_ids [ARGS]: "kind id" of each record amp log --json ARGS lists, in order.
log_ids() {
	amp log --json "$@" | $PY -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(r["kind"], r["id"])'
}

# hide_objects OID...: moves the loose objects away (a damaged disk), so
# that reading them fails; restore_objects puts them back.
hide_objects() {
	local o f
	loosen_objects || fail "cannot unpack the packs"
	mkdir -p "$BATS_TEST_TMPDIR/hidden"
	for o in "$@"; do
		f=.git/objects/${o:0:2}/${o:2}
		[ -f "$f" ] || fail "object $o is not loose"
		mv "$f" "$BATS_TEST_TMPDIR/hidden/$o"
	done
}
# hide_task_dir TASK: every version of the task's directory tree, in every
# commit that had one, becomes unreadable.
hide_task_dir() {
	hide_objects $(git rev-list refs/amp/messages | while read -r c; do
		git rev-parse -q --verify "$c:$(task_path "$1")" || true; done | sort -u)
}
restore_objects() {
	local f
	for f in "$BATS_TEST_TMPDIR"/hidden/*; do
		mv "$f" ".git/objects/$(basename "$f" | cut -c1-2)/$(basename "$f" | cut -c3-)"
	done
}

# ---- amp show ---------------------------------------------------------------

@test "show: each message type with its envelope, its ACK (acked, overdue, not required) and its payload" {
	conversation
	at 100
	run amp show "$D"
	assert_success
	assert_line --index 0 "message     $D"
	assert_line --index 1 "type        task_dispatch"
	assert_line --index 2 "task        $T"
	assert_line --index 3 "from        coordinator -> executor"
	assert_line --index 4 "sent        2026-02-26 14:32:07 +0000  (1m ago)"
	assert_line --index 5 "ack         required within 5m: acked by executor at 2026-02-26 14:32:12 +0000 (after 5s)"
	assert_line --index 6 "context     none"
	assert_line --index 7 "payload"
	assert_line --index 8 "  {"
	assert_line '    "branch": "feature/watch-breath-v2",'
	assert_line '        "subtask_id": "T-2026-044-S1",'
	run amp show "$R"
	assert_success
	assert_line "type        task_result"
	assert_line "from        executor -> coordinator"
	assert_line "ack         required within 2m: acked by coordinator at 2026-02-26 14:32:22 +0000 (after 5s)"
	assert_line '    "commit_hash": "a3f8d21"'
	run amp show "$Q"
	assert_success
	assert_line "type        review_request"
	assert_line "from        coordinator -> reviewer"
	assert_line "ack         required within 10m: acked by reviewer at 2026-02-26 14:32:32 +0000 (after 5s)"
	assert_line "    \"original_dispatch_ref\": \"$D\","
	assert_line "    \"task_result_ref\": \"$R\","
	run amp show "$V"
	assert_success
	assert_line "type        review_verdict"
	assert_line "from        reviewer -> coordinator"
	assert_line "ack         required within 1m: overdue 10s, due at 2026-02-26 14:33:37 +0000"
	assert_line "context     $Q"
	assert_line '    "decision": "approved",'
	run amp show "$E"
	assert_success
	assert_line "type        escalation"
	assert_line "from        coordinator -> admin"
	assert_line "ack         not required"
	assert_line '    "severity": "warning",'
	assert_line "      \"$V\""
	# before its deadline the verdict's ACK is pending, with the time left
	at 31
	run amp show "$V"
	assert_line "ack         required within 1m: due in 59s, at 2026-02-26 14:33:37 +0000"
}

@test "show --json prints the stored blob byte for byte, even one amp would not have formatted so" {
	conversation
	for m in "$D" "$R" "$Q" "$V" "$E"; do
		amp show "$m" --json > "$BATS_TEST_TMPDIR/shown"
		git show "refs/amp/messages:$(stored_path "$m")" > "$BATS_TEST_TMPDIR/stored"
		cmp "$BATS_TEST_TMPDIR/shown" "$BATS_TEST_TMPDIR/stored"
	done
	# fetched from another writer: compact, members in another order, no final newline
	at 50
	X=task_result-$T-1772116377000
	printf '{"type":"task_result","msg_id":"%s","from":"executor","to":"coordinator","protocol_version":"AMP/1.0","task_id":"%s","timestamp":"%s","requires_ack":false,"payload":{"subtask_id":"T-2026-044-S1","completion_status":"partial"}}' \
		"$X" $T "$AMP_NOW" > "$BATS_TEST_TMPDIR/compact"
	plant "$(next_path $T "$X")" < "$BATS_TEST_TMPDIR/compact"
	amp show "$X" --json > "$BATS_TEST_TMPDIR/shown"
	cmp "$BATS_TEST_TMPDIR/shown" "$BATS_TEST_TMPDIR/compact"
	run amp show "$X"
	assert_success
	assert_line "type        task_result"
	assert_line "ack         not required"
}

@test "show --context on a verdict: the dispatch, the result, the request, oldest first, then the verdict" {
	conversation
	at 100
	run amp show "$V" --context
	assert_success
	run grep -E '^(message|named by) ' <<< "$output"
	assert_output "message     $D
named by    $Q
message     $R
named by    $Q
message     $Q
named by    $V
message     $V"
	run amp show "$V" --context
	assert_line "ack         required within 5m: acked by executor at 2026-02-26 14:32:12 +0000 (after 5s)"
	assert_line '    "commit_hash": "a3f8d21"'
	run --separate-stderr amp show "$V" --context --json
	assert_success
	[ -z "$stderr" ]
	[ "$(json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output")" = "[\"$D\", \"$R\", \"$Q\", \"$V\"]" ]
	# each element is the stored message, parsed
	[ "$(json_get 'd["messages"][1]' <<< "$output")" = "$(git show "refs/amp/messages:$(stored_path "$R")" | json_get d)" ]
}

@test "show --context follows an escalation's affected_msgs, and each message appears once" {
	conversation
	run amp show "$E" --context --json
	assert_success
	[ "$(json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output")" = "[\"$D\", \"$R\", \"$Q\", \"$V\", \"$E\"]" ]
	run amp show "$E" --context
	run grep -c '^message ' <<< "$output"
	assert_output 5
	# a message with no references is its own context
	run amp show "$D" --context --json
	[ "$(json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output")" = "[\"$D\"]" ]
}

@test "show --context follows a context_ref to another task's message" {
	send_dispatch
	at 10; other_task
	run amp show "$D2" --context
	assert_success
	run grep -E '^(message|task) ' <<< "$output"
	assert_output "message     $D
task        $T
message     $D2
task        T-2026-045"
	run amp show "$D2" --context --json
	[ "$(json_get '[m["task_id"] for m in d["messages"]]' <<< "$output")" = '["T-2026-044", "T-2026-045"]' ]
}

@test "show --context: a referenced message missing from the SSOT is shown as missing, not an error" {
	send_dispatch
	at 10
	X=task_dispatch-T-2026-046-1772116337000
	$PY - "$X" "$AMP_NOW" "$D" <<'PY' | plant "$(next_path T-2026-046 "$X")"
import json, sys
x, now, d = sys.argv[1:]
print(json.dumps({"msg_id": x, "protocol_version": "AMP/1.0", "type": "task_dispatch", "from": "coordinator",
                  "to": "executor", "task_id": "T-2026-046", "timestamp": now, "requires_ack": False,
                  "context_ref": ["task_result-T-2026-046-1", d, "task_dispatch-T-2026-099-5"],
                  "payload": {}}, indent=2))
PY
	run --separate-stderr amp show "$X" --context
	assert_success
	[ -z "$stderr" ]
	run grep -E '^(message|named by|missing) ' <<< "$output"
	assert_output "message     task_result-T-2026-046-1
named by    $X
missing     not in the SSOT
message     task_dispatch-T-2026-099-5
named by    $X
missing     not in the SSOT
message     $D
named by    $X
message     $X"
	run amp show "$X" --context --json
	assert_success
	[ "$(json_get 'd["messages"][0]' <<< "$output")" = '{"msg_id": "task_result-T-2026-046-1", "unavailable": "missing", "reason": "not in the SSOT", "referenced_by": "'"$X"'"}' ]
	[ "$(json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output")" = "[\"task_result-T-2026-046-1\", \"task_dispatch-T-2026-099-5\", \"$D\", \"$X\"]" ]
}

@test "show: control characters and bidi overrides in message text are escaped on the terminal and exact in --json" {
	send_dispatch
	at 10
	E=$(amp escalate $T --from executor --type unknown --severity info \
		--description "$(printf 'a\033[2Jb\u202ec\nd\u009be')")
	run amp show "$E"
	assert_success
	[[ $output != *$'\e'* ]] || fail "an ESC reached the terminal"
	[[ $output != *$'\u202e'* ]] || fail "a bidi override reached the terminal"
	[[ $output != *$'\u009b'* ]] || fail "a C1 control reached the terminal"
	# one line, every character visible (JSON's own escapes shown as amp_term shows a backslash)
	assert_line '    "description": "a\\u001B[2Jb\u202ec\\nd\u009be",'
	# --json: the bytes as stored
	amp show "$E" --json > "$BATS_TEST_TMPDIR/shown"
	git show "refs/amp/messages:$(stored_path "$E")" > "$BATS_TEST_TMPDIR/stored"
	cmp "$BATS_TEST_TMPDIR/shown" "$BATS_TEST_TMPDIR/stored"
	[ "$(json_get 'd["payload"]["description"]' < "$BATS_TEST_TMPDIR/shown")" = "$(printf 'a\033[2Jb\u202ec\nd\u009be')" ]
	# the envelope of a fetched record is escaped too
	X=task_result-$T-1772116347000
	printf '{"msg_id": "%s", "type": "task_result\\u001b]0;pwned\\u0007", "from": "executor\\u202e", "to": "coordinator", "task_id": "%s", "timestamp": "%s", "payload": {}}\n' \
		"$X" $T "$AMP_NOW" | plant "$(next_path $T "$X")"
	run amp show "$X"
	assert_success
	[[ $output != *$'\e'* && $output != *$'\a'* && $output != *$'\u202e'* ]] || fail "$output"
	assert_line 'type        task_result\x1b]0;pwned\x07'
	assert_line 'from        executor\u202e -> coordinator'
}

@test "show: an unknown msg_id is exit 2 naming it; a string that is no msg_id is a usage error" {
	send_dispatch
	run --separate-stderr amp show task_dispatch-T-2026-044-1
	assert_failure 2
	[ -z "$output" ]
	[ "$stderr" = "amp show: error: no message task_dispatch-T-2026-044-1 in the SSOT" ]
	run --separate-stderr amp show task_result-T-2026-777-1772116327000
	assert_failure 2
	[ "$stderr" = "amp show: error: no message task_result-T-2026-777-1772116327000 in the SSOT" ]
	run --separate-stderr amp show nope
	assert_failure 2
	[ "$stderr" = "amp show: error: <msg_id>: 'nope' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)" ]
	run --separate-stderr amp show
	assert_failure 2
	[[ $stderr == *"usage: amp show <msg_id>"* ]]
	run --separate-stderr amp show "$D" "$D"
	assert_failure 2
	run --separate-stderr amp show "$D" --bogus
	assert_failure 2
	run amp show --help
	assert_success
	# issue 34: the usage line, then each option on a line of its own
	assert_line --index 0 "usage: amp show <msg_id> [--context] [--json] [--utc] [--wide] [--color[=<when>] | --no-color] [--no-pager] [--repo <dir>]"
	assert_line --partial "	--context "
}

@test "show reads its message's task directory only: another task's, and (with --json) the task's other records, may be unreadable" {
	send_dispatch
	at 10; other_task
	hide_task_dir T-2026-045
	run amp show "$D"
	assert_success
	assert_line "type        task_dispatch"
	restore_objects
	at 15; amp ack "$D" --from executor > /dev/null
	hide_objects "$(git rev-parse "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep -F ".ack.$D.json")")"
	amp show "$D" --json > "$BATS_TEST_TMPDIR/shown"
	git show "refs/amp/messages:$(stored_path "$D")" | cmp - "$BATS_TEST_TMPDIR/shown"
	restore_objects
}

@test "show of a record that is not JSON: --json prints its bytes, the terminal gets exit 4 naming it" {
	send_dispatch
	at 10
	X=task_result-$T-1772116337000
	path=$(next_path $T "$X")
	printf 'not json\033[2J' | plant "$path"
	run amp show "$X" --json
	assert_success
	[ "$output" = "$(printf 'not json\033[2J')" ]
	run --separate-stderr amp show "$X"
	assert_failure 4
	[[ $stderr == "amp show: error: $path: "* ]] || fail "$stderr"
	[[ $stderr != *$'\e'* ]]
}

# ---- amp log ------------------------------------------------------------------

@test "log: every record of the conversation, newest first, one line each" {
	conversation
	run log_ids
	assert_success
	assert_output "msg $E
ctl heartbeat-1772116362000
msg $V
ack $Q
msg $Q
ack $R
msg $R
ack $D
msg $D"
	# the commits are those of the ref, newest first (the root adds no record)
	[ "$(amp log --json | $PY -c 'import json,sys; print("\n".join(json.loads(l)["commit"] for l in sys.stdin))')" = \
	  "$(git rev-list refs/amp/messages | head -n 9)" ]
	run amp log
	assert_success
	[ "${#lines[@]}" -eq 9 ]
	[[ ${lines[0]} =~ ^[0-9a-f]{7}\ 2026-02-26\ 14:32:47\ \+0000\ +$T\ +msg/escalation\ +coordinator\ -\>\ admin\ +$E\ +warning\ unknown$ ]] || fail "${lines[0]}"
	[[ ${lines[1]} =~ ctl/heartbeat\ +coordinator\ +heartbeat-1772116362000$ ]] || fail "${lines[1]}"
	[[ ${lines[3]} =~ 2026-02-26\ 14:32:32\ \+0000\ +$T\ +ack\ +reviewer\ +-\>\ coordinator\ +$Q$ ]] || fail "${lines[3]}"
	[[ ${lines[8]} =~ ^$(git rev-parse --short=7 refs/amp/messages~8)\ 2026-02-26\ 14:32:07\ \+0000\ +$T\ +msg/task_dispatch\ +coordinator\ -\>\ executor\ +$D$ ]] || fail "${lines[8]}"
}

@test "log filters: --type (a message type, ack, a control type), --from, --to, --since/--until, --grep, combined" {
	conversation
	run log_ids --type ack
	assert_output "ack $Q
ack $R
ack $D"
	run log_ids --type task_dispatch
	assert_output "msg $D"
	run log_ids --type heartbeat
	assert_output "ctl heartbeat-1772116362000"
	run log_ids --from reviewer
	assert_output "msg $V
ack $Q"
	run log_ids --to admin
	assert_output "msg $E"
	# inclusive at both ends, any offset
	run log_ids --since 2026-02-26T14:32:27+00:00 --until 2026-02-26T15:32:37+01:00
	assert_output "msg $V
ack $Q
msg $Q"
	# the payload is searched, case-sensitively
	run log_ids --grep a3f8d21
	assert_output "msg $R"
	run log_ids --grep A3F8D21
	assert_output ""
	run log_ids --grep "look at the verdict"
	assert_output "msg $E"
	run log_ids --type ack --from coordinator
	assert_output "ack $R"
	run amp log --type review_verdict
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"msg/review_verdict"*"$V"* ]]
}

@test "log -n N stops after N records, after the filters" {
	conversation
	run log_ids -n 2
	assert_output "msg $E
ctl heartbeat-1772116362000"
	run log_ids --type ack -n 1
	assert_output "ack $Q"
	run amp log -n 1000000
	[ "${#lines[@]}" -eq 9 ]
}

@test "log refuses bad filters with exit 2, before reading anything" {
	conversation
	for args in "--type bogus" "--type ACK" "--since yesterday" "--until 2026-02-26" "-n 0" "-n 1000001" \
		"-n x" "--from nobody" "--to system" "--task T-44" "extra"; do
		run --separate-stderr amp log $args
		[ "$status" -eq 2 ] || fail "amp log $args: exit $status"
		[ -z "$output" ] || fail "amp log $args printed $output"
	done
	run --separate-stderr amp log -n 0
	[ "$stderr" = "amp log: error: -n: 0 is out of range (1..1000000)" ]
	run --separate-stderr amp log --type bogus
	[[ $stderr == "amp log: error: --type: 'bogus' is not a message type, ack, or a control record type"* ]]
}

@test "log --json: one object a line, every documented key, the record as stored" {
	conversation
	amp log --json > "$BATS_TEST_TMPDIR/log.jsonl"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/log.jsonl")" -eq 9 ]
	run $PY - "$BATS_TEST_TMPDIR/log.jsonl" "$(task_path T-2026-044)/" <<'PY'
import json, subprocess, sys
keys = ["format", "commit", "time", "task_id", "kind", "type", "from", "to", "id", "path", "unreadable", "agent", "record"]
commits = subprocess.run(["git", "rev-list", "refs/amp/messages"], capture_output=True, text=True).stdout.split()
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert list(r) == keys, list(r)
    assert r["commit"] in commits
    stored = json.loads(subprocess.run(["git", "show", "refs/amp/messages:" + r["path"]],
                                       capture_output=True, text=True).stdout)
    assert r["record"] == stored, r["path"]
    assert r["time"] == stored["timestamp"] and r["type"] == stored["type"]
    assert r["from"] == stored["from"] and r["to"] == stored.get("to")
    assert r["task_id"] == "T-2026-044" and r["unreadable"] is False and r["agent"] is None
    assert r["path"].startswith(sys.argv[2])
    assert r["kind"] in ("msg", "ack", "ctl")
    assert r["path"].endswith("." + r["kind"] + "." + r["id"] + ".json")
print("ok")
PY
	assert_output ok
}

@test "log: a planted record that is not JSON is listed as unreadable, never a crash" {
	conversation
	at 50
	X=task_result-$T-1772116377000
	path=$(next_path $T "$X")
	printf 'garbage\033]0;x\a' | plant "$path"
	at 55
	printf '[1, 2]\n' | plant "$(next_path $T heartbeat-1772116382000 ctl)"
	run --separate-stderr amp log --json -n 2
	assert_success
	[ "$(json_get '[d[k] for k in ("kind", "type", "id", "path", "unreadable", "record", "time")]' <<< "${lines[1]}")" = \
	  "[\"msg\", null, \"$X\", \"$path\", true, null, null]" ]
	[ "$(json_get 'd["reason"]' <<< "${lines[1]}")" != "" ]
	[ "$(json_get '[d["kind"], d["unreadable"], d["reason"]]' <<< "${lines[0]}")" = '["ctl", true, "not a JSON object"]' ]
	run amp log -n 2
	assert_success
	[[ ${lines[1]} == *"unreadable: $path: "* ]] || fail "${lines[1]}"
	[[ $output != *$'\e'* && $output != *$'\a'* ]]
	# a filter on a field it cannot have passes it over; --grep searches its bytes
	run log_ids --type task_result
	assert_output "msg $R"
	run log_ids --grep garbage
	assert_output "msg $X"
}

@test "log --task lists only that task and never reads another task's directory" {
	conversation
	at 50; other_task
	at 55; amp ack "$D2" --from executor > /dev/null
	run log_ids --task T-2026-045
	assert_output "ack $D2
msg $D2"
	expected=$(log_ids --task $T)
	[ "$(wc -l <<< "$expected")" -eq 9 ]
	[ "$(log_ids | grep -v T-2026-045)" = "$expected" ]
	hide_task_dir T-2026-045
	run --separate-stderr log_ids --task $T
	assert_success
	[ -z "$stderr" ]
	assert_output "$expected"
	# without --task, those commits are reported (exit 4) and the rest listed
	run --separate-stderr amp log --json
	assert_failure 4
	[[ $stderr == *"amp log: error: commit "*": cannot read tree $(task_path "T-2026-045")"* ]] || fail "$stderr"
	# the 9 records, then (issue 34) the error as one JSON object
	[ "$(printf '%s\n' "$output" | $PY -c 'import json,sys; print(len([l for l in sys.stdin]))')" -eq 10 ]
	[[ $(tail -n 1 <<< "$output") == '{"format":{"name":"error","version":1},"error":{"code":'*'"exit":4'* ]] || fail "$(tail -n 1 <<< "$output")"
	restore_objects
}

@test "log: amp help lists show and log; an SSOT without amp init is exit 4" {
	run amp help
	assert_line --partial "show       show a message"
	assert_line --partial "log        list the records of the SSOT"
	git update-ref -d refs/amp/messages
	run --separate-stderr amp log
	assert_failure 4
	[[ $stderr == *"run 'amp init'"* ]]
	run --separate-stderr amp show task_dispatch-T-2026-044-1
	assert_failure 4
}
