# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Steps and checks for the enforcer suites (verdict, escalate, resume,
# watch).  Load after helpers and conversation.

PY=/usr/bin/python3

# Writes the payload of a rejected verdict to $BATS_TEST_TMPDIR/p/reject.json.
write_reject_payload() {
	cat > "$BATS_TEST_TMPDIR/p/reject.json" <<'JSON'
{
  "criteria_results": [
    {"criterion": "timing error < 500ms", "passed": false, "evidence": "the session is released by ARC"},
    {"criterion": "all tests passed", "passed": null, "evidence": "CI is still running"},
    {"criterion": "no memory leak", "passed": null, "evidence": "not measured"}
  ],
  "issues": [
    {"severity": "critical", "file": "BreathEngine.swift", "line": 87,
     "description": "No session reference is held after session.start()",
     "suggested_fix": "Keep the session in a property"}
  ]
}
JSON
}

# review_round N: the executor's result (ACKed), then a review request with
# reject_count N (ACKed); sets R and Q.  After a rejection, a new dispatch
# (ACKed) starts the round first, as the transition table wants; it sets D.
# Uses the current AMP_NOW.
review_round() {
	local n=$1 notes=""
	if [ "$(amp status "$T" --json | json_get '[s["state"] for s in d["subtasks"]][:1]')" = '["rejected"]' ]; then
		# the verdict that locked the task could not be ACKed before the resume
		[ -z "${V:-}" ] || amp ack "$V" --from coordinator > /dev/null || return 1
		send_dispatch || return 1
		amp ack "$D" --from executor > /dev/null || return 1
	fi
	R=$(amp send task_result --task "$T" --from executor --payload "$BATS_TEST_TMPDIR/p/result.json") || return 1
	amp ack "$R" --from coordinator > /dev/null || return 1
	[ "$n" -ge 2 ] && notes=', "coordinator_notes": "Lock is approaching: two rejects already"'
	cat > "$BATS_TEST_TMPDIR/p/rr.json" <<JSON
{"original_dispatch_ref": "$D", "task_result_ref": "$R", "review_scope": "full",
 "diff_url": "https://example.invalid/compare/main...feature/watch-breath-v2", "reject_count": $n$notes}
JSON
	Q=$(amp send review_request --task "$T" --from coordinator --payload "$BATS_TEST_TMPDIR/p/rr.json") || return 1
	amp ack "$Q" --from reviewer > /dev/null
}

# task_state [TASK]: the task's state, as amp status --json says it.
# The argument is optional; the bats files pass it (SC2120).
# shellcheck disable=SC2120
task_state() {
	amp status "${1:-$T}" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}

# redispatch_if_rejected: a rejected subtask takes no result, so the
# coordinator re-dispatches it (a new round) and the executor ACKs; sets D.
redispatch_if_rejected() {
	[ "$(task_state)" = rejected ] || return 0
	[ -z "${V:-}" ] || amp ack "$V" --from coordinator > /dev/null || return 1
	send_dispatch || return 1
	amp ack "$D" --from executor > /dev/null
}

# reject_rounds K [START]: K rounds each ending in a rejected verdict (ACKed,
# but for one that locks the task with it: AMP/1.0 Critical = Suspend All
# refuses the ACK until the resume), AMP_NOW moving 100 s a round from START
# (default 10); sets V to the last.
reject_rounds() {
	local k=$1 t=${2:-10} i base
	base=$(amp status "$T" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["reject_count"])')
	write_reject_payload
	for ((i = 0; i < k; i++)); do
		at $((t + i * 100)); review_round $((base + i)) || return 1
		at $((t + i * 100 + 50))
		V=$(amp verdict "$T" --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json") || return 1
		amp ack "$V" --from coordinator > /dev/null 2>&1 ||
			[ "$(amp status "$T" --json | json_get 'd["state"]')" = locked ] || return 1
	done
}

# plant_reject [malformed] [CONFIDENCE]: a rejecting verdict of the reviewer answering $Q,
# dated AMP_NOW, committed by hand as a fetch brings it (no lock comes with
# it); "malformed": without criteria_results, so not schema-valid.  Sets V.
plant_reject() {
	V=review_verdict-$T-$(($(date -u -d "$AMP_NOW" +%s) * 1000))
	write_reject_payload
	$PY - "$V" "$T" "$AMP_NOW" "$Q" "$BATS_TEST_TMPDIR/p/reject.json" "${1:-}" "${2:-0.9}" <<'PY' | plant "$(next_path "$T" "$V")"
import json, sys
v, t, now, q, payload, malformed, confidence = sys.argv[1:]
p = json.load(open(payload))
p.update(decision="rejected", confidence=float(confidence))
if malformed:
    del p["criteria_results"]
print(json.dumps({"msg_id": v, "protocol_version": "AMP/1.0", "type": "review_verdict",
                  "from": "reviewer", "to": "coordinator", "task_id": t, "timestamp": now,
                  "requires_ack": True, "ack_timeout_sec": 60, "context_ref": [q], "payload": p}, indent=2))
PY
}

# dispatch_acked: the dispatch, ACKed by the executor 5 s later; sets D.
dispatch_acked() {
	send_dispatch
	at 5; amp ack "$D" --from executor > /dev/null
}

# jq-like access to the JSON on stdin: json_get 'd["state"]'.
json_get() {
	$PY -c 'import json,sys; d=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1"
}

# escalations [TASK]: the escalations of the task as amp status --json lists them.
escalations() {
	amp status "${1:-$T}" --json | json_get 'd["escalations"]'
}

# escalation_count TYPE [TASK]
escalation_count() {
	amp status "${2:-$T}" --json | json_get "len([e for e in d['escalations'] if e['escalation_type'] == '$1'])"
}

# escalation_file MSG_ID: the stored escalation, from the messages ref.
escalation_file() {
	local path
	path=$(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$1.json") || return 1
	git show "refs/amp/messages:$path"
}

# the_escalation TYPE [TASK]: the msg_id of the only escalation of TYPE.
the_escalation() {
	amp status "${2:-$T}" --json |
		json_get "[e['msg_id'] for e in d['escalations'] if e['escalation_type'] == '$1'][0]"
}

# assert_escalation MSG_ID TYPE SEVERITY AFFECTED_JSON TASK_STATUS REJECTS AUTO_SUSPENDED
# checks the stored escalation field by field.
assert_escalation() {
	local doc
	doc=$(escalation_file "$1") || fail "no escalation $1 in the SSOT"
	run $PY -c '
import json, sys
d = json.loads(sys.argv[1])
p = d["payload"]; s = p["system_state_snapshot"]
got = [p["escalation_type"], p["severity"], json.dumps(p["affected_msgs"]),
       s["task_status"], str(s["reject_count"]), json.dumps(p["auto_suspended"])]
names = ["type", "severity", "affected_msgs", "task_status", "reject_count", "auto_suspended"]
for w, g, what in zip(sys.argv[2:], got, names):
    if w != g:
        sys.exit(f"{what}: want {w}, got {g}")
if d["to"] != "admin" or d["type"] != "escalation":
    sys.exit("not an escalation to the admin")
' "$doc" "$2" "$3" "$4" "$5" "$6" "$7"
	[ "$status" -eq 0 ] || fail "escalation $1: $output"
}

# plant PATH: commits stdin at PATH on the messages ref with git plumbing,
# as a fetch or an older amp would have, bypassing amp send.  The commit is
# dated $GIT_COMMITTER_DATE when set, else $AMP_NOW (amp watch measures
# deadlines from the commit that brought a record, too).
plant() {
	local idx=$BATS_TEST_TMPDIR/plant.idx blob tree commit when=${GIT_COMMITTER_DATE:-$AMP_NOW}
	[[ $when =~ ^[0-9]+$ ]] && when="@$when"
	blob=$(git hash-object -w --stdin)
	GIT_INDEX_FILE=$idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$blob,$1"
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	commit=$(GIT_COMMITTER_DATE=$when git commit-tree "$tree" -p refs/amp/messages -m "fetched: $1")
	git update-ref refs/amp/messages "$commit"
	rm -f "$idx"
}

# next_path TASK ID [KIND]: where the next record of TASK goes.
next_path() {
	local n
	n=$(git ls-tree -r --name-only "refs/amp/messages:$(task_path "$1")" 2>/dev/null | wc -l)
	record_path "$1" "$(printf '%06d.%s.%s.json' $((n + 1)) "${3:-msg}" "$2")"
}

# watch_loop_stopped_by SIG: runs `amp watch --interval 1` in the background
# until its first escalation, sends it SIG and sets rc to its exit code
# (fails when it is still running 10 s later).  Its output is in loop.out.
watch_loop_stopped_by() {
	local pid
	amp watch --interval 1 > "$BATS_TEST_TMPDIR/loop.out" 2>&1 &
	pid=$!
	for _ in $(seq 200); do grep -q escalated "$BATS_TEST_TMPDIR/loop.out" && break; sleep 0.05; done
	kill -"$1" $pid
	for _ in $(seq 100); do kill -0 $pid 2> /dev/null || break; sleep 0.1; done
	if kill -0 $pid 2> /dev/null; then
		kill -KILL $pid
		echo "amp watch did not stop on SIG$1" >&2
		return 1
	fi
	rc=0
	wait $pid || rc=$?
}
