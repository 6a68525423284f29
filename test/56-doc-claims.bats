#!/usr/bin/env bats
# Issue 7, docs that claim more than the code does: one test for each
# sentence of README.md, the man pages (share/man/), share/doc/ and schemas/
# that says what amp checks, prints or guarantees and that no other test
# held to it.  56-doc-claims-places.bats checks that each sentence is still
# where its comment here says, and that its test is still here.

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# amp(1): amp-<command> comes "first from $AMP_EXEC_PATH, then next to amp
# itself".
@test "amp looks for amp-<command> in AMP_EXEC_PATH before its own directory" {
	mkdir -p "$BATS_TEST_TMPDIR/exec"
	printf '#!/bin/sh\necho "exec-path amp-status: $*"\nexit 5\n' > "$BATS_TEST_TMPDIR/exec/amp-status"
	chmod +x "$BATS_TEST_TMPDIR/exec/amp-status"
	AMP_EXEC_PATH=$BATS_TEST_TMPDIR/exec run amp status $T
	assert_failure 5
	assert_output "exec-path amp-status: $T"
	# without it, amp's own amp-status answers
	run amp status $T
	assert_failure 2
	assert_output "amp status: error: no task $T in the SSOT"
}

# amp-config(7): git config amp.errorsRef is the error log ref.
@test "git config amp.errorsRef moves the error log, and amp errors reads it there" {
	git config amp.errorsRef refs/amp/rejects
	amp init > /dev/null
	run amp send --envelope "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 1
	run git ls-tree -r --name-only refs/amp/rejects
	assert_success
	assert_output --regexp 'errors/2026/02/26/[0-9]+-[0-9a-f]+/reasons.json'
	run amp errors
	assert_success
	assert_line --index 0 --partial "exit 1"
	git config --unset amp.errorsRef
	run amp errors
	refute_line --partial "exit 1"
}

# amp(1) "Output": a bidirectional override or isolate is written as
# \uHHHH and a backslash as \\.
@test "human output escapes bidi overrides and isolates, a tab, DEL and a backslash; --json keeps them" {
	desc=$'a\u202eb\u2066c\u2069d\\e\u202ae\tf\x7fg'
	run amp escalate $T --from executor --type unknown --severity info --description "$desc"
	assert_success
	E=$output
	run amp status $T
	assert_success
	assert_output --partial "$E  a\\u202eb\\u2066c\\u2069d\\\\e\\u202ae\\tf\\x7fg"
	run /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["escalations"][0]["description"] == sys.argv[2] else 1)' \
		<(amp status $T --json) "$desc"
	assert_success
}

# amp(1) "Each command in brief": amp errors lists the rejected messages
# newest first.
@test "amp errors lists the rejected messages newest first" {
	printf '{"protocol_version":"AMP/1.0","msg_id":"first"}' > "$BATS_TEST_TMPDIR/a.json"
	printf '{"protocol_version":"AMP/1.0","msg_id":"second"}' > "$BATS_TEST_TMPDIR/b.json"
	printf '{"protocol_version":"AMP/1.0","msg_id":"third"}' > "$BATS_TEST_TMPDIR/c.json"
	at 10
	run amp send --envelope "$BATS_TEST_TMPDIR/a.json"
	assert_failure 1
	at 20
	run amp send --envelope "$BATS_TEST_TMPDIR/b.json"
	assert_failure 1
	at 30
	run amp send --envelope "$BATS_TEST_TMPDIR/c.json"
	assert_failure 1
	run amp errors
	assert_success
	assert_line --index 0 --regexp "  third$"
	run bash -c "amp errors | grep ' exit ' | awk '{print \$NF}' | tr '\n' ' '"
	assert_output "third second first "
	run amp errors --limit 1
	assert_output --partial "third"
	refute_output --partial "second"
}

# README "For agent authors": "Colour only on a terminal, never with
# NO_COLOR set."
@test "amp status colours only on a terminal, and never with NO_COLOR set" {
	send_dispatch
	# a pipe: no colour, even with NO_COLOR unset
	run env -u NO_COLOR TERM=xterm amp status
	assert_success
	refute_output --partial $'\033['
	# a terminal (script gives amp a pty): colour
	run env -u NO_COLOR TERM=xterm AMP_PAGER=cat script -qec "amp status" /dev/null
	assert_success
	assert_output --partial $'\033['
	assert_output --partial "dispatched"
	# a terminal with NO_COLOR set: none
	run env NO_COLOR=1 TERM=xterm AMP_PAGER=cat script -qec "amp status" /dev/null
	assert_success
	assert_output --partial "dispatched"
	refute_output --partial $'\033['
}

# share/doc/validator.md "PCRE2_UTF: code points, not bytes, whatever the
# locale".
@test "patterns match code points, not bytes, also when the locale is C" {
	cd "$BATS_TEST_TMPDIR"
	printf '{"type": "string", "pattern": "^.$"}' > one.schema.json
	printf '"\xc3\xa9"\n' > e.json
	printf '"ab"\n' > ab.json
	LC_ALL=C run amp validate --schema one.schema.json e.json ab.json
	assert_failure 1
	assert_line "e.json: ok"
	assert_line "amp validate: error: ab.json: string does not match pattern ^.$"
}

# amp(1) "Common options and arguments": "--repo DIR (default: the
# repository found from the current directory, as git finds it ...)".
@test "without --repo, amp finds the repository from a subdirectory, as git does" {
	send_dispatch
	mkdir -p deep/er
	cd deep/er
	run amp status $T
	assert_success
	assert_line --index 0 --regexp "^$T  dispatched"
	at 5
	run amp ack "$D" --from executor
	assert_success
	assert_equal "$(git rev-list --count refs/amp/messages)" 3
}

# README "For agent authors": "Errors go to stderr ...; results go to stdout."
@test "results go to stdout and errors to stderr, never the other way" {
	local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err rc
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > "$out" 2> "$err"
	assert_equal "$(cat "$out")" "task_dispatch-$T-1772116327000"
	assert_equal "$(cat "$err")" ""
	rc=0
	amp send task_dispatch --task T-44 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > "$out" 2> "$err" || rc=$?
	assert_equal "$rc" 2
	assert_equal "$(cat "$out")" ""
	assert_equal "$(cat "$err")" "amp send: error: --task: 'T-44' is not a task id (T-YYYY-NNN)"
	printf '{}' > "$BATS_TEST_TMPDIR/empty.json"
	rc=0
	amp send --envelope "$BATS_TEST_TMPDIR/empty.json" > "$out" 2> "$err" || rc=$?
	assert_equal "$rc" 1
	assert_equal "$(cat "$out")" ""
	grep -q '^amp send: error: missing required property "msg_id"$' "$err"
	amp status $T > "$out" 2> "$err"
	grep -q "^$T  dispatched" "$out"
	assert_equal "$(cat "$err")" ""
}

# amp-config(7): AMP_NOW is "ISO 8601 with offset, or 0..253402300799 s".
@test "AMP_NOW in Unix seconds is the same instant as its ISO 8601 form" {
	AMP_NOW=1772116327 run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	assert_output "task_dispatch-$T-1772116327000"
	run git show refs/amp/messages:$(record_path "$T" 000001.msg.task_dispatch-$T-1772116327000.json)
	assert_output --partial '"timestamp": "2026-02-26T14:32:07+00:00"'
}

# share/doc/validator.md "Remaining differences from ECMA-262": what is
# refused as a schema error (exit 4), and the ECMA-262 syntax PCRE2 takes.
@test "amp validate refuses the pattern syntax validator.md lists, as a schema error" {
	cd "$BATS_TEST_TMPDIR"
	echo '"ab"' > v.json
	for p in '(?<=a+)b' '\\p{Letter}'; do
		printf '{"pattern": "%s"}' "$p" > s.json
		run amp validate --schema s.json v.json
		assert_failure 4
		assert_output --partial "amp validate: error: file://$PWD/s.json#/pattern: invalid pattern "
	done
	# look-around, named groups, back-references, \b, \xHH and \uXXXX are ECMA-262's
	for p in 'a(?=b)' 'a(?!c)' '(?<=a)b' '(?<!c)b' '(?<n>a)\\k<n>?b' '(a)\\1?b' '\\p{L}' '^\\bab\\b$' '^a\\Bb$' '^\\x61b$' '^\\u0061b$'; do
		printf '{"pattern": "%s"}' "$p" > s.json
		run amp validate --schema s.json v.json
		assert_success
		assert_output "v.json: ok"
	done
	printf '{"pattern": "^a\\\\bb$"}' > s.json
	run amp validate --schema s.json v.json
	assert_failure 1
}

# share/doc/rules.md "Incremental": "A missing, corrupt or foreign state
# file (other ref, other amp.lockThreshold) costs a full rescan"; and the
# --json keys of a watch line.
@test "watch rescans when amp.lockThreshold changes, and --json lines carry the six documented keys" {
	dispatch_acked
	reject_rounds 2
	at 500
	run amp watch --once
	assert_success
	assert_output ""
	# the SSOT has not moved: only a rescan can find the lock
	git config amp.lockThreshold 2
	run amp watch --once --json
	assert_success
	# besides the "format" every --json result has
	run json_get 'sorted(k for k in d.keys() if k != "format")' <<<"$output"
	assert_output '["action", "cause", "escalation_type", "msg_id", "severity", "task_id"]'
	run amp status $T --json
	assert_output --partial '"state": "locked"'
}


# share/doc/rules.md "send time (... amp ack, amp resume): ... a refused
# one is logged on refs/amp/errors".
@test "a refused ACK is logged on the error log with its reason" {
	local before
	send_dispatch
	before=$(error_count)
	run amp ack "$D" --from reviewer
	assert_failure 3
	run amp ack "task_dispatch-$T-1772116327999" --from executor
	assert_failure 3
	assert_equal "$(error_count)" $((before + 2))
	run amp errors
	assert_line --index 1 "    /ack_for: task_dispatch-$T-1772116327999 is not in the SSOT: nothing to acknowledge"
	assert_line --index 3 "    /from: only the addressee (executor) may ACK $D, not reviewer"
	assert_equal "$(git rev-list --count refs/amp/messages)" 2
}

# amp(1) "Common options and arguments": "the commands that write (send,
# ack, verdict, escalate, resume, ...) first check that amp init has been run"; every option value must be
# UTF-8 "except the file names of --repo, --payload and --envelope".
@test "ack, verdict, resume, approve, abort and heartbeat also say to run amp init; a file name need not be UTF-8" {
	git init -q "$BATS_TEST_TMPDIR/fresh"
	cd "$BATS_TEST_TMPDIR/fresh"
	run amp ack "task_dispatch-$T-1772116327000" --from executor
	assert_failure 4
	assert_output "amp ack: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp verdict $T --from reviewer --decision approved --confidence 0.9
	assert_failure 4
	assert_output "amp verdict: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp resume $T --from admin --reason x
	assert_failure 4
	assert_output "amp resume: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp approve $T --from admin
	assert_failure 4
	assert_output "amp approve: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp abort $T --from coordinator --reason x
	assert_failure 4
	assert_output "amp abort: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run amp heartbeat $T --from executor
	assert_failure 4
	assert_output "amp heartbeat: error: no AMP store in this repository (refs/amp/messages is missing): run 'amp init'"
	run git for-each-ref
	assert_output ""
	cd "$BATS_TEST_TMPDIR/repo"
	cp "$BATS_TEST_TMPDIR/p/dispatch.json" $'\xffdispatch.json'
	run amp send task_dispatch --task $T --from coordinator --payload $'\xffdispatch.json' --repo "$PWD"
	assert_success
	assert_output "task_dispatch-$T-1772116327000"
}

# amp-protocol(7) "WHAT AMP PROMISES", no lost message: "a refused message is never
# lost either: its bytes and reasons go to refs/amp/errors".  It was lost
# (exit 4, "could not write the error log: out of memory") when the file
# name was not UTF-8: reasons.json could not hold it.
@test "a refused envelope whose file name is not UTF-8 is logged, the name escaped" {
	local before
	before=$(error_count)
	printf '{"msg_id": "x"}' > $'\xfeenv.json'
	run amp send --envelope $'\xfeenv.json'
	assert_failure 1
	assert_line --index 0 'amp send: error: missing required property "protocol_version"'
	refute_output --partial "error log"
	assert_equal "$(error_count)" $((before + 1))
	run amp errors --json
	assert_success
	assert_output --partial '"source": "\\xfeenv.json"'
	assert_output --partial '"msg_id": "x"'
}

# share/doc/json.md "amp status": last_successful_msg_id is "the newest message
# that was ACKed (or needs no ACK), not counting escalations and rejections".
@test "last_successful_msg_id: the newest ACKed message, never an escalation or a rejected verdict" {
	last() { amp status $T --json | json_get 'd["last_successful_msg_id"]'; }
	dispatch_acked
	assert_equal "$(last)" "$D"
	at 20
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	assert_equal "$(last)" "$D"
	amp ack "$R" --from coordinator > /dev/null
	assert_equal "$(last)" "$R"
	at 30
	amp escalate $T --from executor --type conflict --severity info --description "a question" > /dev/null
	assert_equal "$(last)" "$R"
	reject_rounds 1 100
	run amp status $T --json
	assert_output --partial '"reject_count": 1'
	assert_equal "$(last)" "$Q"
}

# share/doc/rules.md "Incremental": "A pass reads the ref; when it has not
# moved, only the timers are evaluated against AMP_NOW (no object is read)."
@test "a watch pass over an unchanged SSOT reads no object" {
	dispatch_acked
	run amp watch --once
	assert_success
	assert_output ""
	# the object database goes away; the refs stay
	mkdir "$BATS_TEST_TMPDIR/objects"
	mv .git/objects/* "$BATS_TEST_TMPDIR/objects/"
	at 100
	run amp watch --once
	assert_success
	assert_output ""
	mv "$BATS_TEST_TMPDIR/objects/"* .git/objects/
	# the same pass with --full reads them, so it would have failed
	mv .git/objects/* "$BATS_TEST_TMPDIR/objects/"
	run amp watch --once --full
	assert_failure 4
	mv "$BATS_TEST_TMPDIR/objects/"* .git/objects/
	run amp watch --once
	assert_success
}

# share/doc/rules.md: "amp watch [--interval SEC] ... loops until
# SIGINT/SIGTERM and exits 0" (45-watch.bats holds SIGTERM).
@test "watch --interval stops on SIGINT too, and exits 0" {
	send_dispatch
	at 400
	watch_loop_stopped_by INT
	assert_equal "$rc" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/loop.out")" "escalated ack_timeout $T $D (escalation-$T-1772116727000)"
}

# amp-protocol(7) "TASK STATES": the transition table is the one of
# lib/protocol/task.c, row for row, so the page states exactly what amp enforces.
@test "amp-protocol(7)'s transition table is amp_transitions[] of lib/protocol/task.c, row for row" {
	python3 "$AMP_SRC/test/transitions-table.py" "$AMP_SRC/lib/protocol/task.c" > want.scd
	[ "$(wc -l < want.scd)" -ge 120 ]
	# the table's rows: from its first row to the blank line that ends it
	sed -n '/^|  task_dispatch$/,/^$/p' "$AMP_SRC/share/man/amp-protocol.7.scd" | sed '/^$/d' > have.scd
	run diff want.scd have.scd
	assert_success
}
