# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Steps and checks for the transition-table suites (60-transitions,
# 62-approve-abort): one subtask driven to each state of lib/protocol/task.c's
# amp_transitions[] through the real commands.  Load after helpers,
# conversation and enforcer.

S1=$T-S1
S2=$T-S2

# sub SUBTASK FIELD [TASK]: FIELD of the subtask in `amp status --json`
# (subtask_id, state, round, dispatch, result, review_request, verdict,
# rejects); "null" when it is null.
sub() {
	amp status "${3:-$T}" --json |
		json_get "[s['$2'] for s in d['subtasks'] if s['subtask_id'] == '$1'][0]"
}

# task_field FIELD [TASK]: a member of `amp status --json`.
task_field() {
	amp status "${2:-$T}" --json | json_get "d['$1']"
}

# assert_sub SUBTASK STATE [ROUND]: the subtask is in STATE (and ROUND).
assert_sub() {
	local got
	got=$(sub "$1" state) || fail "no subtask $1 in amp status"
	[ "$got" = "$2" ] || fail "subtask $1 is $got, not $2"
	[ -z "${3:-}" ] || [ "$(sub "$1" round)" = "$3" ] ||
		fail "subtask $1 is in round $(sub "$1" round), not $3"
}

# refused RULE STATE CMD...: CMD exits 3, prints nothing on stdout and names
# RULE and "is STATE" (unless STATE is empty) on stderr; the messages ref gets no commit (but
# $MSG_COMMITS, default 0, when an escalation goes with the refusal) and the
# errors ref one.
refused() {
	local rule=$1 state=$2 m e
	shift 2
	m=$(commit_count)
	e=$(error_count)
	run --separate-stderr "$@"
	[ "$status" -eq 3 ] || fail "exit $status, not 3: $stderr"
	[ -z "$output" ] || fail "a refusal printed on stdout: $output"
	[[ $stderr == *"$rule"* ]] || fail "stderr does not name the rule '$rule': $stderr"
	[ -z "$state" ] || [[ $stderr == *"is $state"* ]] || fail "stderr does not name the state '$state': $stderr"
	[ "$(commit_count)" -eq $((m + ${MSG_COMMITS:-0})) ] ||
		fail "the messages ref went from $m to $(commit_count) commits"
	[ "$(error_count)" -eq $((e + 1)) ] ||
		fail "the errors ref went from $e to $(error_count) commits, not one more"
}

# allowed CMD...: CMD exits 0 and writes one commit on the messages ref and
# none on the errors ref; its stdout is in $output.
allowed() {
	local m e
	m=$(commit_count)
	e=$(error_count)
	run --separate-stderr "$@"
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	[ "$(commit_count)" -eq $((m + 1)) ] ||
		fail "the messages ref went from $m to $(commit_count) commits, not one more"
	[ "$(error_count)" -eq "$e" ] || fail "the errors ref got a commit"
}

# The payloads of the steps below.
P() { echo "$BATS_TEST_TMPDIR/p/$1"; }

# A copy of dispatch.json (or $2) at risk level $1: dispatch-$1.json.
risk_payload() {
	sed "s/\"risk_level\": \"medium\"/\"risk_level\": \"$1\"/" "$(P "${2:-dispatch.json}")" > "$(P "dispatch-$1.json")"
	P "dispatch-$1.json"
}

# dispatch [PAYLOAD]: a dispatch from the coordinator; sets D.
dispatch() {
	D=$(amp send task_dispatch --task "$T" --from coordinator --to executor --payload "$(P "${1:-dispatch.json}")")
}

# result [PAYLOAD]: the executor's task_result; sets R.
# The argument is optional; the bats files pass it (SC2120).
# shellcheck disable=SC2120
result() {
	R=$(amp send task_result --task "$T" --from executor --payload "$(P "${1:-result.json}")")
}

# request DISPATCH RESULT [REJECTS]: the coordinator's review_request (the
# Lock Warning from two rejects on); sets Q.
request() {
	local notes=""
	[ "${3:-0}" -ge 2 ] && notes=', "coordinator_notes": "Lock is approaching: two rejects already"'
	cat > "$(P rr.json)" <<JSON
{"original_dispatch_ref": "$1", "task_result_ref": "$2", "review_scope": "full",
 "diff_url": "https://example.invalid/compare/main...feature/watch-breath-v2", "reject_count": ${3:-0}$notes}
JSON
	Q=$(amp send review_request --task "$T" --from coordinator --payload "$(P rr.json)")
}

# verdict DECISION [REQUEST]: the reviewer's verdict (rejected: with
# issues); sets V.
verdict() {
	local payload=verdict.json
	[ "$1" = rejected ] && write_reject_payload && payload=reject.json
	V=$(amp verdict "$T" --decision "$1" --confidence 0.9 --payload "$(P $payload)" ${2:+--context-ref "$2"})
}

# The subtask S1 in each state, AMP_NOW moving on; D, R, Q, V as set above.
to_dispatched() { at 0; dispatch; }
to_in_progress() { to_dispatched && at 5 && amp ack "$D" --from executor > /dev/null; }
to_submitted() { to_in_progress && at 10 && result; }
to_in_review() {
	to_submitted && amp ack "$R" --from coordinator > /dev/null &&
		at 15 && request "$D" "$R" && amp ack "$Q" --from reviewer > /dev/null
}
to_approved() { to_in_review && at 20 && verdict approved; }
to_rejected() { to_in_review && at 20 && verdict rejected; }
to_awaiting_approval() { at 0; dispatch "$(basename "$(risk_payload high)")"; }

# review_ready N: round N+1 up to its review, N rejects before it: a
# dispatch (a new round after the first), its ACK, a result (ACKed), a
# review_request (ACKed).  AMP_NOW moves 100 s a round from 1000.  Sets D,
# R, Q.
review_ready() {
	local t=$((1000 + $1 * 100))
	at $t; dispatch || return 1
	at $((t + 5)); amp ack "$D" --from executor > /dev/null || return 1
	at $((t + 10)); result || return 1
	amp ack "$R" --from coordinator > /dev/null || return 1
	at $((t + 15)); request "$D" "$R" "$1" || return 1
	amp ack "$Q" --from reviewer > /dev/null
}

# reject_round N: review_ready N, then the rejected verdict 5 s later; sets
# V too.
reject_round() {
	review_ready "$1" || return 1
	at $((1000 + $1 * 100 + 20)); verdict rejected
}

# envelope OFFSET [TASK]: the path of a whole task_dispatch envelope whose
# timestamp (and msg_id) is AMP_NOW + OFFSET seconds, as another machine's
# clock would date it.
envelope() {
	local out=$BATS_TEST_TMPDIR/envelope$1.json
	$PY - "$AMP_NOW" "$1" "${2:-$T}" "$(P dispatch.json)" > "$out" <<'PY' || return 1
import datetime, json, sys
t = datetime.datetime.fromisoformat(sys.argv[1]) + datetime.timedelta(seconds=int(sys.argv[2]))
task = sys.argv[3]
print(json.dumps({"msg_id": f"task_dispatch-{task}-{int(t.timestamp()) * 1000}",
                  "protocol_version": "AMP/1.0", "type": "task_dispatch",
                  "from": "coordinator", "to": "executor", "task_id": task,
                  "timestamp": t.isoformat(), "requires_ack": True, "ack_timeout_sec": 300,
                  "payload": json.load(open(sys.argv[4]))}, indent=2))
PY
	echo "$out"
}

# head_files: the files the tip commit of the messages ref adds, one a line.
head_files() {
	git show --name-only --format= refs/amp/messages
}
