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
	run -0 amp log -n 2
	assert_line --index 0 --regexp "  ack  .*executor -> coordinator  $D$"
	assert_line --index 1 --regexp "msg/task_dispatch   coordinator -> executor  $D  agent planner-1$"
	run -0 amp log -n 2 --json
	run -0 json_get 'd["agent"]' <<< "${lines[0]}"
	assert_output null
	run -0 amp log -n 2 --json
	run -0 json_get 'd["agent"]' <<< "${lines[1]}"
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
	assert_line "control: 2026-02-26T14:32:07+00:00  heartbeat by coordinator (agent from-option)"
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
}
