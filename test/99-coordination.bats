#!/usr/bin/env bats
# Coordinating many agents (issue 14): named agent instances on every
# write (--agent, AMP_AGENT, git config amp.agent: the commit author and an
# Amp-Agent trailer, shown by amp log and amp status; with signing, the
# key's principal names the instance).  Time moves with AMP_NOW only.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

@test "--agent names the instance: the commit author and an Amp-Agent trailer; amp log shows it, --json has agent" {
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --agent planner-1 --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 git log -1 --format='%an <%ae>%n%(trailers:key=Amp-Agent)' refs/amp/messages
	assert_output "planner-1 <coordinator@amp.invalid>
Amp-Agent: planner-1"
	at 5
	amp ack "$D" --from executor > /dev/null
	run -0 git log -1 --format='%an <%ae>|%(trailers:key=Amp-Agent)|' refs/amp/messages
	assert_output "executor <executor@amp.invalid>||"
	# the dispatch's commit holds its round record too (issue 33)
	run -0 amp log -n 3
	assert_line --index 0 --regexp "  ack +executor +-> coordinator  $D$"
	assert_line --index 1 --regexp "ctl/round +coordinator +round-${D##*-}  agent planner-1$"
	assert_line --index 2 --regexp "msg/task_dispatch +coordinator +-> executor +$D  agent planner-1$"
	run -0 amp log -n 3 --json
	run -0 json_get 'd["agent"]' <<< "${lines[0]}"
	assert_output null
	run -0 amp log -n 3 --json
	run -0 json_get 'd["agent"]' <<< "${lines[2]}"
	assert_output planner-1
}

@test "AMP_AGENT and git config amp.agent name the instance when --agent does not; --agent wins, then AMP_AGENT" {
	send_dispatch
	git config amp.agent from-config
	amp heartbeat $T --from coordinator > /dev/null
	assert_equal "$(git log -1 --format=%an refs/amp/messages)" from-config
	AMP_AGENT=from-env amp heartbeat $T --from coordinator > /dev/null
	assert_equal "$(git log -1 --format=%an refs/amp/messages)" from-env
	AMP_AGENT=from-env amp heartbeat $T --from coordinator --agent from-option > /dev/null
	assert_equal "$(git log -1 --format=%an refs/amp/messages)" from-option
	# The heartbeat names its instance in the record, and amp status shows it.
	run -0 amp status $T
	assert_line "control: 2026-02-26 14:32:07 +0000  heartbeat by coordinator (agent from-option)"
}

@test "an agent name is 1..64 of A-Z a-z 0-9 . _ -: anything else is exit 2 naming where it came from, and nothing is written" {
	send_dispatch
	before=$(commit_count)
	errors_before=$(error_count)
	run -2 amp heartbeat $T --from coordinator --agent 'a b'
	assert_output "amp heartbeat: error: --agent: 'a b' is not an agent name (1 to 64 of A-Z a-z 0-9 . _ -)"
	run -2 env AMP_AGENT=$'\e[31mred' amp heartbeat $T --from coordinator
	assert_output "amp heartbeat: error: AMP_AGENT: '\\x1b[31mred' is not an agent name (1 to 64 of A-Z a-z 0-9 . _ -)"
	git config amp.agent "$(printf 'x%.0s' $(seq 65))"
	run -2 amp ack "$D" --from executor
	assert_output --partial "amp ack: error: git config amp.agent: 'xxxx"
	run -2 amp send task_result --task $T --from executor --agent 'a/b' --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_equal "$(commit_count)" "$before"
	assert_equal "$(error_count)" "$errors_before"
}

@test "with signing, the key's principal names the instance (alice@executor); an --agent that disagrees is refused before anything is written" {
	unset AMP_NOW
	local K=$BATS_TEST_TMPDIR/keys
	mkdir -p "$K"
	ssh-keygen -q -t ed25519 -N '' -f "$K/coordinator"
	ssh-keygen -q -t ed25519 -N '' -f "$K/alice"
	{
		printf 'coordinator %s\n' "$(cut -d' ' -f1,2 "$K/coordinator.pub")"
		printf 'alice@executor %s\n' "$(cut -d' ' -f1,2 "$K/alice.pub")"
	} > "$K/signers"
	git config amp.allowedSigners "$K/signers"
	git config amp.requireSigned true
	git config amp.signingKey "$K/coordinator"
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	git config amp.signingKey "$K/alice"
	before=$(commit_count)
	run -3 amp ack "$D" --from executor --agent bob
	assert_output --partial "agent bob disagrees with the signing key's principal alice@executor"
	assert_equal "$(commit_count)" "$before"
	run -0 amp ack "$D" --from executor
	run -0 git log -1 --format='%an <%ae>|%(trailers:key=Amp-Agent,valueonly)' refs/amp/messages
	assert_output "alice <executor@amp.invalid>|alice"
	run -0 amp heartbeat $T --from executor --agent alice
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages
	# a claim needs no --agent either: the principal names the instance
	run -0 amp claim $T --from executor
	assert_output --regexp "^claimed $T as alice, expires "
	run -0 git log -1 --format='%an|%(trailers:key=Amp-Agent,valueonly)' refs/amp/messages
	assert_output "alice|alice"
}

# dispatch_of TASK: a dispatch of TASK to the executor; the exit code.
dispatch_of() {
	amp send task_dispatch --task "$1" --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
}

@test "dependencies: a dispatch is refused until its dependency is approved; amp ready and amp status after each step" {
	B=T-2026-045
	run -0 amp depend $B --on $T --from coordinator
	assert_output "$B waits for $T (depend-1772116327000)"
	run -0 amp ready --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[]}'
	run -0 amp status $B --json
	run -0 json_get 'd["waits_for"]' <<< "$output"
	assert_output '[{"task_id": "T-2026-044", "soft": false, "state": "new"}]'
	run -3 dispatch_of $B
	assert_output "amp send: error: /task_id: task $B waits for $T (new): a dispatch is refused until it is approved (amp depend)"
	send_dispatch
	run -0 amp ready --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[{"task_id":"T-2026-044","state":"dispatched","priority":"P2","deadline":null,"capability":null,"since":"2026-02-26T14:32:07+00:00"}]}'
	run -0 amp status $B
	assert_line "waits for $T (dispatched)"
	at 5; amp ack "$D" --from executor > /dev/null
	at 10; review_round 0
	run -0 amp ready
	assert_output "$T  P2  in_review         since 2026-02-26 14:32:07 +0000"
	run -3 dispatch_of $B
	assert_output --partial "waits for $T (in_review)"
	at 20; amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json" > /dev/null
	run -0 amp ready --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[{"task_id":"T-2026-045","state":"new","priority":"P2","deadline":null,"capability":null,"since":"2026-02-26T14:32:07+00:00"}]}'
	run -0 amp status $B --json
	run -0 json_get 'd["waits_for"]' <<< "$output"
	assert_output '[]'
	run -0 dispatch_of $B
	run -0 amp ready --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[{"task_id":"T-2026-045","state":"dispatched","priority":"P2","deadline":null,"capability":null,"since":"2026-02-26T14:32:07+00:00"}]}'
	amp claim $B --agent alice > /dev/null
	run -0 amp ready --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[]}'
}

@test "dependencies: a cycle is refused, and so is a task depending on itself; only the coordinator or the admin plans them" {
	amp depend T-2026-002 --on T-2026-001 --from coordinator > /dev/null
	amp depend T-2026-003 --on T-2026-002 --from admin > /dev/null
	before=$(commit_count)
	run -3 amp depend T-2026-001 --on T-2026-003 --from coordinator
	assert_output "amp depend: error: /on: a cycle: T-2026-003 already waits for T-2026-001 (T-2026-003 -> T-2026-002 -> T-2026-001), so T-2026-001 cannot wait for T-2026-003"
	run -3 amp depend T-2026-001 --on T-2026-001 --from coordinator
	assert_output "amp depend: error: /on: task T-2026-001 cannot depend on itself"
	run -3 amp depend T-2026-004 --on T-2026-001 --from executor
	assert_output "amp depend: error: /from: a dependency is planned by the coordinator or the admin, not executor"
	assert_equal "$(commit_count)" "$before"
	run -2 amp depend T-2026-004 --on nope --from coordinator
	run -2 amp depend T-2026-004 --from coordinator
	# A cycle that arrives by a push or a fetch is found by amp fsck.
	plant "$(next_path T-2026-001 depend-1772116327000 ctl)" <<JSON
{"protocol_version":"AMP/1.0","type":"depend","task_id":"T-2026-001","from":"coordinator","timestamp":"$AMP_NOW","on":"T-2026-003","soft":false}
JSON
	run amp fsck
	assert_failure
	assert_output --partial "a cycle: T-2026-003 already waits for T-2026-001"
}

@test "a soft dependency warns on stderr and lets the dispatch through" {
	amp depend T-2026-045 --on $T --soft --from coordinator > /dev/null
	run -0 --separate-stderr dispatch_of T-2026-045
	assert_output "task_dispatch-T-2026-045-1772116327000"
	assert_equal "$stderr" "amp send: warning: task T-2026-045 waits for $T (new), a soft dependency: dispatched before it is approved"
	run -0 amp status T-2026-045
	assert_line "waits for $T (new), soft"
}

@test "priority: amp ready and amp inbox executor sort by priority, then age; unclaimed work first in the inbox" {
	for n in 1 2 3; do
		at $n; dispatch_of T-2026-00$n > /dev/null
	done
	run -0 amp inbox executor --json
	run -0 json_get '[m["task_id"] for m in d["messages"]]' <<< "$output"
	assert_output '["T-2026-001", "T-2026-002", "T-2026-003"]'
	amp plan T-2026-003 --priority P0 --from coordinator > /dev/null
	amp plan T-2026-001 --priority P3 --from coordinator > /dev/null
	run -0 amp ready --json
	run -0 json_get '[(t["task_id"], t["priority"]) for t in d["tasks"]]' <<< "$output"
	assert_output '[["T-2026-003", "P0"], ["T-2026-002", "P2"], ["T-2026-001", "P3"]]'
	run -0 amp inbox executor --json
	run -0 json_get '[m["task_id"] for m in d["messages"]]' <<< "$output"
	assert_output '["T-2026-003", "T-2026-002", "T-2026-001"]'
	# A claimed task goes last in the inbox and leaves amp ready.
	amp claim T-2026-003 --agent alice > /dev/null
	run -0 amp inbox executor --json
	run -0 json_get '[m["task_id"] for m in d["messages"]]' <<< "$output"
	assert_output '["T-2026-002", "T-2026-001", "T-2026-003"]'
	run -0 amp ready
	assert_output "T-2026-002  P2  dispatched        since 2026-02-26 14:32:09 +0000
T-2026-001  P3  dispatched        since 2026-02-26 14:32:08 +0000"
}

@test "deadline missed: amp watch escalates it once, naming the plan record; a new deadline is a new cause" {
	send_dispatch
	amp ack "$D" --from executor > /dev/null
	run -0 amp plan $T --deadline 2026-02-26T15:00:00+00:00 --from coordinator --json
	assert_output '{"format":{"name":"plan","version":1},"task_id":"T-2026-044","control":"plan-1772116327000","from":"coordinator"}'
	amp heartbeat $T --from executor > /dev/null
	run -0 amp watch --once
	assert_output ""
	AMP_NOW=2026-02-26T15:00:00+00:00 run -0 amp watch --once
	assert_output ""
	export AMP_NOW=2026-02-26T15:00:01+00:00
	run -0 amp watch --once
	assert_line --regexp "^escalated unknown $T deadline \(escalation-$T-1772118001000\)$"
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
	assert_equal "$(escalation_count unknown)" 1
	E=$(the_escalation unknown)
	assert_escalation "$E" unknown warning "[\"$D\"]" in_progress 0 false
	run -0 escalation_file "$E"
	assert_output --partial "\"description\": \"deadline missed: $(record_path "$T" 000003.ctl.plan-1772116327000.json): task $T was due at 2026-02-26T15:00:00+00:00 (amp plan --deadline) and is in_progress.\""
	amp plan $T --deadline 2026-02-26T16:00:00+00:00 --from coordinator > /dev/null
	AMP_NOW=2026-02-26T16:00:01+00:00 run -0 amp watch --once
	assert_line --regexp "^escalated unknown $T deadline "
	assert_equal "$(escalation_count unknown)" 2
}

@test "--max-iterations sets this task's Hallucination Lock threshold; range-checked" {
	run -2 amp plan $T --max-iterations 0 --from coordinator
	assert_output --partial "--max-iterations"
	run -2 amp plan $T --max-iterations 1001 --from coordinator
	run -2 amp plan $T --priority P4 --from coordinator
	run -2 amp plan $T --deadline tomorrow --from coordinator
	run -2 amp plan $T --from coordinator
	run -3 amp plan $T --priority P1 --from executor
	assert_output "amp plan: error: /from: a plan is the coordinator's or the admin's, not executor"
	dispatch_acked
	amp plan $T --max-iterations 1 --from coordinator > /dev/null
	reject_rounds 1
	assert_equal "$(task_state)" locked
	run -0 amp status $T --json
	run -0 json_get '[e["escalation_type"] for e in d["escalations"]]' <<< "$output"
	assert_output '["hallucination_lock"]'
}

@test "a suspended task refuses claim, release, depend and plan, exactly like a message" {
	send_dispatch
	amp claim $T --agent alice > /dev/null
	amp escalate $T --type conflict --severity critical --description "stop" --from coordinator > /dev/null
	for cmd in "claim $T --agent bob" "release $T --agent alice" "depend $T --on T-2026-001 --from coordinator" "plan $T --priority P0 --from coordinator"; do
		run -3 amp $cmd
		assert_output --partial "error: /task_id: task $T is suspended"
	done
}

@test "amp ready --capability lists the tasks whose plan requires that capability" {
	dispatch_of T-2026-001 > /dev/null
	dispatch_of T-2026-002 > /dev/null
	amp plan T-2026-002 --capability swift --from coordinator > /dev/null
	run -0 amp ready --capability swift --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[{"task_id":"T-2026-002","state":"dispatched","priority":"P2","deadline":null,"capability":"swift","since":"2026-02-26T14:32:07+00:00"}]}'
	run -0 amp ready --capability rust --json
	assert_output '{"format":{"name":"ready","version":1},"tasks":[]}'
	run -2 amp plan T-2026-001 --capability 'a b' --from coordinator
}

@test "amp agents: every named instance seen, its roles, its last write and the tasks it holds; amp log --type claim" {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim $T --agent alice > /dev/null
	at 9
	amp heartbeat $T --from coordinator --agent planner > /dev/null
	amp heartbeat $T --from executor --agent alice > /dev/null
	run -0 amp agents --json
	assert_output '{"format":{"name":"agents","version":1},"agents":[{"agent":"alice","roles":["executor"],"last_write":"2026-02-26T14:32:16+00:00","last_task":"T-2026-044","writes":3,"last_heartbeat":"2026-02-26T14:32:16+00:00","recent":[],"holds":[{"task_id":"T-2026-044","subtask_id":null,"expires":"2026-02-26T15:02:16+00:00"}],"declared":null},{"agent":"planner","roles":["coordinator"],"last_write":"2026-02-26T14:32:16+00:00","last_task":"T-2026-044","writes":1,"last_heartbeat":"2026-02-26T14:32:16+00:00","recent":[],"holds":[],"declared":null}]}'
	run -0 amp agents
	assert_output "alice  roles executor  last write 2026-02-26 14:32:16 +0000 on $T  holds $T
planner  roles coordinator  last write 2026-02-26 14:32:16 +0000 on $T"
	run -0 amp log --type claim
	assert_output --regexp "ctl/claim +executor +claim-1772116332000  agent alice$"
}
