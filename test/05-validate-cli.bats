#!/usr/bin/env bats
# amp validate: --schema mode, AMP mode, JSON lines, --json, exit codes and
# hostile inputs.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	cat > task.schema.json <<-'EOF'
	{
	  "type": "object",
	  "required": ["id", "priority"],
	  "properties": {
	    "id": {"type": "string", "pattern": "^T-[0-9]{4}-[0-9]{3}$"},
	    "priority": {"enum": ["low", "medium", "high"]},
	    "count": {"type": "integer", "maximum": 1},
	    "a/b~c": {"$ref": "defs.json#/definitions/name"}
	  },
	  "additionalProperties": false
	}
	EOF
	cat > defs.json <<-'EOF'
	{"definitions": {"name": {"type": "string", "minLength": 2}}}
	EOF
	echo '{"id": "T-2026-001", "priority": "low"}' > good.json
	echo '{"id": "T-1", "priority": "urgent", "count": 2}' > bad.json
}

@test "valid file against --schema prints ok and exits 0" {
	run amp validate --schema task.schema.json good.json
	assert_success
	assert_output "good.json: ok"
}

@test "invalid file reports pointer and reason for each error, exit 1" {
	run --separate-stderr amp validate --schema task.schema.json bad.json
	assert_failure 1
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 3
	assert_equal "${stderr_lines[0]}" "amp validate: error: bad.json: /id: string does not match pattern ^T-[0-9]{4}-[0-9]{3}$"
	assert_equal "${stderr_lines[1]}" 'amp validate: error: bad.json: /priority: must be one of "low", "medium", "high"'
	assert_equal "${stderr_lines[2]}" "amp validate: error: bad.json: /count: must be at most 1"
}

@test "root errors print no pointer, and ~ and / in names are escaped" {
	echo '{"priority": "low", "a/b~c": "x"}' > root.json
	run amp validate --schema task.schema.json --ref defs.json root.json
	assert_failure 1
	assert_line 'amp validate: error: root.json: missing required property "id"'
	assert_line "amp validate: error: root.json: /a~1b~0c: must be at least 2 characters long"
}

@test "--ref documents resolve relative \$refs" {
	echo '{"id": "T-2026-001", "priority": "low", "a/b~c": "ok"}' > ref.json
	run amp validate --schema task.schema.json --ref defs.json ref.json
	assert_success
	assert_output "ref.json: ok"
}

@test "stdin is read when no file is named, and for -" {
	run bash -c 'amp validate --schema task.schema.json < good.json'
	assert_success
	assert_output "<stdin>: ok"
	run bash -c 'amp validate --schema task.schema.json - < bad.json'
	assert_failure 1
}

@test "JSON lines: each line is checked and reported with its number" {
	printf '%s\n\n%s\n%s\n' '{"id": "T-2026-001", "priority": "low"}' \
		'{"id": "T-2026-002", "priority": "x"}' '{"id": ' > msgs.jsonl
	run --separate-stderr amp validate --schema task.schema.json msgs.jsonl
	assert_failure 1
	assert_equal "$output" "msgs.jsonl:1: ok"
	assert_equal "${stderr_lines[0]}" 'amp validate: error: msgs.jsonl:3: /priority: must be one of "low", "medium", "high"'
	assert_equal "${stderr_lines[1]}" "amp validate: error: msgs.jsonl:4: invalid JSON at column 7: unexpected token near end of file"
}

@test "--json prints one document with results and errors" {
	printf '%s\n%s\n' '{"id": "T-2026-001", "priority": "low"}' \
		'{"priority": "low"}' > two.jsonl
	run --separate-stderr amp validate --json --schema task.schema.json good.json two.jsonl
	assert_failure 1
	assert_equal "$stderr" ""
	run /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["valid"] is False
r = d["results"]
assert [(x["file"], x["line"], x["valid"]) for x in r] == [
    ("good.json", None, True), ("two.jsonl", 1, True), ("two.jsonl", 2, False)]
assert r[0]["errors"] == []
assert r[2]["errors"] == [{"path": "", "message": "missing required property \"id\""}]
print("shape ok")' "$output"
	assert_success
	assert_output "shape ok"
}

@test "--json with every value valid says valid and exits 0" {
	run amp validate --json --schema task.schema.json good.json
	assert_success
	assert_output --partial '"valid": true'
}

@test "usage errors exit 2 with the usage line on stderr" {
	run --separate-stderr amp validate --frobnicate
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "amp validate: error: unknown option --frobnicate"
	assert_equal "${stderr_lines[1]}" "usage: amp validate [--json] [--schema <schema.json>] [--ref <schema.json>]... [<file>|-]..."
	run amp validate --schema
	assert_failure 2
	run amp validate --ref
	assert_failure 2
}

@test "-h prints the usage on stdout and exits 0" {
	run --separate-stderr amp validate -h
	assert_success
	assert_output --partial "usage: amp validate"
	run amp validate --help
	assert_success
}

@test "missing input file and unreadable schema exit 4" {
	run amp validate --schema task.schema.json nope.json
	assert_failure 4
	assert_output --partial "nope.json: No such file or directory"
	run amp validate --schema nope.schema.json good.json
	assert_failure 4
	echo '{"type": ' > broken.schema.json
	run amp validate --schema broken.schema.json good.json
	assert_failure 4
	assert_output --partial "broken.schema.json: invalid JSON"
}

@test "a \$ref that resolves nowhere is a schema error, exit 4" {
	echo '{"$ref": "missing.json#/x"}' > dangling.schema.json
	run amp validate --schema dangling.schema.json good.json
	assert_failure 4
	assert_output --partial 'cannot resolve $ref'
}

@test "AMP mode validates against message.schema.json of the schema dir" {
	mkdir sch
	cat > sch/message.schema.json <<-'EOF'
	{"$id": "https://amp.invalid/schemas/1.0/message.schema.json",
	 "type": "object", "required": ["protocol"],
	 "properties": {"protocol": {"const": "AMP/1.0"},
	                "payload": {"$ref": "payload.schema.json"}}}
	EOF
	cat > sch/payload.schema.json <<-'EOF'
	{"$id": "https://amp.invalid/schemas/1.0/payload.schema.json",
	 "properties": {"branch": {"not": {"enum": ["main", "master"]}}}}
	EOF
	echo '{"protocol": "AMP/1.0", "payload": {"branch": "feat"}}' > m1.json
	echo '{"protocol": "AMP/1.0", "payload": {"branch": "main"}}' > m2.json
	AMP_SCHEMA_DIR=$PWD/sch run amp validate m1.json
	assert_success
	assert_output "m1.json: ok"
	AMP_SCHEMA_DIR=$PWD/sch run amp validate m2.json
	assert_failure 1
	assert_output 'amp validate: error: m2.json: /payload/branch: must not be "main"'
}

@test "AMP mode without a schema directory exits 4" {
	AMP_SCHEMA_DIR=$PWD/none run amp validate good.json
	assert_failure 4
}

@test "invalid JSON, truncated input, invalid UTF-8, NUL and empty input exit 1" {
	echo '{"id": "T-2026-001", "priority": }' > invalid.json
	run amp validate --schema task.schema.json invalid.json
	assert_failure 1
	assert_output --partial "invalid.json: invalid JSON at line 1"
	printf '{\n  "id": "T-2026-001",\n  "prio' > truncated.json
	run amp validate --schema task.schema.json truncated.json
	assert_failure 1
	assert_output --partial "truncated.json: invalid JSON at line 3"
	printf '{"id": "T-\xff"}' > utf8.json
	run amp validate --schema task.schema.json utf8.json
	assert_failure 1
	assert_output --partial "unable to decode byte 0xff"
	printf '{"id": 1}\0' > nul.json
	run amp validate --schema task.schema.json nul.json
	assert_failure 1
	assert_output --partial "NUL byte"
	: > empty.json
	run amp validate --schema task.schema.json empty.json
	assert_failure 1
	assert_output --partial "empty input"
}

@test "JSON nested 100000 deep is refused without a crash" {
	head -c 100000 /dev/zero | tr '\0' '[' > deep.json
	run timeout 20 amp validate --schema task.schema.json deep.json
	assert_failure 1
	assert_output --partial "maximum parsing depth"
	{ head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; } > deep2.json
	run timeout 20 amp validate --json --schema task.schema.json deep2.json
	assert_failure 1
	assert_output --partial '"valid": false'
}

@test "a 50 MB value and a truncated 50 MB file are handled in seconds" {
	{ printf '{"id": "T-2026-001", "priority": "low", "count": 1, "a/b~c": "'
	  head -c 50000000 /dev/zero | tr '\0' 'a'
	  printf '"}'; } > big.json
	SECONDS=0
	run timeout 60 amp validate --schema task.schema.json --ref defs.json big.json
	assert_success
	assert_output "big.json: ok"
	head -c 40000000 big.json > cut.json
	run timeout 60 amp validate --schema task.schema.json cut.json
	assert_failure 1
	assert_output --partial "premature end of input"
	[ "$SECONDS" -lt 30 ]
}

@test "a schema file whose \$refs load another file in the middle of a validation resolves them (review_verdict against common.schema.json)" {
	cat > verdict.json <<-'EOF'
	{"decision": "approved", "criteria_results": [{"criterion": "it works", "passed": true, "evidence": "ok"},
	 {"criterion": "and fast", "passed": null, "evidence": "not measured"}], "confidence": 0.875}
	EOF
	run amp validate --schema "$AMP_SRC/schemas/review_verdict.schema.json" verdict.json
	assert_success
	assert_output "verdict.json: ok"
	echo '{"decision": "approved", "criteria_results": [{"criterion": "x", "passed": "yes", "evidence": "ok"}], "confidence": 0.5}' > bad-verdict.json
	run amp validate --schema "$AMP_SRC/schemas/review_verdict.schema.json" bad-verdict.json
	assert_failure 1
	assert_output --partial "/criteria_results/0/passed"
	refute_output --partial "cannot resolve"
}
