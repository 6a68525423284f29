#!/usr/bin/env bats
# Payload help for agents (issue 13): amp send TYPE --template prints an
# example payload made from the type's schema that amp send takes as it
# is, and amp schema prints the schemas.

bats_require_minimum_version 1.5.0

load helpers
load conversation

TYPES="task_dispatch task_result review_request review_verdict escalation"

setup() {
	make_ssot
}

@test "every type's template is pure JSON its payload schema accepts, with every required member" {
	for t in $TYPES; do
		run -0 --separate-stderr amp send "$t" --template
		printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/$t.json"
		# in a whole message, as amp send validates it
		python3 - "$t" "$BATS_TEST_TMPDIR/$t.json" > "$BATS_TEST_TMPDIR/$t.msg.json" <<'PY'
import json, sys
t = sys.argv[1]
roles = {"task_dispatch": ("coordinator", "executor"), "task_result": ("executor", "coordinator"),
         "review_request": ("coordinator", "reviewer"), "review_verdict": ("reviewer", "coordinator"),
         "escalation": ("executor", "admin")}
print(json.dumps({"msg_id": t + "-T-2026-050-1772116327000", "protocol_version": "AMP/1.0", "type": t,
                  "from": roles[t][0], "to": roles[t][1], "task_id": "T-2026-050",
                  "timestamp": "2026-02-26T14:32:07+00:00", "requires_ack": True,
                  "payload": json.load(open(sys.argv[2]))}))
PY
		run -0 amp validate "$BATS_TEST_TMPDIR/$t.msg.json"
		assert_output "$BATS_TEST_TMPDIR/$t.msg.json: ok"
		run -0 python3 -c '
import json, sys
schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
missing = [k for k in schema["required"] if k not in doc]
extra = [k for k in doc if k not in schema["required"]]
print(missing, extra)' "$AMP_SRC/schemas/$t.schema.json" "$BATS_TEST_TMPDIR/$t.json"
		assert_output "[] []"
	done
}

@test "a whole task sent with templates as they are: each stored payload is the template" {
	T=T-2026-050
	for step in "task_dispatch coordinator executor" "task_result executor coordinator" \
		"review_request coordinator reviewer" "review_verdict reviewer coordinator" \
		"escalation executor -"; do
		read -r type from acker <<< "$step"
		amp send "$type" --template --task $T > "$BATS_TEST_TMPDIR/$type.json"
		run -0 amp send "$type" --task $T --from "$from" --payload "$BATS_TEST_TMPDIR/$type.json"
		id=$output
		assert_regex "$id" "^$type-$T-[0-9]+\$"
		# the stored record carries the template's payload unchanged
		run -0 python3 -c '
import json, subprocess, sys
tree = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/amp/messages"], capture_output=True, text=True).stdout.split()
path = [p for p in tree if p.endswith(".msg." + sys.argv[1] + ".json")][0]
rec = json.loads(subprocess.run(["git", "show", "refs/amp/messages:" + path], capture_output=True, text=True).stdout)
print(rec["payload"] == json.load(open(sys.argv[2])))' "$id" "$BATS_TEST_TMPDIR/$type.json"
		assert_output True
		[ "$acker" = - ] || amp ack "$id" --from "$acker" > /dev/null
	done
	# the references named the task's own messages, the snapshot its state
	run -0 json_field "$BATS_TEST_TMPDIR/review_request.json" original_dispatch_ref
	assert_regex "$output" "^task_dispatch-$T-"
	run -0 json_field "$BATS_TEST_TMPDIR/escalation.json" system_state_snapshot.task_status
	assert_output approved
	run -0 amp status $T
	assert_line --regexp "^$T +approved"
}

# json_field FILE a.b: the member's value, as Python prints it.
json_field() {
	python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$@"
}

@test "the template follows the schema: a member a schema adds is in it" {
	cp -r "$AMP_SRC/schemas" "$BATS_TEST_TMPDIR/schemas"
	python3 - "$BATS_TEST_TMPDIR/schemas/review_request.schema.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["properties"]["ticket"] = {"type": "string", "pattern": "^JIRA-[0-9]{2,4}$"}
s["properties"]["review_scope"]["enum"] = ["incremental", "full"]
s["required"].append("ticket")
json.dump(s, open(sys.argv[1], "w"))
PY
	AMP_SCHEMA_DIR=$BATS_TEST_TMPDIR/schemas run -0 amp send review_request --template
	assert_line '  "ticket": "JIRA-00"'
	assert_line '  "review_scope": "incremental",'
}

@test "if/then conditions: the simplest values, and a condition's consts and requireds are met" {
	run -0 amp send task_result --template
	assert_line '  "completion_status": "complete",'
	refute_line --partial blockers
	run -0 amp send escalation --template
	assert_line '  "severity": "info",'
	assert_line '  "auto_suspended": false'
	# a schema whose only severity is critical: auto_suspended must be true
	cp -r "$AMP_SRC/schemas" "$BATS_TEST_TMPDIR/schemas"
	sed -i 's/"severity": { "enum": \["critical", "warning", "info"\] }/"severity": { "enum": ["critical"] }/' \
		"$BATS_TEST_TMPDIR/schemas/escalation.schema.json"
	AMP_SCHEMA_DIR=$BATS_TEST_TMPDIR/schemas run -0 amp send escalation --template
	assert_line '  "severity": "critical",'
	assert_line '  "auto_suspended": true'
}

@test "--template takes a type and only --task and --repo" {
	run -2 amp send --template
	assert_output --partial "--template takes a message type"
	run -2 amp send nope --template
	assert_output --partial "unknown message type 'nope'"
	run -2 amp send task_result --template --payload x.json
	assert_output --partial "--template takes a message type and only --task and --repo"
	run -2 amp send task_result --template --task T-44
	assert_output --partial "is not a task id"
	# nothing was written
	assert_equal "$(git rev-list --count refs/amp/messages)" 1
	run -0 amp send --help
	assert_output --partial "amp send <type> --template [--task <id>]"
	assert_output --partial "amp schema <type>"
}

@test "amp schema lists the schemas; amp schema NAME prints one with every \$ref inlined" {
	run -0 amp schema
	assert_line --regexp '^task_dispatch +AMP/1.0 task_dispatch payload$'
	assert_line --regexp '^common +AMP/1.0 shared definitions$'
	assert_equal "${#lines[@]}" 9
	run -0 amp schema --json
	assert_output --partial '{"name":"ack","title":"AMP ACK record"},'
	for t in $TYPES message; do
		amp schema "$t" > "$BATS_TEST_TMPDIR/$t.schema.json"
		run -1 grep -c '\$ref' "$BATS_TEST_TMPDIR/$t.schema.json"
	done
	# the inlined schema judges as the one of schemas/ does
	for t in $TYPES; do
		amp send "$t" --template > "$BATS_TEST_TMPDIR/$t.json"
		run -0 amp validate --schema "$BATS_TEST_TMPDIR/$t.schema.json" "$BATS_TEST_TMPDIR/$t.json"
	done
	echo '{"decision": "rejected", "criteria_results": [], "confidence": 2}' > "$BATS_TEST_TMPDIR/bad.json"
	run -1 amp validate --schema "$AMP_SRC/schemas/review_verdict.schema.json" "$BATS_TEST_TMPDIR/bad.json"
	expected=$output
	run -1 amp validate --schema "$BATS_TEST_TMPDIR/review_verdict.schema.json" "$BATS_TEST_TMPDIR/bad.json"
	assert_equal "$(sed 's/.*: //' <<< "$output" | sort)" "$(sed 's/.*: //' <<< "$expected" | sort)"
	# --raw: the file as it is
	run -0 python3 -c '
import json, subprocess, sys
out = subprocess.run(["amp", "schema", "control", "--raw"], capture_output=True, text=True).stdout
print(json.loads(out) == json.load(open(sys.argv[1])))' "$AMP_SRC/schemas/control.schema.json"
	assert_output True
	run -2 amp schema nope
	assert_output --partial "no schema 'nope'"
	run -2 amp schema ../common
	run -2 amp schema --raw
}
