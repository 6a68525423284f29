#!/usr/bin/env bats
# The agent registry and who-holds-what (issue 14): amp register declares
# an instance's roles and capabilities in agents/<agent>/, checked by the
# hub's hook and amp fsck and joined by amp sync as a union; amp agents and
# amp ready --agent read it; amp show and amp inbox name the instance that
# wrote each record; the all-task amp status shows claims and dependencies
# from its cache.  Time moves with AMP_NOW only.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# register_path AGENT: the register records of AGENT, read by git.
register_paths() {
	git ls-tree -r --name-only refs/amp/messages "agents/$1/"
}

@test "amp register writes agents/<agent>/register-<ms>-<blob12>.json: its record, commit and trailers" {
	run -0 amp register --agent alice --role executor --capability go --capability c --capability go
	path=$(register_paths alice)
	blob=$(git rev-parse "refs/amp/messages:$path")
	assert_equal "$path" "agents/alice/register-1772116327000-${blob:0:12}.json"
	assert_output "registered alice as executor; capabilities go, c ($path)"
	run -0 json_get 'd' < <(git show "refs/amp/messages:$path")
	assert_output '{"protocol_version": "AMP/1.0", "type": "register", "from": "executor", "agent": "alice", "roles": ["executor"], "timestamp": "2026-02-26T14:32:07+00:00", "capabilities": ["go", "c"]}'
	run -0 git log -1 --format='%an <%ae>%n%B' refs/amp/messages
	assert_output 'alice <executor@amp.invalid>
register alice executor

Amp-Type: register
Amp-Register: alice
Amp-Agent: alice'
	# The admin registers another instance as itself: no Amp-Agent.
	at 1
	run -0 amp register --agent bob --role reviewer --from admin --json
	path=$(register_paths bob)
	assert_output "{\"agent\":\"bob\",\"from\":\"admin\",\"roles\":[\"reviewer\"],\"capabilities\":[],\"record\":\"$path\"}"
	run -0 git log -1 --format='%an|%(trailers:key=Amp-Agent,valueonly)|' refs/amp/messages
	assert_output 'admin||'
	run -0 amp fsck
}

@test "amp register refuses a role it does not declare (exit 3, logged), a bad role or capability, no --role, no agent (exit 2)" {
	before=$(commit_count)
	run -3 --separate-stderr amp register --agent carol --role reviewer --from executor
	assert_equal "$stderr" "amp register: error: /from: an agent registers as one of the roles it declares (--role), or the admin registers it: executor is neither"
	assert_equal "$(commit_count)" "$before"
	assert_equal "$(error_count)" 2
	run -2 --separate-stderr amp register --agent carol --role boss
	assert_equal "$stderr" "amp register: error: --role 'boss' is not a role (admin, coordinator, executor, reviewer)
usage: amp register [--agent <name>] --role <role>... [--capability <name>]...
                    [--from <role>] [--sync|--no-sync] [--json] [--repo <dir>]"
	run -2 --separate-stderr amp register --agent carol --role executor --capability 'a b'
	assert_equal "${stderr_lines[0]}" "amp register: error: --capability 'a b' is not a name ([A-Za-z0-9._-], 1 to 64)"
	run -2 --separate-stderr amp register --agent carol
	assert_equal "${stderr_lines[0]}" "amp register: error: at least one --role"
	run -2 --separate-stderr amp register --role executor
	assert_equal "${stderr_lines[0]}" "amp register: error: name the instance registered: --agent <name> (or AMP_AGENT, git config amp.agent)"
	assert_equal "$(commit_count)" "$before"
}

@test "the all-task amp status shows who holds each task and what it waits for, from its cache, expiry against now" {
	B=T-2026-045
	send_dispatch
	amp depend $B --on $T --soft --from coordinator > /dev/null
	at 1; amp claim $T --agent alice --ttl 600 > /dev/null
	run -0 amp status
	assert_line --index 0 "$T   dispatched    1 msgs  0 rejects  ACK pending  held by alice"
	assert_line --index 1 "$B   new           0 msgs  0 rejects  waits for $T (dispatched, soft)"
	run -0 amp status --json
	run -0 json_get '[(t["task_id"], t["claims"], t["waits_for"]) for t in d]' <<< "$output"
	assert_output '[["T-2026-044", [{"agent": "alice", "subtask_id": null, "expires": "2026-02-26T14:42:08+00:00", "expired": false}], []], ["T-2026-045", [], [{"task_id": "T-2026-044", "soft": true, "state": "dispatched"}]]]'
	# Served from the cache, which keeps the leases and dependencies.
	run -0 json_get 'd["tasks"]["T-2026-044"]["summary"]["leases"]' < .git/amp/status.json
	assert_output '[{"agent": "alice", "subtask_id": null, "expires_ms": 1772116928000}]'
	run -0 json_get 'd["tasks"]["T-2026-045"]["summary"]["deps"]' < .git/amp/status.json
	assert_output '[{"task_id": "T-2026-044", "soft": true}]'
	# The holder's ACK renews the lease; the dependency moves on while
	# B's own records stay the same.
	at 500; amp ack "$D" --from executor --agent alice > /dev/null
	at 700
	run -0 amp status
	assert_line --index 0 "$T   in_progress   2 msgs  0 rejects  held by alice"
	assert_line --index 1 "$B   new           0 msgs  0 rejects  waits for $T (in_progress, soft)"
	# Time alone: the lease has expired, the cache still serves.
	at 1101
	run -0 amp status
	assert_line --index 0 "$T   in_progress   2 msgs  0 rejects  held by alice (expired)"
	run -0 amp status --json
	run -0 json_get 'd[0]["claims"]' <<< "$output"
	assert_output '[{"agent": "alice", "subtask_id": null, "expires": "2026-02-26T14:50:27+00:00", "expired": true}]'
	at 1110; amp release $T --agent alice --from executor > /dev/null
	at 1120; review_round 0
	at 1130; amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json" > /dev/null
	run -0 amp status
	assert_line --index 0 --regexp "^$T   approved +[0-9]+ msgs  0 rejects  ACK pending\$"
	assert_line --index 1 "$B   new           0 msgs  0 rejects"
}
