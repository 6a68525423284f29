#!/usr/bin/env bats
# amp validate and ECMA-262 patterns as PCRE2 runs them
# (share/doc/validator.md "Patterns: ECMA-262 by PCRE2"): what ECMA-262 has
# that the old translation to POSIX could not say, a pattern that does not
# compile, and a catastrophic pattern under the match limit.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

@test "look-ahead, back-references and \\s as ECMA-262 has them: one file matches, one does not" {
	cat > s.json <<-'EOF'
	{"type": "object", "properties": {
	  "pass": {"pattern": "^(?=.*\\d)(?!.*(.)\\1)[a-z0-9]{6,}$"},
	  "tag": {"pattern": "^<([a-z]+)>.*?</\\1>$"},
	  "gap": {"pattern": "^a\\sb$"}}}
	EOF
	printf '{"pass": "abc1de", "tag": "<b>x</b>", "gap": "a\\u00a0b"}\n' > good.json
	printf '{"pass": "abcdef", "tag": "<b>x</i>", "gap": "a\\nb"}\n' > bad.json
	run amp validate --schema s.json good.json bad.json
	assert_failure 1
	assert_line "good.json: ok"
	# (amp prints a backslash of a message as two)
	assert_line 'amp validate: error: bad.json: /pass: string does not match pattern ^(?=.*\\d)(?!.*(.)\\1)[a-z0-9]{6,}$'
	assert_line 'amp validate: error: bad.json: /tag: string does not match pattern ^<([a-z]+)>.*?</\\1>$'
	refute_output --partial "/gap"
	printf '{"gap": "a\\u2028b"}\n' > nl.json
	run amp validate --schema s.json nl.json
	assert_success
	# "." is no line terminator; "$" is the end only
	printf '{"pattern": "^a.b$"}' > dot.json
	printf '"a\\u2028b"\n' > ls.json
	run amp validate --schema dot.json ls.json
	assert_failure 1
	printf '{"pattern": "^a$"}' > end.json
	printf '"a\\n"\n' > nl.json
	run amp validate --schema end.json nl.json
	assert_failure 1
}

@test "a pattern that does not compile is a schema error, exit 4, naming where it is in the schema" {
	printf '{"properties": {"x": {"items": [{"pattern": "a("}]}}}' > s.json
	echo '{"x": ["a"]}' > v.json
	run amp validate --schema s.json v.json
	assert_failure 4
	assert_output "amp validate: error: file://$PWD/s.json#/properties/x/items/0/pattern: invalid pattern a(: missing closing parenthesis"
	# also when no value would ever reach it
	echo '{}' > empty.json
	run amp validate --schema s.json empty.json
	assert_failure 4
	printf '{"patternProperties": {"(?<=a+)b": {}}}' > s.json
	run amp validate --schema s.json v.json
	assert_failure 4
	assert_output --partial "s.json#/patternProperties/(?<=a+)b: invalid pattern (?<=a+)b: lookbehind assertion is not fixed length"
}

@test "a catastrophic pattern ends at PCRE2's match limit: an error at the value's path, exit 1" {
	printf '{"properties": {"s": {"pattern": "^(a+)+$"}}}' > s.json
	echo '{"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}' > evil.json
	echo '{"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}' > fine.json
	run timeout 60 amp validate --schema s.json evil.json fine.json
	assert_failure 1
	assert_output "amp validate: error: evil.json: /s: pattern ^(a+)+$ gave up on this string: more than 1,000,000 steps of backtracking (PCRE2's match limit)
fine.json: ok"
}

@test "amp's own schemas compile a pattern when first used: a bad one is an error where a message reaches it, naming it" {
	cp -r "$AMP_SCHEMAS" own
	# the task_id pattern of common.schema.json, broken
	sed -i 's/"\^T-\[0-9\]{4}-\[0-9\]{3,9}\$"/"^T-[0-9]{4}-([0-9]{3,9}$"/' own/common.schema.json
	grep -qF '"^T-[0-9]{4}-([0-9]{3,9}$"' own/common.schema.json
	cp "$AMP_SRC/test/fixtures/valid/dispatch-admin-to-coordinator-minimal.json" msg.json
	AMP_SCHEMA_DIR=$PWD/own run --separate-stderr amp validate msg.json
	assert_failure 4
	assert_equal "$stderr" "amp validate: error: msg.json: /task_id: invalid pattern ^T-[0-9]{4}-([0-9]{3,9}\$: missing closing parenthesis"
	# the same message against the intact schemas
	AMP_SCHEMA_DIR=$AMP_SCHEMAS run -0 amp validate msg.json
}
