#!/usr/bin/env bats
# Issue 31: every state file amp keeps is written through one module
# (lib/base/tempfile.c): whole, beside its target, then renamed; and each
# reader takes a damaged file for a miss.  The module's own edge cases are
# test/c/test_tempfile.c's.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
	send_dispatch
}

@test "agents.json that is not JSON, cut short, of another version or with no agents object is a miss: amp agents answers the same and writes it again" {
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	run -0 amp agents --json
	expected=$output
	good=$(cat .git/amp/agents.json)
	for bad in 'garbage' "${good:0:40}" "${good/\"version\":1/\"version\":99}" \
		"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); d["agents"]=[1]; print(json.dumps(d))' "$good")" ''; do
		printf '%s' "$bad" > .git/amp/agents.json
		run -0 amp agents --json
		assert_output "$expected"
		[ "$(cat .git/amp/agents.json)" = "$good" ]
	done
}

@test "the state files are renamed into place whole: no temporary file is left beside them" {
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	amp agents --json > /dev/null
	amp inbox executor --json > /dev/null
	amp status --json > /dev/null
	amp watch --once > /dev/null
	amp dashboard --out "$BATS_TEST_TMPDIR/site" > /dev/null
	for f in agents.json inbox.json status.cache watch.json; do
		assert_file_exists ".git/amp/$f"
	done
	assert_file_exists "$BATS_TEST_TMPDIR/site/index.html"
	run -0 find .git/amp "$BATS_TEST_TMPDIR/site" -name '*.tmp'
	assert_output ''
}
