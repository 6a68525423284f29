#!/usr/bin/env bats
# Issue 34, "errors a program can read": with --json, a failing command
# prints one JSON object on stdout, {"format": {"name": "error", "version":
# 1}, "error": {"code", "exit", "path", "message"}, "errors": [...]}, which schemas/output/error.schema.json
# describes (checked with amp's own validator and with python3-jsonschema),
# and the human line on stderr as before.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
	T=T-2026-034
}

# check_error_json TEXT EXIT CODE: TEXT is one line, a JSON object the
# error schema accepts (both validators), whose error has that exit code
# and code name.
check_error_json() {
	local schema=$AMP_SRC/schemas/output/error.schema.json
	[ "$(printf '%s\n' "$1" | wc -l)" -eq 1 ] || fail "not one line: $1"
	printf '%s\n' "$1" > "$BATS_TEST_TMPDIR/err.json"
	run -0 amp validate --schema "$schema" "$BATS_TEST_TMPDIR/err.json"
	run -0 python3 -c '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(doc, schema, cls=jsonschema.Draft7Validator)
print(doc["format"]["version"], doc["error"]["exit"], doc["error"]["code"])' "$schema" "$BATS_TEST_TMPDIR/err.json"
	assert_output "1 $2 $3"
	output=$1
}

@test "a failing amp send --json prints one error object on stdout and the human line on stderr" {
	run -2 --separate-stderr amp send task_dispatch --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --json
	assert_equal "${stderr%%$'\n'*}" "amp send: error: --task is required"
	check_error_json "$output" 2 usage
	run -0 python3 -c 'import json, sys; print(json.loads(sys.argv[1])["error"]["message"])' "$output"
	assert_output "--task is required"
}

@test "a payload the schema refuses: exit 1, the JSON pointer of the value, and every error in errors" {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); d["risk_level"] = "huge"; del d["branch"]
json.dump(d, open(sys.argv[2], "w"))' "$BATS_TEST_TMPDIR/p/dispatch.json" "$BATS_TEST_TMPDIR/bad.json"
	run -1 --separate-stderr amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/bad.json" --json
	check_error_json "$output" 1 invalid
	run -0 python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(len(d["errors"]), sorted(e["path"] for e in d["errors"]))' "$output"
	assert_output "2 ['/payload', '/payload/risk_level']"
	# the same errors, in the same order, on stderr
	assert_equal "$(grep -c '^amp send: error: /payload' <<< "$stderr")" 2
}

@test "a refusal by a rule is exit 3, code refused, with its path" {
	amp send task_result --template > "$BATS_TEST_TMPDIR/r.json"
	run -3 --separate-stderr amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/r.json" --json
	check_error_json "$output" 3 refused
	run -0 python3 -c 'import json, sys; print(json.loads(sys.argv[1])["error"]["path"])' "$output"
	assert_output /payload/subtask_id
	[[ $stderr == "amp send: error: /payload/subtask_id: example-subtask_id is not a subtask"* ]] || fail "$stderr"
}

@test "read commands: an unknown task and an unknown option are error objects too" {
	run -2 --separate-stderr amp status T-2026-999 --json
	check_error_json "$output" 2 usage
	run -2 --separate-stderr amp log --json --grpe x
	check_error_json "$output" 2 usage
	run -0 python3 -c 'import json, sys; print(json.loads(sys.argv[1])["error"]["message"])' "$output"
	assert_output "unknown option or missing value: '--grpe'"
	run -2 --separate-stderr amp ack nope --json --from executor
	check_error_json "$output" 2 usage
}

@test "an I/O failure (no SSOT) is exit 4, code io" {
	cd "$BATS_TEST_TMPDIR" && git init -q bare-repo && cd bare-repo
	run -4 --separate-stderr amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --json
	check_error_json "$output" 4 io
	[[ $stderr == *"run 'amp init'"* ]] || fail "$stderr"
}

@test "without --json, a failing command prints nothing on stdout; after --, --json is an operand" {
	run -2 --separate-stderr amp send task_dispatch --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_output ""
	run -2 --separate-stderr amp status -- --json
	assert_output ""
}

@test "a successful --json command prints no error object" {
	send_dispatch
	run -0 --separate-stderr amp status $T --json
	[[ $output != *'"error"'* ]] || fail "$output"
	run -0 python3 -c 'import json, sys; print(json.loads(sys.argv[1])["task_id"])' "$output"
	assert_output $T
}
