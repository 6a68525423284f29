#!/usr/bin/env bats
# The schemas and the fixture corpus against an independent validator:
# python3-jsonschema (Draft7Validator + FormatChecker) through
# test/crosscheck.py.  The python-only tests hold on any branch; the last one
# asserts that `amp validate` reaches the same verdict as python on every file.

load helpers

PY=/usr/bin/python3
CROSS=$BATS_TEST_DIRNAME/crosscheck.py

setup() {
	export AMP_SCHEMA_DIR=$AMP_SRC/schemas
	$PY -c 'import jsonschema' 2>/dev/null || skip "/usr/bin/python3 has no jsonschema"
}

@test "every schema is a draft-07 schema whose \$id is the base URI plus its file name" {
	run $PY "$CROSS" --check-schemas
	assert_success
	[ "${#lines[@]}" -eq "$(ls "$AMP_SRC"/schemas/*.json | wc -l)" ]
	refute_output --partial "	bad"
}

@test "the schema set holds message, ack, common and the five payload schemas" {
	local s
	for s in message ack common task_dispatch task_result review_request review_verdict escalation; do
		assert_file_exists "$AMP_SRC/schemas/$s.schema.json"
	done
}

@test "schema patterns are anchored and use only syntax shared by POSIX ERE and python re" {
	run $PY - "$AMP_SRC"/schemas/*.json <<-'PY'
	import json, re, sys
	bad = []
	def walk(node, where):
	    if isinstance(node, dict):
	        for k, v in node.items():
	            if k == "pattern" and isinstance(v, str):
	                if not v.startswith("^"):
	                    bad.append(f"{where}: not anchored: {v}")
	                # \d \w \s \b, lookaround, non-capturing or named groups, lazy quantifiers
	                if re.search(r"\\[dDwWsSbB]|\(\?|[*+?}]\?", v):
	                    bad.append(f"{where}: not portable: {v}")
	            walk(v, f"{where}/{k}")
	    elif isinstance(node, list):
	        for i, v in enumerate(node):
	            walk(v, f"{where}/{i}")
	for name in sys.argv[1:]:
	    walk(json.load(open(name)), name.rsplit("/", 1)[-1] + "#")
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
	assert_success
}

@test "python accepts every valid fixture" {
	run $PY "$CROSS" "$FIXTURES"/valid/*.json
	assert_success
	refute_output --partial "	invalid"
	[ "${#lines[@]}" -eq "$(ls "$FIXTURES"/valid/*.json | wc -l)" ]
}

@test "python rejects every invalid fixture naming the pointer of EXPECTED.tsv and nothing else" {
	run $PY "$CROSS" --expect "$FIXTURES/invalid/EXPECTED.tsv"
	assert_success
	refute_output --partial "	BAD"
	[ "${#lines[@]}" -eq "$(ls "$FIXTURES"/invalid/*.json | wc -l)" ]
}

@test "python rejects the seed's placeholder msg_ids" {
	run $PY "$CROSS" "$FIXTURES/invalid/review_request-original_dispatch_ref-placeholder.json" \
		"$FIXTURES/invalid/envelope-msg_id-placeholder.json"
	assert_failure 1
	assert_line --partial "/payload/original_dispatch_ref: 'task_dispatch-T-2026-044-...' does not match"
	assert_line --partial "/msg_id: 'task_dispatch-T-2026-044-...' does not match"
}

@test "python still accepts the documented python-differs fixtures (known differences)" {
	run $PY "$CROSS" "$FIXTURES"/python-differs/*.json
	assert_success
	[ "${#lines[@]}" -eq 2 ]
}

@test "amp validate reaches python's verdict on every fixture, valid and invalid" {
	local f verdict want got schema disagree=""
	command -v amp >/dev/null || fail "amp is not built (make)"
	while IFS=$'\t' read -r f verdict _; do
		case $verdict in valid) want=0 ;; *) want=1 ;; esac
		schema=()
		case ${f##*/} in
		ack-*) schema=(--schema "$AMP_SRC/schemas/ack.schema.json"
			--ref "$AMP_SRC/schemas/common.schema.json") ;;
		esac
		got=0
		amp validate "${schema[@]}" "$f" >/dev/null 2>&1 || got=$?
		[ "$got" -eq "$want" ] || disagree+="$f: python $verdict, amp exit $got"$'\n'
	done < <($PY "$CROSS" "$FIXTURES"/valid/*.json "$FIXTURES"/invalid/*.json)
	[ -z "$disagree" ] || fail "$disagree"
}
