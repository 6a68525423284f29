#!/usr/bin/env bats
# Issue 7, the command line: human output escapes control characters, one
# parser for every number (options, git config, environment), UTF-8 and id
# checks of arguments before anything is built or logged, and one error for
# one mistake.

load helpers
load conversation

PY=/usr/bin/python3

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# Fails when $output holds ESC, BEL, CR, a C1 control or a byte that is not
# UTF-8 (the raw bytes, as a terminal would get them).
refute_control_bytes() {
	printf '%s' "$output" | "$PY" -c '
import sys
b = sys.stdin.buffer.read()
bad = [c for c in b if c < 0x20 and c != 0x0a or c == 0x7f]
try:
    bad += [ord(c) for c in b.decode("utf-8") if 0x80 <= ord(c) <= 0x9f]
except UnicodeDecodeError as e:
    bad.append(b[e.start])
sys.exit("control bytes: " + " ".join("%02x" % c for c in bad) if bad else 0)' || {
		printf '%s\n' "$output"
		return 1
	}
}

NASTY=$(printf 'x\e]0;pwned\a\e[2J\nline2\r\302\233end')

@test "amp status escapes control characters of a description; --json keeps them exact" {
	run amp escalate $T --from executor --type unknown --severity info --description "$NASTY"
	assert_success
	E=$output
	run amp status $T
	assert_success
	refute_control_bytes
	assert_output --partial "$E  x\\x1b]0;pwned\\x07\\x1b[2J\\nline2\\r\\u009bend"
	# one line for the header, the message, "escalations:" and the escalation
	assert_equal "${#lines[@]}" 4
	run amp status
	refute_control_bytes
	# JSON escapes C0 controls itself and carries the rest as they are
	run amp status $T --json
	assert_output --partial '"description": "x\u001B]0;pwned\u0007\u001B[2J\nline2\r'
	run "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["escalations"][0]["description"] == sys.argv[2] else 1)' \
		<(amp status $T --json) "$NASTY"
	assert_success
}

@test "amp errors and the send diagnostics escape what a rejected message carries" {
	printf '{"protocol_version":"AMP/1.0","msg_id":"x\\u001b[2J\\nevil\\u0085","type":"task_dispatch","task_id":"T-\\u001b]0;t\\u0007"}' > env.json
	run amp send --envelope env.json
	assert_failure 1
	refute_control_bytes
	run amp errors
	assert_success
	refute_control_bytes
	assert_line --index 0 --regexp '^2026-02-26 14:32:07 \+0000  send       exit 1  errors/[^ ]+  x\\x1b\[2J\\nevil\\u0085$'
	run amp errors --json
	assert_output --partial '"msg_id": "x\u001B[2J\nevil'
}

@test "usage errors and amp validate escape the arguments they quote" {
	run amp send "$(printf 'bad\e[2J')" --task $T
	assert_failure 2
	refute_control_bytes
	assert_line --index 0 "amp send: error: unknown message type 'bad\\x1b[2J'"
	run amp status "$(printf 'T-\e]0;x\a')"
	assert_failure 2
	refute_control_bytes
	run amp "$(printf 'x\e[2J')"
	assert_failure 2
	refute_control_bytes
	assert_output "amp: 'x\x1b[2J' is not an amp command. See 'amp --help'."
	run amp validate "$(printf 'no\e[2Jsuch.json')"
	assert_failure 4
	refute_control_bytes
	assert_output --partial 'no\x1b[2Jsuch.json'
	printf '{"type": 1}' > "$(printf 'v\e[31m.json')"
	run amp validate "$(printf 'v\e[31m.json')"
	assert_failure 1
	refute_control_bytes
	assert_output --partial 'amp validate: error: v\x1b[31m.json: '
}

@test "numbers out of range are usage errors naming the option, nothing logged" {
	local before
	before=$(error_count)
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" \
		--ack-timeout 4294967297
	assert_failure 2
	assert_output "amp send: error: --ack-timeout: 4294967297 is out of range (1..604800)"
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" \
		--ack-timeout ' 5'
	assert_failure 2
	assert_output "amp send: error: --ack-timeout: ' 5' is not an integer (1..604800)"
	run amp watch --interval 922337203685477581
	assert_failure 2
	assert_output "amp watch: error: --interval: 922337203685477581 is out of range (1..86400)"
	run amp verdict $T --decision approved --confidence nan
	assert_failure 2
	assert_output "amp verdict: error: --confidence: 'nan' is not a number (0..1)"
	run amp verdict $T --decision approved --confidence 1e400
	assert_failure 2
	assert_output "amp verdict: error: --confidence: 1e400 is out of range (0..1)"
	run amp errors -n 5x
	assert_failure 2
	assert_output "amp errors: error: --limit: '5x' is not an integer (0..1000000)"
	assert_equal "$(error_count)" "$before"
	# the edge of the range is accepted and stored as given
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" \
		--ack-timeout 604800
	assert_success
	run amp status $T --json
	assert_output --partial '"ack_seconds": 604800'
}

@test "the schema caps ack_timeout_sec at 604800 for envelopes too" {
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" \
		--ack-timeout 604800 > /dev/null
	path=$(git ls-tree -r --name-only refs/amp/messages | grep '\.msg\.task_dispatch')
	git show "refs/amp/messages:$path" | sed 's/"ack_timeout_sec": 604800/"ack_timeout_sec": 604801/' > big.json
	run amp validate big.json
	assert_failure 1
	assert_output --partial '/ack_timeout_sec'
}

@test "git config numbers are checked: a bad value is an error naming the key" {
	for v in inf nan 1e400 -1 abc 0x10 ' 1'; do
		git config amp.retryTimeout "$v"
		run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
		assert_failure 2
		assert_output --regexp "^amp send: error: git config amp.retryTimeout: .* \\(0\\.\\.3600\\)$"
	done
	git config --unset amp.retryTimeout
	git config amp.staleLockTimeout 0
	run amp status
	assert_failure 2
	assert_output "amp status: error: git config amp.staleLockTimeout: 0 is out of range (1..3600)"
	git config --unset amp.staleLockTimeout
	git config amp.heartbeatTimeout 9223372036854775807
	run amp watch --once
	assert_failure 2
	assert_output "amp watch: error: git config amp.heartbeatTimeout: 9223372036854775807 is out of range (1..2592000)"
	git config amp.heartbeatTimeout 2592000
	git config amp.lockThreshold 1001
	run amp watch --once
	assert_failure 2
	assert_output "amp watch: error: git config amp.lockThreshold: 1001 is out of range (1..1000)"
	git config amp.lockThreshold 1000
	run amp watch --once
	assert_success
	run git rev-list --count refs/amp/messages
	assert_output 1
}

@test "AMP_NOW outside 1970..9999 is a usage error, never a rejected message" {
	local before
	before=$(error_count)
	AMP_NOW=-1 run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: AMP_NOW: -1 is out of range (0..253402300799)"
	printf '{}' > env.json
	AMP_NOW=1969-12-31T23:59:59Z run amp send --envelope env.json
	assert_failure 2
	assert_output "amp send: error: AMP_NOW: 1969-12-31T23:59:59Z is out of range (years 1970..9999)"
	AMP_NOW=253402300800 run amp status
	assert_failure 2
	AMP_NOW=tomorrow run amp status
	assert_failure 2
	assert_output "amp status: error: AMP_NOW: 'tomorrow' is neither an ISO 8601 time with offset nor Unix seconds"
	assert_equal "$(error_count)" "$before"
	AMP_NOW=253402300799 run amp status
	assert_success
}

@test "invalid UTF-8 in an option value, an operand or the role is a usage error naming it" {
	local before
	before=$(error_count)
	run amp escalate $T --from executor --type unknown --severity info --description $'bad\xff'
	assert_failure 2
	assert_output "amp escalate: error: --description: not valid UTF-8: 'bad\\xff'"
	run amp escalate $T --from executor --type unknown --severity info --desc=$'bad\xff'
	assert_failure 2
	assert_output "amp escalate: error: --description: not valid UTF-8: 'bad\\xff'"
	run amp resume $T --from admin --reason $'\xff'
	assert_failure 2
	assert_output "amp resume: error: --reason: not valid UTF-8: '\\xff'"
	run amp send task_dispatch --task $T --from $'admin\xff'
	assert_failure 2
	assert_output "amp send: error: --from: not valid UTF-8: 'admin\\xff'"
	run amp status $'T-2026-044\xc0\x80'
	assert_failure 2
	assert_output "amp status: error: argument 'T-2026-044\\xc0\\x80': not valid UTF-8"
	AMP_ROLE=$'admin\xff' run amp resume $T --reason x
	assert_failure 2
	assert_output "amp resume: error: AMP_ROLE: not valid UTF-8: 'admin\\xff'"
	git config amp.role $'exec\xffutor'
	run amp ack "task_dispatch-$T-1"
	assert_failure 2
	assert_output "amp ack: error: git config amp.role: not valid UTF-8: 'exec\\xffutor'"
	assert_equal "$(error_count)" "$before"
	# a path is not text: --payload with such a name is only a missing file
	run amp send task_dispatch --task $T --from coordinator --payload $'no\xff.json'
	assert_failure 4
	assert_output --partial 'no\xff.json: No such file or directory'
}

@test "a bad --task, role or msg_id gives one error naming the option, nothing logged" {
	local before
	before=$(error_count)
	run amp send task_dispatch --task T-44 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: --task: 'T-44' is not a task id (T-YYYY-NNN)"
	run amp send task_dispatch --task $T --from boss --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: --from: 'boss' is not a role (admin, coordinator, executor, reviewer, system)"
	run amp send task_dispatch --task $T --from coordinator --to system --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: --to: 'system' is not a role (admin, coordinator, executor, reviewer)"
	run amp send task_dispatch --task $T --from coordinator --context-ref nope --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: --context-ref: 'nope' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)"
	AMP_ROLE=boss run amp escalate $T --type unknown --severity info --description x
	assert_failure 2
	assert_output "amp escalate: error: AMP_ROLE: 'boss' is not a role (admin, coordinator, executor, reviewer, system)"
	run amp escalate T-44 --from executor --type unknown --severity info --description x
	assert_failure 2
	assert_output "amp escalate: error: <task_id>: 'T-44' is not a task id (T-YYYY-NNN)"
	run amp escalate $T --from executor --type unknown --severity info --description x --affected x
	assert_failure 2
	assert_output "amp escalate: error: --affected: 'x' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)"
	run amp status T-44
	assert_failure 2
	assert_output "amp status: error: <task_id>: 'T-44' is not a task id (T-YYYY-NNN)"
	run amp verdict T-44 --decision approved --confidence 1
	assert_failure 2
	assert_output "amp verdict: error: <task_id>: 'T-44' is not a task id (T-YYYY-NNN)"
	run amp verdict $T --decision approved --confidence 1 --context-ref x
	assert_failure 2
	assert_output "amp verdict: error: --context-ref: 'x' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)"
	run amp resume T-44 --from admin --reason x
	assert_failure 2
	assert_output "amp resume: error: <task_id>: 'T-44' is not a task id (T-YYYY-NNN)"
	run amp ack T-44 --from executor
	assert_failure 2
	assert_output "amp ack: error: <msg_id>: 'T-44' is not a msg_id (<type>-T-YYYY-NNN-<unix_ms>)"
	assert_equal "$(error_count)" "$before"
	run git rev-list --count refs/amp/messages
	assert_output 1
}

@test "amp validate --schema finds the schemas beside it; --ref still adds more" {
	cp "$BATS_TEST_TMPDIR/p/dispatch.json" d.json
	run amp validate --schema "$AMP_SRC/schemas/task_dispatch.schema.json" d.json
	assert_success
	assert_output "d.json: ok"
	sed 's/"medium"/"extreme"/' d.json > bad.json
	run amp validate --schema "$AMP_SRC/schemas/task_dispatch.schema.json" bad.json
	assert_failure 1
	assert_output --partial '/risk_level'
	refute_output --partial 'cannot resolve'
	# schemas without "$id": relative "$ref"s resolve by file name
	mkdir s
	printf '{"$ref": "b.json#/definitions/n"}' > s/a.json
	printf '{"definitions": {"n": {"type": "integer"}}}' > s/b.json
	printf '"x"' > x.json
	run amp validate --schema s/a.json x.json
	assert_failure 1
	assert_output --partial 'x.json'
	printf '{"definitions": {"n": {"type": "string"}}}' > other.json
	run amp validate --schema s/a.json --ref other.json x.json
	assert_failure 1
}

@test "a directory where a file is expected is named as one" {
	mkdir dir
	run amp validate dir
	assert_failure 4
	assert_output "amp validate: error: dir: Is a directory"
	run amp send task_dispatch --task $T --from coordinator --payload dir
	assert_failure 4
	assert_output "amp send: error: dir: Is a directory"
	run amp send --envelope dir
	assert_failure 4
	assert_output "amp send: error: dir: Is a directory"
}

@test "writing before amp init is one error saying so, not the message's errors" {
	git init -q "$BATS_TEST_TMPDIR/bare"
	cd "$BATS_TEST_TMPDIR/bare"
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 4
	assert_output "amp send: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp escalate $T --from executor --type unknown --severity info --description x
	assert_failure 4
	assert_output "amp escalate: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run git for-each-ref
	assert_output ""
}

@test "amp validate --json keeps a result for a file name that is not UTF-8" {
	printf '{}' > $'\xff.json'
	run amp validate --json --schema "$AMP_SRC/schemas/common.schema.json" $'\xff.json' $'\xfemissing.json'
	assert_failure 4
	assert_output --partial '"file": "\\xff.json"'
	assert_output --partial '"file": "\\xfemissing.json"'
	assert_output --partial '"message": "\\xfemissing.json: No such file or directory"'
}

@test "a fetched record with control characters in its name: amp status escapes it, amp watch stays one line" {
	load enforcer
	send_dispatch
	local B
	B=$(printf 'task_result-%s-1772116400000\e]0;x\a' $T)
	printf '{"msg_id": "\\u001b[2J", "type": "task_res' | plant "$(next_path $T "$B")"
	run amp status $T
	assert_success
	refute_control_bytes
	assert_output --partial 'unreadable record 000002.msg.task_result-T-2026-044-1772116400000\x1b]0;x\x07.json: '
	at 10
	run amp watch --once
	assert_success
	refute_control_bytes
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "^escalated unknown $T "
}

@test "amp send without --payload is one usage error, not one per required member" {
	local before
	before=$(error_count)
	run amp send task_dispatch --task $T --from coordinator
	assert_failure 2
	assert_line --index 0 "amp send: error: --payload is required (the task_dispatch payload: a JSON file, or - for stdin)"
	assert_line --index 1 --partial "usage: amp send <type> --task <id> --payload <file>|-"
	refute_output --partial "missing required property"
	assert_equal "$(error_count)" "$before"
}

@test "amp validate --ref without --schema is a usage error, not silently ignored" {
	printf '{}' > x.json
	run amp validate --ref x.json x.json
	assert_failure 2
	assert_line --index 0 "amp validate: error: --ref needs --schema"
}

@test "git config amp.checkRepo takes git's booleans; anything else is an error naming the key" {
	git config amp.checkRepo maybe
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output "amp send: error: git config amp.checkRepo: 'maybe' is not a boolean (true or false)"
	assert_equal "$(error_count)" 1
	assert_equal "$(commit_count)" 1
	# "off" is git's false: a dispatch naming another machine's repository goes in
	git config amp.checkRepo off
	sed 's#"repo": "[^"]*"#"repo": "/nowhere/on/this/machine"#' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/far.json"
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/far.json"
	assert_success
}
