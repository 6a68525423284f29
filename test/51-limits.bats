#!/usr/bin/env bats
# The limits of what amp accepts (amp-protocol(7) "LIMITS", lib/record/bounds.h, the
# schemas): whatever amp accepts, amp can read back, ACK and show; whatever
# is past a limit is refused with exit 1 naming the limit and the path, and
# logged.  Each limit has a test at the limit and one just past it; records
# past the limits that arrive by a fetch are unreadable records, never a
# vanished task.

load helpers
load conversation
load enforcer

D=task_dispatch-$T-1772116327000

setup() {
	make_ssot
	# the generated dispatches name a repository on another machine
	git config amp.checkRepo false
	IN=$BATS_TEST_TMPDIR/in
	mkdir -p "$IN"
}

# gen MODE OUT ARGS...: writes an input with test/limits-inputs.py.
gen() {
	/usr/bin/python3 "$BATS_TEST_DIRNAME/limits-inputs.py" "$@"
}

# The dispatch $D was stored, can be ACKed, and amp status shows it.
assert_accepted() {
	assert_equal "$(git cat-file -t "refs/amp/messages:$(record_path "$T" 000001.msg.$D.json)")" blob
	run amp ack "$D" --from executor
	assert_success
	run amp status $T
	assert_success
	assert_output --partial "$D  acked"
	refute_output --partial unreadable
}

# The last rejection on the error log names $1 (a path) and $2 (a reason).
assert_logged() {
	run amp errors --json --limit 1
	assert_success
	assert_output --partial "\"path\": \"$1\""
	assert_output --partial "$2"
}

# A new, empty SSOT for the next case of a test.
fresh_ssot() {
	cd "$BATS_TEST_TMPDIR" && rm -rf repo && setup
}

# No message was stored.
assert_nothing_stored() {
	assert_equal "$(commit_count)" 1
}

@test "size: a record stored as exactly 1048576 bytes is accepted, ACKed and shown" {
	gen sized "$IN/m.json" 1048576
	run amp send --envelope "$IN/m.json"
	assert_success
	assert_output "$D"
	assert_equal "$(git cat-file -s "refs/amp/messages:$(record_path "$T" 000001.msg.$D.json)")" 1048576
	run amp validate "$IN/m.json"
	assert_success
	assert_accepted
}

@test "size: a record stored as 1048577 bytes is refused with exit 1 by send and validate, and logged" {
	# compact on input (under 1 MiB), one byte too many as amp stores it
	gen sized "$IN/m.json" 1048577
	[ "$(stat -c %s "$IN/m.json")" -lt 1048576 ]
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output "amp send: error: 1048577 bytes as stored, more than the 1048576-byte message size limit"
	assert_nothing_stored
	assert_logged "" "1048576-byte message size limit"
	run amp validate "$IN/m.json"
	assert_failure 1
	assert_output --partial "1048577 bytes as stored, more than the 1048576-byte message size limit"
}

@test "size: input over 1 MiB is refused unread; the error log keeps 64 KiB of it and its size" {
	gen sized "$IN/m.json" 1048577 --indented
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output "amp send: error: 1048577 bytes, more than the 1048576-byte message size limit"
	# 100 MB: refused without reading it (a sparse file: reading it all
	# would take the time and memory the limit is there to save)
	truncate -s 100M "$IN/huge.json"
	run amp send task_dispatch --task $T --from coordinator --payload "$IN/huge.json"
	assert_failure 1
	assert_output "amp send: error: /payload: 104857600 bytes, more than the 1048576-byte message size limit"
	run amp errors --json --limit 1
	assert_output --partial '"size": 104857600'
	assert_output --partial '"raw_bytes_kept": 65536'
	raw=$(git ls-tree -r refs/amp/errors | awk '$4 ~ /\/raw$/ {print $3}' | while read -r b; do git cat-file -s "$b"; done | sort -n | tail -1)
	assert_equal "$raw" 65536
	# an endless pipe: amp stops one byte past the limit
	run timeout 60 bash -c 'yes "[[[[" | amp verdict T-2026-044 --decision approved --confidence 1 --payload -'
	assert_failure 1
	assert_output "amp verdict: error: /payload: more than 1048576 bytes: past the 1048576-byte message size limit"
	run amp errors --json --limit 1
	assert_output --partial '"size_at_least": true'
	assert_nothing_stored
}

@test "depth: a record 32 levels deep is accepted, ACKed and shown" {
	gen deep "$IN/m.json" 32
	run amp validate "$IN/m.json"
	assert_success
	run amp send --envelope "$IN/m.json"
	assert_success
	assert_accepted
}

@test "depth: a payload 31 levels deep (32 in its envelope) goes through amp send --payload" {
	gen deep "$IN/p.json" 32 --payload
	run amp send task_dispatch --task $T --from coordinator --payload "$IN/p.json"
	assert_success
	assert_output "$D"
	assert_accepted
}

@test "depth: 33 levels are refused with exit 1 naming the path, by send, validate and --payload" {
	local deep=/payload/tech_constraints$(printf '/a%.0s' $(seq 30))
	gen deep "$IN/m.json" 33
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output "amp send: error: $deep: nested deeper than the 32-level depth limit (the record is level 1)"
	assert_logged "$deep" "32-level depth limit"
	run amp validate "$IN/m.json"
	assert_failure 1
	assert_output --partial "$deep: nested deeper than the 32-level depth limit"
	gen deep "$IN/p.json" 33 --payload
	run amp send task_dispatch --task $T --from coordinator --payload "$IN/p.json"
	assert_failure 1
	assert_output "amp send: error: $deep: nested deeper than the 32-level depth limit (the record is level 1)"
	assert_nothing_stored
}

@test "depth: 100,000 levels are refused with exit 1 before any parser sees them" {
	/usr/bin/python3 -c 'print("{\"a\":" * 100000 + "1" + "}" * 100000)' > "$IN/m.json"
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output --partial "nested deeper than the 32-level depth limit"
	run amp validate "$IN/m.json"
	assert_failure 1
	assert_output --partial "/a/a/a: nested deeper than the 32-level depth limit"
	run amp errors --json --limit 1
	assert_output --partial '"size": 600002'
	assert_nothing_stored
}

@test "strings: 65536 characters are accepted, ACKed and shown; 65537 are refused naming the path" {
	# characters, as JSON Schema counts them: 'é' is two bytes
	gen string "$IN/m.json" 65536
	run amp validate "$IN/m.json"
	assert_success
	run amp send --envelope "$IN/m.json"
	assert_success
	assert_accepted
	fresh_ssot
	gen string "$IN/m.json" 65537
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output "amp send: error: /payload/description: 65537 characters, longer than the 65536-character string limit"
	assert_logged /payload/description "65536-character string limit"
	run amp validate "$IN/m.json"
	assert_failure 1
	assert_output --partial "/payload/description: 65537 characters"
	assert_nothing_stored
}

@test "strings: a member name of an open object is bounded like any string" {
	gen key "$IN/m.json" 65536
	run amp send --envelope "$IN/m.json"
	assert_success
	fresh_ssot
	gen key "$IN/m.json" 65537
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output --partial "member name of 65537 characters, longer than the 65536-character string limit"
	assert_nothing_stored
}

@test "arrays and objects: 1000 subtasks, criteria, forbidden actions, tech_constraints are accepted, ACKed and shown" {
	gen arrays "$IN/m.json" 1000
	run amp validate "$IN/m.json"
	assert_success
	run amp send --envelope "$IN/m.json"
	assert_success
	assert_accepted
}

@test "arrays and objects: 1001 items are refused with exit 1 naming the field, and logged" {
	for field in subtasks acceptance_criteria forbidden_actions tech_constraints; do
		gen arrays "$IN/m.json" 1001 $field
		run amp send --envelope "$IN/m.json"
		assert_failure 1
		assert_output --partial "amp send: error: /payload/$field:"
		assert_output --partial 1000
		assert_logged /payload/$field 1000
		run amp validate "$IN/m.json"
		assert_failure 1
		assert_output --partial "/payload/$field:"
	done
	assert_nothing_stored
}

@test "ids: amp validate, amp send, amp status and amp ack agree on every task_id and msg_id" {
	# the largest msg_id time (9999-12-31T23:59:59.999Z)
	local max_ms=253402300799999
	# the last time a commit can be dated (libgit2 writes 32 bits; a later
	# write is refused: 30-caches.bats)
	local commit_ts=2106-02-07T06:28:15.999Z commit_ms=4294967295999
	# task_id  msg_id-suffix(unix_ms)  timestamp  verdict
	while read -r task ms ts want; do
		fresh_ssot
		export AMP_NOW=$ts
		id=task_dispatch-$task-$ms
		gen ids "$IN/m.json" "$task" "$id" "$ts"
		run amp validate "$IN/m.json"
		if [ "$want" = ok ]; then assert_success; else assert_failure 1; fi
		run amp send --envelope "$IN/m.json"
		if [ "$want" = ok ]; then
			assert_success
			assert_output "$id"
			run amp status "$task"
			assert_success
			assert_output --partial "$id"
			run amp ack "$id" --from executor
			assert_success
			assert_output "acked $id"
		else
			assert_failure 1
			assert_nothing_stored
			run amp status "$task"
			assert_failure 2
			# a malformed operand is a usage error (exit 2)
			run amp ack "$id" --from executor
			assert_failure 2
		fi
	done <<EOF
T-2026-044 1772116327000 2026-02-26T14:32:07+00:00 ok
T-2026-123456789 1772116327000 2026-02-26T14:32:07+00:00 ok
T-2026-1234567890 1772116327000 2026-02-26T14:32:07+00:00 bad
T-2026-44 1772116327000 2026-02-26T14:32:07+00:00 bad
T-2026-$(printf '4%.0s' $(seq 400)) 1772116327000 2026-02-26T14:32:07+00:00 bad
T-2026-044 $commit_ms $commit_ts ok
T-2026-044 0$max_ms $commit_ts bad
T-2026-044 1${max_ms} $commit_ts bad
T-2026-044 0 1970-01-01T00:00:00Z ok
EOF
}

@test "ids: a 425-character msg_id is refused, not stored under a truncated name" {
	local task=T-2026-$(printf '4%.0s' $(seq 400))
	gen ids "$IN/m.json" "$task" "task_dispatch-$task-1772116327000" "2026-02-26T14:32:07+00:00"
	run amp send --envelope "$IN/m.json"
	assert_failure 1
	assert_output --partial "/task_id: string does not match pattern ^T-[0-9]{4}-[0-9]{3,9}\$"
	assert_nothing_stored
	assert_logged /task_id "does not match"
}

@test "read side: records past the limits that arrive by a fetch are unreadable, and the task stays" {
	send_dispatch
	# one of each: too large, too deep, 100,000 deep, a string too long
	gen sized "$IN/big.json" 1048577 --indented
	plant "$(next_path $T task_result-$T-1772116400001)" < "$IN/big.json"
	gen deep "$IN/deep.json" 33
	plant "$(next_path $T task_result-$T-1772116400002)" < "$IN/deep.json"
	/usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)' | plant "$(next_path $T task_result-$T-1772116400003)"
	gen string "$IN/long.json" 65537
	plant "$(next_path $T task_result-$T-1772116400004)" < "$IN/long.json"
	# and one at the limit, which reads back
	gen sized "$IN/max.json" 1048576 --indented --ms 1772116327005
	plant "$(next_path $T task_dispatch-$T-1772116327005)" < "$IN/max.json"
	run amp status $T
	assert_success
	assert_output --partial "$D"
	assert_output --partial "unreadable record 000002.msg.task_result-$T-1772116400001.json: 1048577 bytes, more than the 1048576-byte message size limit"
	assert_output --partial "unreadable record 000003.msg.task_result-$T-1772116400002.json: /payload/tech_constraints/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a: nested deeper than the 32-level depth limit"
	assert_output --partial "unreadable record 000004.msg.task_result-$T-1772116400003.json: /0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0: nested deeper"
	assert_output --partial "unreadable record 000005.msg.task_result-$T-1772116400004.json: /payload/description: 65537 characters, longer than the 65536-character string limit"
	assert_output --partial "task_dispatch-$T-1772116327005"
	refute_output --partial "unreadable record 000006"
	run amp status $T --json
	assert_success
	assert_equal "$(echo "$output" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["unreadable"]))')" 4
	# the enforcer escalates each as unknown, and the task goes on
	at 10
	run amp watch --once
	assert_success
	assert_equal "$(echo "$output" | grep -c "^escalated unknown $T")" 4
	run amp ack "$D" --from executor
	assert_success
}

@test "names: a configured ref too long for amp's buffers is refused, never cut to another ref" {
	git config amp.ref "refs/amp/$(printf 'm%.0s' $(seq 300))"
	run amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output --partial "git config amp.ref: longer than 254 characters"
	run git for-each-ref --format='%(refname)' refs/amp/
	assert_output "refs/amp/errors
refs/amp/messages"
}

@test "strings: amp resume and amp escalate hold their text to the string limit" {
	send_dispatch
	long=$(printf 'x%.0s' $(seq 65537))
	run amp escalate $T --from executor --type conflict --severity critical --description "$long"
	assert_failure 1
	assert_output --partial "/payload/description: 65537 characters, longer than the 65536-character string limit"
	E=$(amp escalate $T --from executor --type conflict --severity critical --description "stop")
	run amp resume $T --from admin --reason "$long"
	assert_failure 1
	assert_output --partial "/reason: 65537 characters, longer than the 65536-character string limit"
	run amp resume $T --from admin --reason "$(printf 'x%.0s' $(seq 65536))"
	assert_success
	run amp status $T
	refute_output --partial unreadable
}

@test "strings: amp approve, abort and heartbeat hold their text to the string limit, and what they accept reads back" {
	sed 's/"risk_level": "medium"/"risk_level": "high"/' "$BATS_TEST_TMPDIR/p/dispatch.json" > high.json
	D=$(amp send task_dispatch --task $T --from coordinator --payload high.json)
	long=$(printf 'x%.0s' $(seq 65537))
	ok=$(printf 'x%.0s' $(seq 65536))
	run amp approve $T --from admin --reason "$long"
	assert_failure 1
	assert_output --partial "/reason: 65537 characters, longer than the 65536-character string limit"
	run amp approve $T --from admin --reason "$ok"
	assert_success
	run amp heartbeat $T --from executor --note "$long"
	assert_failure 1
	assert_output --partial "/note: 65537 characters, longer than the 65536-character string limit"
	run amp heartbeat $T --from executor --note "$ok"
	assert_success
	run amp abort $T --from coordinator --reason "$long"
	assert_failure 1
	assert_output --partial "/reason: 65537 characters, longer than the 65536-character string limit"
	run amp abort $T --from coordinator --reason "$ok"
	assert_success
	run amp status $T --json
	assert_output --partial '"state": "aborted"'
	assert_output --partial '"unreadable": []'
}
