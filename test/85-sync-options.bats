#!/usr/bin/env bats
# Syncing as part of other commands (issue 10): --sync on the writing
# commands and git config amp.autoSync, amp watch --sync (fetch before each
# pass, push what it wrote), amp wait --sync (poll the remote).  A bare hub
# given as a path, with the server hook installed.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	clones_setup
}

teardown() {
	[ -z "${WAITER:-}" ] || kill "$WAITER" 2> /dev/null || true
	clones_teardown
}

hub_has() {
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.$1\.json$"
}

@test "--sync delivers what the command wrote, on every writing command; stdout stays its result" {
	run -0 on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --sync
	D=$output
	[[ $D =~ ^task_dispatch-$T-[0-9]+$ ]]
	hub_has "msg.$D"
	at 5
	on b amp sync > /dev/null
	run -0 on b amp ack "$D" --from executor --sync --json
	assert_output --regexp '^\{"format":\{"name":"ack","version":1\},"ack_for":"'"$D"'","duplicate":false,"escalation":null\}$'
	hub_has "ack.$D"
	at 10
	run -0 on b amp heartbeat $T --from executor --sync
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	assert_output --regexp '\.ctl\.heartbeat-[0-9]+\.json'
	run -0 on a amp escalate $T --type unknown --severity info --description "just saying" --from coordinator --sync
	hub_has "msg.$output"
	# without it nothing leaves
	run -0 on a amp escalate $T --type unknown --severity info --description "local" --from coordinator
	! hub_has "msg.$output"
	# a's escalation was written before a saw b's ACK: its snapshot
	# (dispatched) was the SSOT's then, and the join keeps it in force
	on b amp sync > /dev/null
	run -0 on b amp status $T --json
	run -0 json_get '[len(d["escalations"]), d["superseded"]]' <<< "$output"
	assert_output '[1, []]'
	run -0 on b amp watch --once
	refute_output --partial escalated
}

@test "git config amp.autoSync syncs after every write; --no-sync keeps one local; a bad value is exit 2" {
	on a git config amp.autoSync true
	run -0 on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	D=$output
	hub_has "msg.$D"
	run -0 on a amp heartbeat $T --from coordinator --no-sync
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	refute_output --partial heartbeat
	on a git config amp.autoSync maybe
	run -2 on a amp heartbeat $T --from coordinator
	assert_output --partial "amp.autoSync"
}

@test "--sync with the hub unreachable: the write stands locally, exit 4 says so, and a later sync delivers it" {
	mv "$HUB" "$HUB.away"
	run -4 --separate-stderr on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --sync
	[[ $output =~ ^task_dispatch-$T-[0-9]+$ ]]
	D=$output
	[[ $stderr == *"amp send: error: sync: "* ]]
	[[ $stderr == *"(what was written stays in the local SSOT: run amp sync)"* ]]
	run -0 on a amp status $T --json
	assert_output --partial "$D"
	mv "$HUB.away" "$HUB"
	run -0 on a amp sync
	hub_has "msg.$D"
}

@test "a refused write that escalated sends the escalation with --sync" {
	sed 's/"feature\/[^"]*"/"main"/' "$BATS_TEST_TMPDIR/p/dispatch.json" > main.json
	run -3 on a amp send task_dispatch --task $T --from coordinator --payload ../main.json --sync
	run -0 on b amp sync
	run -0 on b escalations
	assert_output --partial branch_violation
}

@test "amp watch --sync escalates an ACK timeout and pushes it: the executor's clone sees it after its own sync, and the other watcher does not escalate it again" {
	run -0 on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --sync
	D=$output
	on b amp sync > /dev/null
	at 400
	run -0 on a amp watch --once --sync
	assert_output --partial "escalated ack_timeout"
	hub_has "msg.escalation-$T-[0-9]*"
	run -0 on b amp sync
	run -0 on b escalations
	run -0 json_get '[(e["escalation_type"], e["affected_msgs"]) for e in d]' <<< "$output"
	assert_output "[[\"ack_timeout\", [\"$D\"]]]"
	# a watcher on b that syncs first finds the cause escalated
	on a amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	at 460
	run -0 on b amp watch --once --sync
	refute_output --partial "$D"
	run -0 on b escalations
	run -0 json_get 'len(d)' <<< "$output"
	assert_output 1
}

@test "amp watch --sync with the hub away still watches the local SSOT, and exits 4 for the failed sync" {
	on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	mv "$HUB" "$HUB.away"
	at 400
	run -4 on a amp watch --once --sync
	assert_output --partial "escalated ack_timeout"
	assert_output --partial "amp watch: error: sync: "
	mv "$HUB.away" "$HUB"
}

@test "amp wait --sync polls the remote: a dispatch sent on another clone wakes it" {
	on b git config amp.syncInterval 1
	(cd b && exec amp wait executor --sync --timeout 30 --json > "$BATS_TEST_TMPDIR/wait.out" 2> "$BATS_TEST_TMPDIR/wait.err") &
	WAITER=$!
	sleep 1.5
	kill -0 "$WAITER" # still waiting: nothing yet
	run -0 on a amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --sync
	D=$output
	wait "$WAITER"
	WAITER=
	run -0 cat "$BATS_TEST_TMPDIR/wait.out"
	assert_output --partial "\"msg_id\": \"$D\""
}

@test "amp wait --sync times out with exit 5, and a bad amp.syncInterval is exit 2" {
	on b git config amp.syncInterval 1
	run -5 on b amp wait executor --sync --timeout 2
	assert_output --partial "nothing for executor after 2s"
	on b git config amp.syncInterval 0
	run -2 on b amp wait executor --sync --timeout 2
	assert_output --partial "amp.syncInterval"
}

@test "amp wait --sync with the hub away warns at each poll and goes on waiting" {
	on b git config amp.syncInterval 1
	mv "$HUB" "$HUB.away"
	run -5 on b amp wait executor --sync --timeout 2
	assert_output --partial "amp wait: warning: sync: "
	assert_output --partial "nothing for executor after 2s"
	mv "$HUB.away" "$HUB"
}
