#!/usr/bin/env bats
# amp watch --exec / git config amp.notify: one run of the admin's command
# per new escalation in the SSOT, whoever wrote it (and, with --exec-for,
# per new message to a role); the record on stdin, its fields in the
# environment; failures retried with backoff (AMP_NOW), reported, never
# dropped silently, never in the way of enforcement.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	N=$BATS_TEST_TMPDIR/calls
	mkdir -p "$N"
	export N
	# The recorder: each call's stdin in $N/<k>.json, its AMP_* environment
	# in $N/<k>.env; exits with the content of $N/rc when there is one.
	cat > "$BATS_TEST_TMPDIR/notify.sh" <<'SH'
k=$(($(ls "$N" | grep -c '\.json$') + 1))
cat > "$N/$k.json"
env | grep -E '^AMP_(NOTIFY_KIND|NOTIFY_ATTEMPT|MSG_ID|TASK_ID|TYPE|FROM|TO|ESCALATION_TYPE|SEVERITY)=' | sort > "$N/$k.env"
[ ! -e "$N/rc" ] || exit "$(cat "$N/rc")"
SH
	REC="sh $BATS_TEST_TMPDIR/notify.sh"
}

teardown() {
	fsck_teardown
}

# calls: how many times the command ran.
calls() {
	ls "$N" | grep -c '\.json$' || true
}

# called_ids: the AMP_MSG_ID of every call, in order, one a line.
called_ids() {
	local k
	for ((k = 1; k <= $(calls); k++)); do
		sed -n 's/^AMP_MSG_ID=//p' "$N/$k.env"
	done
}

# ssot_escalations: the msg_id of every escalation in the SSOT, in the
# order of the commits that brought them.
ssot_escalations() {
	git log --reverse --format= --name-only refs/amp/messages |
		sed -n 's#.*/[0-9]*\.msg\.\(escalation-[^/]*\)\.json$#\1#p'
}

@test "first enable starts from the tip: the history is not replayed, and the start is said" {
	amp escalate $T --from executor --type conflict --severity info --description "old news" > /dev/null
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_output ""
	assert_equal "$stderr" "amp watch: notify: first run on this store: notifying what arrives after $(git rev-parse refs/amp/messages)"
	assert_equal "$(calls)" 0
	run json_get '[d["tip"], d["pending"]]' < .git/amp/notify.json
	assert_output "[\"$(git rev-parse refs/amp/messages)\", []]"
	at 10
	E=$(amp escalate $T --from executor --type conflict --severity info --description "news")
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_output "notified escalation conflict $T ($E)"
	assert_equal "$stderr" ""
	assert_equal "$(called_ids)" "$E"
}

@test "one call per escalation, whoever wrote it (amp escalate, the write-time lock, watch's ack_timeout), once across passes and restarts" {
	amp watch --once --exec "$REC" 2> /dev/null
	dispatch_acked
	at 8
	E1=$(amp escalate $T --from executor --type conflict --severity info --description "which API?")
	amp watch --once --exec "$REC" > /dev/null
	reject_rounds 3
	amp watch --once --exec "$REC" > /dev/null
	amp watch --once --exec "$REC" > /dev/null
	# a second task whose dispatch nobody ACKs: watch escalates it
	at 400
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	at 701
	run amp watch --once --exec "$REC"
	assert_success
	assert_line --regexp "^escalated ack_timeout T-2026-045 $D2 \(escalation-T-2026-045-[0-9]+\)$"
	assert_line --regexp "^notified escalation ack_timeout T-2026-045 \(escalation-T-2026-045-[0-9]+\)$"
	# a restart that lost watch's state, and more passes: nothing twice
	rm .git/amp/watch.json
	amp watch --once --exec "$REC"
	at 702
	amp watch --once --exec "$REC"
	[ "$(escalation_count hallucination_lock)" = 1 ] || fail "no lock"
	[ "$(escalation_count ack_timeout T-2026-045)" = 1 ] || fail "no ack_timeout"
	assert_equal "$(ssot_escalations | wc -l)" 3
	assert_equal "$(called_ids)" "$(ssot_escalations)"
	assert_equal "$(sed -n 1p <(called_ids))" "$E1"
	run grep -h AMP_ESCALATION_TYPE "$N"/1.env "$N"/2.env "$N"/3.env
	assert_output "AMP_ESCALATION_TYPE=conflict
AMP_ESCALATION_TYPE=hallucination_lock
AMP_ESCALATION_TYPE=ack_timeout"
	run json_get 'd["pending"]' < .git/amp/notify.json
	assert_output "[]"
}

@test "the command gets the stored escalation on stdin, byte for byte, and its fields in the environment" {
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(AMP_ESCALATION_TYPE=leaked AMP_FROM=leaked amp escalate $T --from executor --type conflict --severity critical --description "stuck")
	AMP_ESCALATION_TYPE=leaked AMP_SEVERITY=leaked amp watch --once --exec "$REC" > /dev/null
	assert_equal "$(calls)" 1
	escalation_file "$E" > "$BATS_TEST_TMPDIR/stored.json"
	cmp "$BATS_TEST_TMPDIR/stored.json" "$N/1.json"
	run cat "$N/1.env"
	assert_output "AMP_ESCALATION_TYPE=conflict
AMP_FROM=executor
AMP_MSG_ID=$E
AMP_NOTIFY_ATTEMPT=1
AMP_NOTIFY_KIND=escalation
AMP_SEVERITY=critical
AMP_TASK_ID=$T
AMP_TO=admin
AMP_TYPE=escalation"
}

@test "hostile values are data: \$(...), backquotes and newlines in a record execute nothing" {
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info \
		--description "\$(touch $BATS_TEST_TMPDIR/pwned1) \`touch $BATS_TEST_TMPDIR/pwned2\`
; touch $BATS_TEST_TMPDIR/pwned3")
	# a record that came by fetch, with a hostile sender (not schema-valid:
	# watch escalates it as unknown, and both are notified)
	at 5
	$PY - "$T" "$BATS_TEST_TMPDIR" <<'PY' | plant "$(next_path $T escalation-$T-1772116332000)"
import json, sys
t, d = sys.argv[1:]
print(json.dumps({"msg_id": "escalation-%s-1772116332000" % t, "protocol_version": "AMP/1.0",
                  "type": "escalation", "from": "$(touch %s/pwned4)\n`touch %s/pwned5`" % (d, d),
                  "to": "admin", "task_id": t, "timestamp": "2026-02-26T14:32:12+00:00",
                  "requires_ack": False, "payload": {"escalation_type": "';touch %s/pwned6;'" % d}}))
PY
	amp watch --once --exec "$REC; printf '%s' \"\$AMP_FROM\" > $N/from.\$AMP_NOTIFY_ATTEMPT.\$(calls=\$(ls $N | grep -c json); echo \$calls)" > /dev/null
	assert_equal "$(calls)" 3
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial pwned
	escalation_file "$E" | cmp - "$N/1.json"
	run cat "$N/from.1.2"
	assert_output "\$(touch $BATS_TEST_TMPDIR/pwned4)
\`touch $BATS_TEST_TMPDIR/pwned5\`"
	run grep AMP_ESCALATION_TYPE "$N/2.env"
	assert_output "AMP_ESCALATION_TYPE=';touch $BATS_TEST_TMPDIR/pwned6;'"
	run grep AMP_ESCALATION_TYPE "$N/3.env"
	assert_output "AMP_ESCALATION_TYPE=unknown"
}

@test "a failing command is reported, kept, retried after 1, 2, 4 s (AMP_NOW) and not before, and succeeds later" {
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	echo 1 > "$N/rc"
	at 10
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_output ""
	assert_equal "$stderr" "amp watch: notify: $REC exited 1 for escalation $E (attempt 1, next in 1s)"
	assert_equal "$(calls)" 1
	run json_get '[(p["msg_id"], p["attempts"], p["next_ms"], p["last_error"]) for p in d["pending"]]' < .git/amp/notify.json
	assert_output "[[\"$E\", 1, 1772116338000, \"exited 1\"]]"
	run amp watch --once --exec "$REC"
	assert_success
	assert_output ""
	assert_equal "$(calls)" 1
	at 11
	run --separate-stderr amp watch --once --json --exec "$REC"
	assert_success
	assert_output "{\"format\":{\"name\":\"watch\",\"version\":1},\"action\":\"notify_failed\",\"kind\":\"escalation\",\"msg_id\":\"$E\",\"task_id\":\"$T\",\"type\":\"escalation\",\"escalation_type\":\"conflict\",\"severity\":\"info\",\"attempt\":2,\"error\":\"exited 1\",\"retry_in_sec\":2}"
	assert_equal "$stderr" "amp watch: notify: $REC exited 1 for escalation $E (attempt 2, next in 2s)"
	at 12; amp watch --once --exec "$REC"
	assert_equal "$(calls)" 2
	at 13; amp watch --once --exec "$REC" 2> /dev/null
	assert_equal "$(calls)" 3
	rm "$N/rc"
	at 16; amp watch --once --exec "$REC"
	assert_equal "$(calls)" 3
	at 17
	run --separate-stderr amp watch --once --json --exec "$REC"
	assert_success
	assert_output "{\"format\":{\"name\":\"watch\",\"version\":1},\"action\":\"notified\",\"kind\":\"escalation\",\"msg_id\":\"$E\",\"task_id\":\"$T\",\"type\":\"escalation\",\"escalation_type\":\"conflict\",\"severity\":\"info\",\"attempt\":4}"
	assert_equal "$stderr" ""
	assert_equal "$(calls)" 4
	grep -qx AMP_NOTIFY_ATTEMPT=4 "$N/4.env"
	at 5000; amp watch --once --exec "$REC"
	assert_equal "$(calls)" 4
	run json_get 'd["pending"]' < .git/amp/notify.json
	assert_output "[]"
}

@test "a command that hangs is killed after amp.notifyTimeout, with what it started, and retried" {
	git config amp.notifyTimeout 1
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	start=$SECONDS
	run --separate-stderr amp watch --once --exec "echo \$\$ > $N/pid; sleep 5; touch $N/finished"
	assert_success
	[ $((SECONDS - start)) -le 4 ] || fail "the command ran $((SECONDS - start)) s"
	assert_equal "$stderr" "amp watch: notify: echo \$\$ > $N/pid; sleep 5; touch $N/finished timed out after 1 s (killed) for escalation $E (attempt 1, next in 1s)"
	# nothing of its process group lives on (a zombie waits for its reaper)
	run pgrep -a -r R,S,D,T -g "$(cat "$N/pid")"
	assert_failure
	assert_file_not_exists "$N/finished"
	at 1
	amp watch --once --exec "$REC"
	assert_equal "$(called_ids)" "$E"
}

@test "amp.notifyTimeout and amp.notifyMaxPending are range-checked; --exec-for needs a command and a role" {
	git config amp.notifyTimeout 0
	run amp watch --once --exec true
	assert_failure 2
	assert_output --partial "amp.notifyTimeout"
	git config amp.notifyTimeout 3601
	run amp watch --once --exec true
	assert_failure 2
	git config --unset amp.notifyTimeout
	git config amp.notifyMaxPending x
	run amp watch --once --exec true
	assert_failure 2
	assert_output --partial "amp.notifyMaxPending"
	git config --unset amp.notifyMaxPending
	run amp watch --once --exec-for executor
	assert_failure 2
	assert_output --partial "--exec-for needs a command"
	run amp watch --once --exec true --exec-for system
	assert_failure 2
	assert_output --partial "--exec-for: 'system' is not"
	run amp watch --once --exec true --no-exec
	assert_failure 2
	assert_file_not_exists .git/amp/notify.json
}

@test "enforcement happens when the command fails: the ack_timeout is written, the pass exits 0" {
	amp watch --once --exec "$REC" 2> /dev/null
	echo 7 > "$N/rc"
	send_dispatch
	at 301
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_output --regexp "^escalated ack_timeout $T $D "
	E=$(the_escalation ack_timeout)
	assert_equal "$stderr" "amp watch: notify: $REC exited 7 for escalation $E (attempt 1, next in 1s)"
	assert_escalation "$E" ack_timeout warning "[\"$D\"]" dispatched 0 false
}

@test "git config amp.notify: used without --exec; --exec wins; --no-exec leaves it and its state alone" {
	git config amp.notify "$REC"
	run amp watch --once
	assert_success
	assert_file_exists .git/amp/notify.json
	E1=$(amp escalate $T --from executor --type conflict --severity info --description "one")
	run amp watch --once --exec "echo option >> $N/option"
	assert_output "notified escalation conflict $T ($E1)"
	assert_equal "$(calls)" 0
	assert_equal "$(cat "$N/option")" option
	at 5
	E2=$(amp escalate $T --from executor --type conflict --severity info --description "two")
	cp .git/amp/notify.json "$BATS_TEST_TMPDIR/before"
	run amp watch --once --no-exec
	assert_success
	assert_output ""
	cmp .git/amp/notify.json "$BATS_TEST_TMPDIR/before"
	amp watch --once > /dev/null
	assert_equal "$(called_ids)" "$E2"
}

@test "--exec-for executor (or amp.notifyRole) notifies each new message to the executor, and only those" {
	amp watch --once --exec "$REC" --exec-for executor 2> /dev/null
	send_dispatch
	at 5; amp ack "$D" --from executor > /dev/null
	at 10; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	# (variables of the watcher's own environment named like ours do not leak)
	run env AMP_ESCALATION_TYPE=leaked AMP_SEVERITY=leaked amp watch --once --exec "$REC" --exec-for executor
	assert_success
	assert_output "notified message task_dispatch $T ($D)"
	run cat "$N/1.env"
	assert_output "AMP_FROM=coordinator
AMP_MSG_ID=$D
AMP_NOTIFY_ATTEMPT=1
AMP_NOTIFY_KIND=message
AMP_TASK_ID=$T
AMP_TO=executor
AMP_TYPE=task_dispatch"
	git show "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$D.json")" | cmp - "$N/1.json"
	# the role from git config; escalations are notified as well
	git config amp.notifyRole executor
	at 20
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	amp watch --once --exec "$REC" > /dev/null
	assert_equal "$(called_ids)" "$D
$E
$D2"
	grep -qx AMP_NOTIFY_KIND=escalation "$N/2.env"
}

@test "the queue keeps amp.notifyMaxPending notifications: the oldest are dropped, each reported" {
	git config amp.notifyMaxPending 2
	amp watch --once --exec "$REC" 2> /dev/null
	echo 1 > "$N/rc"
	E1=$(amp escalate $T --from executor --type conflict --severity info --description "1")
	at 1; E2=$(amp escalate $T --from executor --type conflict --severity info --description "2")
	at 2; E3=$(amp escalate $T --from executor --type conflict --severity info --description "3")
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_equal "${stderr_lines[0]}" "amp watch: notify: queue full (2 pending, git config amp.notifyMaxPending): dropped the notification of escalation $E1 (task $T)"
	assert_equal "${stderr_lines[1]}" "amp watch: notify: $REC exited 1 for escalation $E2 (attempt 1, next in 1s)"
	assert_equal "${#stderr_lines[@]}" 2
	# after a failure the pass tries no other notification
	assert_equal "$(called_ids)" "$E2"
	run json_get '[p["msg_id"] for p in d["pending"]]' < .git/amp/notify.json
	assert_output "[\"$E2\", \"$E3\"]"
	rm "$N/rc"
	at 10
	amp watch --once --exec "$REC"
	assert_equal "$(called_ids)" "$E2
$E2
$E3"
}

@test "a second watcher does not notify while the first holds notify.lock" {
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	run flock .git/amp/notify.lock amp watch --once --exec "$REC"
	assert_success
	assert_output ""
	assert_equal "$(calls)" 0
	amp watch --once --exec "$REC" > /dev/null
	assert_equal "$(called_ids)" "$E"
}

@test "an unusable notify.json is reported, and notifying starts again from the tip" {
	amp watch --once --exec "$REC" 2> /dev/null
	amp escalate $T --from executor --type conflict --severity info --description "lost" > /dev/null
	echo '{"version":1,' > .git/amp/notify.json
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	assert_equal "$stderr" "amp watch: notify: $PWD/.git/amp/notify.json is unreadable (string or '}' expected near end of file): notifying what arrives after $(git rev-parse refs/amp/messages)"
	assert_equal "$(calls)" 0
	at 5
	E=$(amp escalate $T --from executor --type conflict --severity info --description "new")
	amp watch --once --exec "$REC" > /dev/null
	assert_equal "$(called_ids)" "$E"
}

@test "SIGTERM stops a watcher in the middle of a command: the command is killed, the try does not count" {
	amp watch --once --exec "$REC" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	amp watch --interval 60 --exec "echo \$\$ > $N/pid; sleep 30" 2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	for _ in $(seq 100); do [ -s "$N/pid" ] && break; sleep 0.05; done
	kill -TERM $pid
	start=$SECONDS
	rc=0; wait $pid || rc=$?
	assert_equal "$rc" 0
	[ $((SECONDS - start)) -le 3 ] || fail "amp watch took $((SECONDS - start)) s to stop"
	run pgrep -a -r R,S,D,T -g "$(cat "$N/pid")"
	assert_failure
	run json_get '[(p["msg_id"], p["attempts"]) for p in d["pending"]]' < .git/amp/notify.json
	assert_output "[[\"$E\", 0]]"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
}
