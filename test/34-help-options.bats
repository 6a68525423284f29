#!/usr/bin/env bats
# Issue 34, "help and mistakes like git": `amp <cmd> -h` prints the usage
# first (completions/ read it), then each option with one line, made from
# the command's getopt table; an unknown option gets the most similar ones.

bats_require_minimum_version 1.5.0

load helpers

@test "amp status -h: the usage line first, then one line for each of its options" {
	run -0 --separate-stderr amp status -h
	assert_equal "${lines[0]}" "usage: amp status [<task_id> | --all] [--json] [--utc] [--wide] [--color[=<when>] | --no-color] [--no-pager] [--repo <dir>]"
	assert_line "options:"
	assert_line --regexp $'^\t--json +print JSON'
	assert_line --regexp $'^\t--all +every task$'
	assert_line --regexp $'^\t--repo <dir> +the git repository of the SSOT'
	assert_line --regexp $'^\t--color\\[=<when>\\] +colour: always, never or auto'
	assert_line --regexp $'^\t--no-pager +do not page the output$'
	assert_line --regexp $'^\t--help +print this help$'
	# --help prints the same
	run -0 amp status --help
	[ "$output" = "$(amp status -h)" ]
}

@test "every command's -h gives each long option its usage names a line with a description" {
	local cmd o missing=""
	for cmd in $(amp --help | awk '/^   [a-z]/ { print $1 }'); do
		[ "$cmd" = validate ] && continue # parses its own arguments
		# amp hook's options are those of amp hook install
		if [ "$cmd" = hook ]; then
			run -0 --separate-stderr amp hook install -h
		else
			run -0 --separate-stderr amp "$cmd" -h
		fi
		local usage=${output%%$'\n\noptions:'*}
		for o in $(grep -oE -- '--[a-z][a-z0-9-]*' <<< "$usage" | sort -u); do
			grep -qE $'^\t'"$o"'([ [].*)? +[a-z(]' <<< "$output" || missing="$missing $cmd:$o"
		done
		[[ $output == *$'\n\noptions:\n'* ]] || missing="$missing $cmd:(no options list)"
	done
	assert_equal "$missing" ""
}

@test "an unknown option gets the most similar option of its command" {
	run -2 --separate-stderr amp status --jsno
	assert_equal "$stderr" "amp status: error: unknown option or missing value: '--jsno'
usage: amp status [<task_id> | --all] [--json] [--utc] [--wide] [--color[=<when>] | --no-color] [--no-pager] [--repo <dir>]

The most similar option is
	--json"
	run -2 --separate-stderr amp ack T --frm executor
	[[ $stderr == *$'The most similar option is\n\t--from' ]] || fail "$stderr"
	run -2 --separate-stderr amp log --gerp x
	[[ $stderr == *$'The most similar option is\n\t--grep' ]] || fail "$stderr"
}

@test "an option far from every other gets no hint, and a known option missing its value gets none" {
	run -2 --separate-stderr amp status --frobnicate
	[[ $stderr != *"most similar"* ]] || fail "$stderr"
	run -2 --separate-stderr amp log --grep
	[[ $stderr == "amp log: error: unknown option or missing value: '--grep'"* ]] || fail "$stderr"
	[[ $stderr != *"most similar"* ]] || fail "$stderr"
}

@test "a misspelt payload field names the field it probably meant" {
	make_ssot_here
	cat > "$BATS_TEST_TMPDIR/v.json" <<-'JSON'
	{"decision": "rejected", "confidence": 0.9,
	 "criteria_results": [{"criterion": "x", "passed": false, "evidence": "e"}],
	 "issues": [{"severity": "major", "file": "a.c", "line": 1, "description": "d", "suggestion": "x"}]}
	JSON
	run -1 --separate-stderr amp send review_verdict --task T-2026-034 --from reviewer --payload "$BATS_TEST_TMPDIR/v.json"
	assert_equal "$stderr" 'amp send: error: /payload/issues/0: missing required property "suggested_fix"
amp send: error: /payload/issues/0: unexpected property "suggestion" (did you mean "suggested_fix"?)'
	# a near miss too, and a word near nothing gets no guess
	sed -i -e 's/"suggestion": "x"/"suggested_fix": "x", "sevrity": "x"/' "$BATS_TEST_TMPDIR/v.json"
	sed -i -e 's/"severity": "major", //' "$BATS_TEST_TMPDIR/v.json"
	run -1 --separate-stderr amp validate --schema "$AMP_SRC/schemas/review_verdict.schema.json" --ref "$AMP_SRC/schemas/common.schema.json" "$BATS_TEST_TMPDIR/v.json"
	[[ $stderr == *'unexpected property "sevrity" (did you mean "severity"?)'* ]] || fail "$stderr"
	sed -i -e 's/"sevrity"/"zzz"/' "$BATS_TEST_TMPDIR/v.json"
	run -1 --separate-stderr amp validate --schema "$AMP_SRC/schemas/review_verdict.schema.json" --ref "$AMP_SRC/schemas/common.schema.json" "$BATS_TEST_TMPDIR/v.json"
	[[ $stderr == *'unexpected property "zzz"'* ]] || fail "$stderr"
	[[ $stderr != *"did you mean"* ]] || fail "$stderr"
}

@test "a member an if/then requires is named, with the condition" {
	make_ssot_here
	cat > "$BATS_TEST_TMPDIR/v.json" <<-'JSON'
	{"decision": "rejected", "confidence": 0.9,
	 "criteria_results": [{"criterion": "x", "passed": false, "evidence": "e"}]}
	JSON
	run -1 --separate-stderr amp send review_verdict --task T-2026-034 --from reviewer --payload "$BATS_TEST_TMPDIR/v.json"
	assert_equal "$stderr" 'amp send: error: /payload/issues: required because decision is "rejected"'
	amp send task_result --template > "$BATS_TEST_TMPDIR/r.json"
	sed -i 's/"complete"/"partial"/' "$BATS_TEST_TMPDIR/r.json"
	run -1 --separate-stderr amp send task_result --task T-2026-034 --from executor --payload "$BATS_TEST_TMPDIR/r.json"
	assert_equal "$stderr" 'amp send: error: /payload/blockers: required because completion_status is one of "partial", "failed"'
}

make_ssot_here() {
	make_repo
	amp init > /dev/null
}
