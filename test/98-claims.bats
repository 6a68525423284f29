#!/usr/bin/env bats
# Claims with leases (issue 14): named executor instances race `amp claim`
# and exactly one wins (the claim is decided inside the store's
# compare-and-swap); the losers exit 6 and are told the winner; the lease
# is renewed by the holder's writes, released by `amp release` or the
# holder's task_result, and when it runs out amp watch releases it with one
# escalation and the task is claimable again.  While held, other
# executors' writes to the task are refused.  Time moves with AMP_NOW only.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	if [[ $BATS_TEST_DESCRIPTION == *"two clones"* ]]; then
		clones_setup
	else
		make_ssot
	fi
}

teardown() {
	if [[ $BATS_TEST_DESCRIPTION == *"two clones"* ]]; then
		clones_teardown
	else
		fsck_teardown
	fi
}

# claims TASK: the claims array of amp status --json.
claims() {
	amp status "${1:-$T}" --json | json_get 'd["claims"]'
}

# dispatch_task TASK: a dispatch of TASK to the executor (sets D).
dispatch_task() {
	D=$(amp send task_dispatch --task "$1" --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
}

@test "8 executors race amp claim on one task, 20 rounds: exactly one wins each round, the other 7 exit 6 told who won" {
	local round i n task winner wins g=$BATS_TEST_TMPDIR/gate
	for round in $(seq 1 20); do
		task=$(printf 'T-2026-%03d' $((100 + round)))
		dispatch_task "$task"
		rm -rf "$g" && mkdir -p "$g" && mkfifo "$g/fifo"
		for i in 1 2 3 4 5 6 7 8; do
			(
				touch "$g/ready.$i"
				# Blocks until the gate opens: the 8 start together.
				read -r _ < "$g/fifo"
				rc=0
				amp claim "$task" --agent "exec$i" > "$g/out.$i" 2> "$g/err.$i" || rc=$?
				echo $rc > "$g/rc.$i"
			) &
		done
		n=0
		while [ "$(ls "$g" | grep -c '^ready\.')" -lt 8 ] && [ $n -lt 2000 ]; do
			sleep 0.01
			n=$((n + 1))
		done
		exec 7> "$g/fifo"
		printf 'go\n%.0s' 1 2 3 4 5 6 7 8 >&7
		wait
		exec 7>&-
		wins=$(grep -lx 0 "$g"/rc.* | wc -l)
		[ "$wins" -eq 1 ] || fail "round $round: $wins winners: $(cat "$g"/rc.*)"
		[ "$(grep -lx 6 "$g"/rc.* | wc -l)" -eq 7 ] || fail "round $round: losers not exit 6: $(cat "$g"/rc.*)"
		winner=$(amp status "$task" --json | json_get 'd["claims"][0]["agent"]')
		grep -qx 0 "$g/rc.${winner#exec}" || fail "round $round: status names $winner, who lost"
		assert_equal "$(cat "$g/out.${winner#exec}")" "claimed $task as $winner, expires 2026-02-26 15:02:07 +0000 ($(claims "$task" | json_get 'd[0]["claim"]'))"
		for i in 1 2 3 4 5 6 7 8; do
			[ "exec$i" = "$winner" ] && continue
			assert_equal "$(cat "$g/err.$i")" "amp claim: error: /task_id: task $task is claimed by $winner until 2026-02-26T15:02:07+00:00"
		done
		# One claim record in the SSOT: the losers wrote nothing.
		[ "$(git ls-tree -r --name-only "refs/amp/messages:$(task_path "$task")" | grep -c '\.ctl\.claim-')" -eq 1 ]
	done
}

@test "a loser's --json names the holder and when its lease ends; a claim of nobody's task is exit 3; --agent is required" {
	send_dispatch
	run -0 amp claim $T --agent alice --ttl 600 --json
	assert_output '{"format":{"name":"claim","version":1},"task_id":"T-2026-044","subtask_id":null,"claimed":true,"agent":"alice","claim":"claim-1772116327000","expires":"2026-02-26T14:42:07+00:00","renewed":false,"holder":"alice"}'
	at 10
	run -6 --separate-stderr amp claim $T --agent bob --json
	assert_equal "$stderr" "amp claim: error: /task_id: task $T is claimed by alice until 2026-02-26T14:42:07+00:00"
	assert_output '{"format":{"name":"claim","version":1},"task_id":"T-2026-044","subtask_id":null,"claimed":false,"agent":"bob","claim":null,"expires":"2026-02-26T14:42:07+00:00","renewed":false,"holder":"alice"}'
	# The holder claiming again renews its lease.
	run -0 amp claim $T --agent alice --ttl 600
	assert_output "renewed the claim of $T as alice, expires 2026-02-26 14:42:17 +0000 (claim-1772116337000)"
	run -3 amp claim T-2026-999 --agent bob
	assert_output "amp claim: error: /task_id: task T-2026-999 has no records"
	run -2 amp claim $T
	assert_output --partial "a claim names its instance: --agent <name>"
	run -2 amp claim $T --agent 'bad name'
	assert_output --partial "--agent: 'bad name' is not an agent name"
	run -2 amp claim $T --agent bob --ttl 0
	run -3 amp claim $T --agent bob --subtask nope
	assert_output --partial "has no subtask nope"
}

@test "subtasks are claimed apart; a whole-task claim conflicts with every lease" {
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch2.json")
	run -0 amp claim $T --subtask T-2026-044-S1 --agent alice
	run -0 amp claim $T --subtask T-2026-044-S2 --agent bob
	run -6 amp claim $T --subtask T-2026-044-S1 --agent bob
	assert_output "amp claim: error: /task_id: subtask T-2026-044-S1 of $T is claimed by alice until 2026-02-26T15:02:07+00:00"
	run -6 amp claim $T --agent carol
	run -0 amp status $T
	assert_line "claimed by alice for subtask T-2026-044-S1 until 2026-02-26 15:02:07 +0000"
	assert_line "claimed by bob for subtask T-2026-044-S2 until 2026-02-26 15:02:07 +0000"
}

@test "while held, another executor's result, ACK and heartbeat are refused (exit 3); the holder's result is taken and releases the lease" {
	send_dispatch
	amp claim $T --agent alice > /dev/null
	at 5
	run -3 amp ack "$D" --from executor --agent bob
	assert_output "amp ack: error: /from: task $T is claimed by alice until 2026-02-26T15:02:07+00:00: only alice may write to it as the executor (you are bob)"
	run -3 amp heartbeat $T --from executor
	assert_output --partial "only alice may write to it as the executor (you are an unnamed executor: --agent)"
	amp ack "$D" --from executor --agent alice > /dev/null
	at 20
	run -3 amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --agent bob --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_output --partial "amp send: error: /from: task $T is claimed by alice until 2026-02-26T15:02:12+00:00"
	# Refusals are logged like any other.
	run -0 amp errors --json
	assert_output --partial 'claimed by alice'
	AMP_AGENT=alice run -0 amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_equal "$(claims)" "[]"
	at 30
	run -0 amp claim $T --agent bob
}

@test "a lease is renewed by the holder's writes (heartbeat included), and expires after ttl of silence" {
	send_dispatch
	amp claim $T --agent alice --ttl 60 > /dev/null
	at 50
	amp heartbeat $T --from executor --agent alice > /dev/null
	at 100
	run -6 amp claim $T --agent bob
	assert_output --partial "claimed by alice until 2026-02-26T14:33:57+00:00"
	run -0 amp watch --once
	assert_output ""
	at 111
	run -0 amp claim $T --agent bob
}

@test "an expired claim (its holder never writes again) is released by amp watch with one escalation, and another executor claims it" {
	send_dispatch
	at 1
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim $T --agent alice --ttl 60 > /dev/null
	C=$(claims | json_get 'd[0]["claim"]')
	run -0 amp watch --once
	assert_output ""
	at 61
	run -0 amp watch --once
	assert_output ""
	at 62
	run -0 amp status $T
	assert_line "claimed by alice until 2026-02-26 14:33:08 +0000 (expired: amp watch releases it)"
	run -0 amp watch --once
	assert_output --regexp "^escalated heartbeat_timeout $T $C \(escalation-$T-1772116389000\)$"
	run -0 amp watch --once
	assert_output ""
	at 500
	run -0 amp watch --once
	assert_output ""
	assert_equal "$(escalation_count heartbeat_timeout)" 1
	E=$(the_escalation heartbeat_timeout)
	assert_escalation "$E" heartbeat_timeout warning "[\"$D\"]" in_progress 0 false
	run -0 escalation_file "$E"
	assert_output --partial "\"description\": \"no write since $(record_path "$T" 000004.ctl.claim-1772116328000.json): alice claimed $T on a lease of 60 s"
	# The release is system's, in the same commit as the escalation.
	run -0 git show --stat --format='%an%n%B' refs/amp/messages
	assert_output --partial "release $T system: $C of alice"
	assert_output --partial ".ctl.release-1772116389000.json"
	assert_output --partial ".msg.$E.json"
	assert_equal "$(claims)" "[]"
	run -0 amp claim $T --agent bob
}

@test "amp release: the holder gives it back, nobody else but the coordinator or the admin; --json" {
	send_dispatch
	amp claim $T --agent alice > /dev/null
	run -3 amp release $T --agent bob
	assert_output "amp release: error: /task_id: bob holds no single lease of task $T to release"
	run -0 amp release $T --agent alice --reason "done for today" --json
	assert_output '{"format":{"name":"release","version":1},"task_id":"T-2026-044","subtask_id":null,"release":"release-1772116327000","releases":"claim-1772116327000","agent":"alice","from":"executor"}'
	run -3 amp release $T --agent alice
	amp claim $T --agent bob > /dev/null
	at 1
	run -0 amp release $T --from coordinator
	assert_output "released $T: the lease of bob (claim-1772116327001) ended; the task is claimable again"
	run -0 amp status $T
	assert_line "control: 2026-02-26 14:32:08 +0000  release by coordinator (agent bob)"
}

@test "a suspended task refuses a claim, exactly like a message; an aborted one too" {
	send_dispatch
	amp escalate $T --type conflict --severity critical --description "stop" --from coordinator > /dev/null
	run -3 amp claim $T --agent alice
	assert_output --partial "amp claim: error: /task_id: task $T is suspended"
	run -0 amp errors --json
	assert_output --partial '"claim"'
}

@test "the hub's hook and amp fsck take claims in force and refuse a claim planted inside another instance's lease" {
	send_dispatch
	amp claim $T --agent alice > /dev/null
	at 10
	plant "$(next_path $T claim-1772116337000 ctl)" <<JSON
{"protocol_version":"AMP/1.0","type":"claim","task_id":"$T","from":"executor","timestamp":"2026-02-26T14:32:17+00:00","agent":"bob","ttl_sec":60}
JSON
	run amp fsck
	assert_failure
	assert_output --partial "is claimed by alice at the claim's time"
	# Not in force: alice still holds it.
	assert_equal "$(claims | json_get '[c["agent"] for c in d]')" '["alice"]'
}

@test "a claim record that breaks its schema is refused by fsck: closed objects" {
	send_dispatch
	plant "$(next_path $T claim-1772116327000 ctl)" <<JSON
{"protocol_version":"AMP/1.0","type":"claim","task_id":"$T","from":"executor","timestamp":"2026-02-26T14:32:07+00:00","agent":"bob","ttl_sec":60,"extra":1}
JSON
	run amp fsck
	assert_failure
	assert_output --partial "extra"
}

@test "two clones claiming offline, then syncing: the join keeps the first claim in the hub's order and sets the other aside" {
	dispatched_on_both
	at 5
	on a amp claim $T --agent alice > /dev/null
	at 7
	on b amp claim $T --agent bob > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":1,'
	run -0 on b amp status $T --json
	run -0 json_get '[[c["agent"] for c in d["claims"]], [(s["type"], s["from"]) for s in d["superseded"]]]' <<< "$output"
	assert_output '[["alice"], [["claim", "executor"]]]'
	# bob is told, like a loser of a race on one clone.
	run -6 on b amp claim $T --agent bob
	assert_output --partial "is claimed by alice"
	run -0 on a amp sync
	run -0 on a amp fsck
}
