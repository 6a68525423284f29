#!/usr/bin/env bats
# Issue 7, the enforcer and the store under damage: a bad object spoils one
# record or one task, never the enforcement of the others (defect 4); every
# escalation has a stable cause, so "once" holds for records without a
# msg_id too (defect 5); temporary object files left by a killed writer are
# cleaned up (defect 10).

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

T2=T-2026-045
T3=T-2026-046

# dispatch_to TASK: a dispatch of TASK at the current AMP_NOW; prints its msg_id.
dispatch_to() {
	amp send task_dispatch --task "$1" --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
}

# object_file PATH: the loose object file of the blob or tree at PATH on the
# messages ref.
object_file() {
	local id
	loosen_objects || return 1
	id=$(git rev-parse "refs/amp/messages:$1") || return 1
	echo ".git/objects/${id:0:2}/${id:2}"
}

# record_named TASK NAME_PART: the path of the record of TASK whose name holds NAME_PART.
record_named() {
	git ls-tree -r --name-only refs/amp/messages "$(task_path "$1")/" | grep -F -- "$2"
}

# unknown_records: the record paths the unknown escalations of $T name, sorted.
unknown_records() {
	amp status $T --json | json_get "'\n'.join(sorted(e['description'].split(': ')[0] for e in d['escalations'] if e['escalation_type'] == 'unknown'))"
}

# watch_reports_broken_once: with $T2's directory unreadable (tree
# $tree_id), a pass escalates $T's overdue dispatch $D, reports $T2 on stderr
# and exits 4; the next pass is silent and succeeds.
watch_reports_broken_once() {
	run --separate-stderr amp watch --once
	assert_failure 4
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	[[ $stderr == "amp watch: error: cannot read the task directory $(task_path "$T2"), tree $tree_id: "*"; task $T2 is skipped until it can be read" ]] ||
		fail "stderr: $stderr"
	run --separate-stderr amp watch --once
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
}

@test "defect 4: a missing or corrupt blob spoils its record only; every task is still read and enforced" {
	send_dispatch
	D2=$(dispatch_to $T2)
	D3=$(dispatch_to $T3)
	at 5; A2=$(amp ack "$D2" --from executor)
	# T2: the ACK's blob is overwritten with garbage; T3: the dispatch's blob is gone
	f=$(object_file "$(record_named $T2 ".ack.$D2")")
	chmod u+w "$f"; echo garbage > "$f"
	rm -f "$(object_file "$(record_named $T3 "$D3")")"
	fsck_exempt . "a blob overwritten and one removed on purpose"
	at 400
	run amp status
	assert_success
	assert_line --regexp "^$T +dispatched +1 msgs  0 rejects  ACK overdue$"
	assert_line --regexp "^$T2 +dispatched +1 msgs  0 rejects  ACK overdue  1 unreadable$"
	assert_line --regexp "^$T3 +new +0 msgs  0 rejects  1 unreadable$"
	run amp status --json
	assert_success
	assert_equal "$(echo "$output" | json_get '[(t["task_id"], t["unreadable"]) for t in d["tasks"]]')" \
		"[[\"$T\", 0], [\"$T2\", 1], [\"$T3\", 1]]"
	run amp status $T3
	assert_success
	assert_output --regexp "unreadable record 000001\.msg\.$D3\.json: cannot read blob [0-9a-f]{40}"
	run amp status $T2 --json
	assert_success
	assert_output --partial "\"name\": \"000002.ack.$D2.json\""
	run amp watch --once
	assert_success
	assert_line --partial "escalated ack_timeout $T $D "
	assert_line --partial "escalated ack_timeout $T2 $D2 "
	assert_line --partial "escalated unknown $T2 $D2 "
	assert_line --partial "escalated unknown $T3 $D3 "
	assert_equal "${#lines[@]}" 4
	run escalation_file "$(the_escalation unknown $T3)"
	assert_output --partial "amp watch cannot use $(record_path "$T3" 000001.msg.$D3.json): cannot read blob"
	run amp watch --once --full
	assert_success
	assert_output ""
	# the task goes on: its unreadable records stay unreadable, new ones are written
	run amp escalate $T3 --from executor --type unknown --severity info --description "lost my dispatch"
	assert_success
	assert_equal "$(escalation_count unknown $T3)" 2
}

@test "defect 4: a task directory that cannot be read is reported once and skipped; the other tasks are still enforced" {
	send_dispatch
	D2=$(dispatch_to $T2)
	tree=$(object_file "$(task_path "$T2")")
	tree_id=$(git rev-parse "refs/amp/messages:$(task_path "$T2")")
	mv "$tree" "$BATS_TEST_TMPDIR/tree.saved"
	at 400
	watch_reports_broken_once
	at 500
	run --separate-stderr amp watch --once
	assert_success
	assert_equal "$stderr" ""
	# status lists every task, the broken one as unreadable, and exits 4
	run --separate-stderr amp status
	assert_failure 4
	assert_line --index 0 --regexp "^$T +dispatched +2 msgs"
	assert_line --index 1 --regexp "^$T2 +unreadable  cannot read the task directory $(task_path "$T2"), tree $tree_id"
	assert_equal "${#lines[@]}" 2
	[[ $stderr == "amp status: error: cannot read the task directory $(task_path "$T2"), tree $tree_id"* ]] || fail "stderr: $stderr"
	run --separate-stderr amp status --json
	assert_failure 4
	assert_equal "$(echo "$output" | json_get '[(t["task_id"], t["state"], t.get("reason", "")[:41]) for t in d["tasks"]]')" \
		"[[\"$T\", \"dispatched\", \"\"], [\"$T2\", \"unreadable\", \"cannot read the task directory tasks/2026\"]]"
	run amp status $T2
	assert_failure 4
	assert_output --partial "cannot read the task directory $(task_path "$T2"), tree $tree_id"
	# the healthy task is still written to
	run amp ack "$D" --from executor
	assert_success
	# repaired: the next pass reads the task whole and enforces it
	mv "$BATS_TEST_TMPDIR/tree.saved" "$tree"
	run --separate-stderr amp watch --once
	assert_success
	assert_output --regexp "^escalated ack_timeout $T2 $D2 "
	assert_equal "$stderr" ""
	run amp status
	assert_success
}

@test "defect 4: a task directory that breaks after watch set its timers is reported once; the other tasks are still enforced" {
	send_dispatch
	D2=$(dispatch_to $T2)
	at 10
	run amp watch --once
	assert_success
	tree_id=$(git rev-parse "refs/amp/messages:$(task_path "$T2")")
	rm "$(object_file "$(task_path "$T2")")"
	fsck_exempt . "a tree removed on purpose"
	at 400
	watch_reports_broken_once
}

@test "defect 4: a directory under tasks/ whose name is no task id is reported once and skipped" {
	local shard
	send_dispatch
	shard=$(dirname "$(task_path "$T")")
	echo '{}' | plant "$shard/T-2026-04x/000001.msg.x.json"
	at 400
	run --separate-stderr amp watch --once
	assert_failure 4
	assert_output --regexp "^escalated ack_timeout $T $D "
	assert_equal "$stderr" "amp watch: error: $shard/T-2026-04x: not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped"
	run --separate-stderr amp watch --once
	assert_success
	assert_equal "$stderr" ""
	# issue 30: every command that lists tasks reports it and skips it
	run --separate-stderr amp status --json
	assert_failure 4
	assert_equal "$(echo "$output" | json_get '[(t["task_id"], t["state"]) for t in d["tasks"]]')" "[[\"$T\", \"dispatched\"]]"
	assert_equal "$stderr" "amp status: error: $shard/T-2026-04x: not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped"
}

@test "a record whose file name is not UTF-8 is escalated once as unknown: by the pass that finds it, by later passes over its task, by --full" {
	send_dispatch
	run -0 amp watch --once
	local dir
	dir=$(dirname "$(record_path "$T" 000002.x.json)")
	echo '{"hello": "world"}' | plant "$dir/000002.msg.task_dispatch-$T-"$'\xff\xfe'".json"
	run -0 amp watch --once
	assert_output --regexp "^escalated unknown $T $dir/000002.msg.task_dispatch-$T-"'\\\\xff\\\\xfe'"\.json "
	# the task read again by a later write, and the whole history
	dispatch_to $T > /dev/null
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
	run -0 amp watch --once --full
	refute_output --partial "escalated unknown"
	unknowns=$(amp status $T --json | json_get '[e["description"] for e in d["escalations"] if e["escalation_type"] == "unknown"]')
	assert_equal "$unknowns" "[\"amp watch cannot use $(record_path "$T" 000002.msg.task_dispatch-$T-\\\\xff\\\\xfe.json): its name holds no msg_id. Fix or supersede the record; agents must not act on it (No Silent Failure).\"]"
}

@test "defect 4: a misplaced record asking for an ACK, dispatching to main, spoils nothing else" {
	send_dispatch
	# no msg_id in its name: neither branch_violation nor ack_timeout can name it
	plant "$(record_path "$T2" 000001.msg.junk.json)" <<JSON
{"msg_id": "junk", "protocol_version": "AMP/1.0", "type": "task_dispatch", "from": "coordinator", "to": "executor",
 "task_id": "$T2", "timestamp": "2026-02-26T14:32:07+00:00", "requires_ack": true, "ack_timeout_sec": 60,
 "payload": {"branch": "main"}}
JSON
	at 400
	for pass in 1 2; do
		run amp watch --once
		assert_success
		[ "$pass" = 2 ] && assert_output "" && continue
		assert_line --partial "escalated ack_timeout $T $D "
		assert_line --regexp "^escalated unknown $T2 $(record_path "$T2" 000001\.msg\.junk\.json) "
		assert_equal "${#lines[@]}" 2
	done
	run escalation_file "$(the_escalation unknown $T2)"
	assert_output --partial "000001.msg.junk.json: its name holds no msg_id"
	assert_equal "$(escalation_count branch_violation $T2)" 0
}

@test "defect 5: every bad record is escalated exactly once, across --full passes and a lost state" {
	send_dispatch
	local B=task_result-$T-1772116400000
	# an unreadable message, its unreadable ACK (same msg_id, another
	# record), an unreadable control record, a record whose name is not a
	# msg_id, and a schema-invalid message, all as a fetch brings them
	printf '{"msg_id": "%s", "type": "task_res' "$B" | plant "$(next_path $T $B)"
	printf 'garbage' | plant "$(next_path $T $B ack)"
	printf '{"type": "resu' | plant "$(next_path $T resume-1772116400000 ctl)"
	echo '{"hello": "world"}' | plant "$(next_path $T not-a-msg-id)"
	local C=task_result-$T-1772116500000
	plant "$(next_path $T $C)" <<JSON
{"msg_id": "$C", "protocol_version": "AMP/1.0", "type": "task_result", "from": "executor", "to": "coordinator",
 "task_id": "$T", "timestamp": "2026-02-26T14:35:00+00:00", "requires_ack": true,
 "payload": {"subtask_id": "T-2026-044-S1", "completion_status": "done"}}
JSON
	local dir want
	dir=$(dirname "$(record_path "$T" 000002.x.json)")
	want=$(printf '%s\n' "$dir/000002.msg.$B.json" "$dir/000003.ack.$B.json" \
		"$dir/000004.ctl.resume-1772116400000.json" "$dir/000005.msg.not-a-msg-id.json" \
		"$dir/000006.msg.$C.json" | sort)
	at 10
	run amp watch --once
	assert_success
	assert_equal "$(grep -c '^escalated unknown ' <<< "$output")" 5
	assert_line --regexp "^escalated unknown $T $dir/000004\.ctl\.resume-1772116400000\.json "
	assert_line --regexp "^escalated unknown $T $dir/000005\.msg\.not-a-msg-id\.json "
	assert_equal "$(unknown_records)" "amp watch cannot use ${want//$'\n'/$'\n'amp watch cannot use }"
	for pass in 1 2 3; do
		run amp watch --once --full
		assert_success
		assert_output ""
	done
	rm .git/amp/watch.json
	run amp watch --once
	assert_success
	assert_output ""
	assert_equal "$(escalation_count unknown)" 5
	# the cause travels in the commit too
	run git log --format=%B refs/amp/messages
	assert_output --partial "Amp-Cause: unknown $dir/000004.ctl.resume-1772116400000.json"
}

@test "defect 10: stale tmp_object_git2_* files (and an import's tmp_amp_pack_*) are removed by the next write, fresh ones never" {
	local objects=.git/objects
	: > "$objects/tmp_object_git2_old"
	: > "$objects/tmp_object_git2_young"
	: > "$objects/tmp_object_other"
	mkdir -p "$objects/pack"
	: > "$objects/pack/tmp_amp_pack_old"
	: > "$objects/pack/tmp_amp_pack_young"
	touch -d '2 hours ago' "$objects/pack/tmp_amp_pack_old"
	touch -d '50 minutes ago' "$objects/pack/tmp_amp_pack_young"
	: > .git/amp/watch.json.4242.tmp
	: > .git/amp/watch.json.4243.tmp
	: > .git/amp/inbox.json.4244.tmp
	: > .git/amp/inbox.json.4245.tmp
	touch -d '2 hours ago' "$objects/tmp_object_git2_old" "$objects/tmp_object_other" \
		.git/amp/watch.json.4242.tmp .git/amp/inbox.json.4244.tmp
	touch -d '50 minutes ago' "$objects/tmp_object_git2_young"
	rm -f .git/amp/objects-swept
	# reading never deletes
	run amp status
	run amp watch --once
	assert_file_exists "$objects/tmp_object_git2_old"
	send_dispatch
	assert_file_not_exists "$objects/tmp_object_git2_old"
	assert_file_not_exists "$objects/pack/tmp_amp_pack_old"
	assert_file_exists "$objects/pack/tmp_amp_pack_young"
	assert_file_not_exists .git/amp/watch.json.4242.tmp
	assert_file_not_exists .git/amp/inbox.json.4244.tmp
	assert_file_exists .git/amp/inbox.json.4245.tmp
	assert_file_exists "$objects/tmp_object_git2_young"
	assert_file_exists "$objects/tmp_object_other"
	assert_file_exists .git/amp/watch.json.4243.tmp
	assert_file_exists .git/amp/objects-swept
	# at most one sweep an hour: the stamp says when the last one was
	: > "$objects/tmp_object_git2_old2"
	touch -d '3 hours ago' "$objects/tmp_object_git2_old2"
	amp ack "$D" --from executor
	assert_file_exists "$objects/tmp_object_git2_old2"
	touch -d '61 minutes ago' .git/amp/objects-swept
	at 10
	amp escalate $T --from executor --type unknown --severity info --description "x" > /dev/null
	assert_file_not_exists "$objects/tmp_object_git2_old2"
	assert_file_exists "$objects/tmp_object_git2_young"
	assert_fsck_clean
}

@test "a misplaced record never makes the state: its one escalation conforms, and escalations do not cascade" {
	# found by fuzz_store (test/fuzz/regressions/store/watch-unknown-record-without-msg-id):
	# a dispatch-shaped record named "x" became the task's last successful
	# message, every escalation's snapshot named "x", which no msg_id is,
	# and each pass escalated the escalation before it
	plant "$(record_path "$T2" 000001.msg.x.json)" <<JSON
{"protocol_version": "AMP/1.0", "type": "task_dispatch", "ack_for": "task_dispatch-$T2-1772116327000",
 "task_id": "$T2", "from": "executor", "to": "coordinator", "timestamp": "2026-02-26T14:33:10+00:00"}
JSON
	at 1800
	for pass in 1 2 3; do
		run amp watch --once --full
		assert_success
		if [ "$pass" = 1 ]; then
			assert_output --regexp "^escalated unknown $T2 $(record_path "$T2" 000001\.msg\.x\.json) \(escalation-$T2-[0-9]+\)$"
		else
			assert_output ""
		fi
	done
	run amp status $T2 --json
	assert_success
	assert_equal "$(echo "$output" | json_get '[d["state"], d.get("last_successful_msg_id"), len(d["escalations"])]')" \
		'["new", null, 1]'
	# what amp wrote conforms to the schema
	git show "refs/amp/messages:$(record_named $T2 .msg.escalation-)" > "$BATS_TEST_TMPDIR/esc.json"
	run amp validate "$BATS_TEST_TMPDIR/esc.json"
	assert_success
}

@test "an ACK whose message is not in the SSOT is escalated once as unknown, naming no message" {
	# found by replaying the fuzz corpus after the affected_msgs rule: the
	# escalation named the missing message, the rule refused it, and every
	# pass failed with exit 4
	send_dispatch
	local M=task_dispatch-$T-1740576727001
	plant "$(next_path $T $M ack)" <<JSON
{"protocol_version": "AMP/1.0", "type": "ack", "ack_for": "$M", "task_id": "$T",
 "from": "executor", "to": "coordinator", "timestamp": "2026-02-26T14:33:10+00:00"}
JSON
	at 60
	for pass in 1 2; do
		run amp watch --once --full
		assert_success
		[ "$pass" = 2 ] && { assert_output ""; continue; }
		assert_output --regexp "^escalated unknown $T $(record_path "$T" 000002\.ack\.$M\.json) \(escalation-$T-[0-9]+\)$"
	done
	run amp status $T --json
	assert_equal "$(echo "$output" | json_get '[e["affected_msgs"] for e in d["escalations"]]')" '[[]]'
	# an ACK of a message that is there, but not by its addressee
	plant "$(next_path $T $D ack)" <<JSON
{"protocol_version": "AMP/1.0", "type": "ack", "ack_for": "$D", "task_id": "$T",
 "from": "reviewer", "to": "coordinator", "timestamp": "2026-02-26T14:33:10+00:00"}
JSON
	run amp watch --once
	assert_success
	assert_output --regexp "^escalated unknown $T $D \(escalation-$T-[0-9]+\)$"
	amp status $T --json | json_get 'd["escalations"][-1]["description"]' > "$BATS_TEST_TMPDIR/why"
	assert_file_contains "$BATS_TEST_TMPDIR/why" "only the addressee (executor) may ACK"
}

@test "schemas that cannot be loaded: the pass fails, says so once, and the next pass checks every record" {
	local n id before
	for n in 050 051 052; do
		id="task_dispatch-T-2026-$n-1772116327000"
		$PY - "$id" "T-2026-$n" "$BATS_TEST_TMPDIR/p/dispatch.json" <<'PY' | plant "$(next_path "T-2026-$n" "$id")"
import json, sys
payload = json.load(open(sys.argv[3]))
if sys.argv[2].endswith("052"):
    del payload["acceptance_criteria"]  # not a valid dispatch
print(json.dumps({"protocol_version": "AMP/1.0", "msg_id": sys.argv[1], "type": "task_dispatch",
                  "from": "coordinator", "to": "executor", "task_id": sys.argv[2],
                  "timestamp": "2026-02-26T14:32:07+00:00", "requires_ack": True,
                  "payload": payload}))
PY
	done
	before=$(commit_count)
	AMP_SCHEMA_DIR=$BATS_TEST_TMPDIR/none run --separate-stderr amp watch --once --full
	[ "$status" -eq 4 ]
	[ "$(grep -c 'schema' <<< "$stderr")" -eq 1 ]
	[ "$(commit_count)" -eq "$before" ]
	# without --full: the failed pass kept no state, so this one reads
	# every record and finds the bad one
	run -0 amp watch --once
	assert_output --partial "T-2026-052"
	[ "$(commit_count)" -gt "$before" ]
}
