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
	# the records, not their signatures (strict mode: <record>.sig)
	git ls-tree -r --name-only refs/amp/messages "agents/$1/" | grep -v '\.sig$'
}

@test "amp register writes agents/<agent>/register-<ms>-<blob12>.json: its record, commit and trailers" {
	run -0 amp register --agent alice --role executor --capability go --capability c --capability go
	path=$(register_paths alice)
	blob=$(git rev-parse "refs/amp/messages:$path")
	assert_equal "$path" "agents/alice/register-1772116327000-${blob:0:12}.json"
	assert_output "registered alice as executor; capabilities go, c ($path)"
	run -0 json_get 'd' < <(git show "refs/amp/messages:$path")
	assert_output '{"protocol_version": "AMP/1.0", "type": "register", "from": "executor", "agent": "alice", "roles": ["executor"], "timestamp": "2026-02-26T14:32:07+00:00", "capabilities": ["go", "c"]}'
	# amp log lists it, as a control record of no task.
	run -0 amp log --type register
	assert_output --regexp "^[0-9a-f]{7} 2026-02-26 14:32:07 \+0000  -             ctl/register        executor +register-1772116327000-${blob:0:12}  agent alice\$"
	run -0 amp log --type register --json
	run -0 json_get '[d["task_id"], d["kind"], d["type"], d["id"], d["path"], d["agent"], d["record"]["roles"]]' <<< "$output"
	assert_output "[\"\", \"ctl\", \"register\", \"register-1772116327000-${blob:0:12}\", \"$path\", \"alice\", [\"executor\"]]"
	run -0 amp log --task $T
	assert_output ""
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
	assert_output "{\"format\":{\"name\":\"register\",\"version\":1},\"agent\":\"bob\",\"from\":\"admin\",\"roles\":[\"reviewer\"],\"capabilities\":[],\"record\":\"$path\"}"
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
	run -0 json_get '[(t["task_id"], t["claims"], t["waits_for"]) for t in d["tasks"]]' <<< "$output"
	assert_output '[["T-2026-044", [{"agent": "alice", "subtask_id": null, "expires": "2026-02-26T14:42:08+00:00", "expired": false}], []], ["T-2026-045", [], [{"task_id": "T-2026-044", "soft": true, "state": "dispatched"}]]]'
	# Served from the cache, which keeps the leases and dependencies.
	run -0 bash -c "grep '^T-2026-044'$'\t' .git/amp/status.cache | cut -f11"
	assert_output '[{"agent":"alice","subtask_id":null,"expires_ms":1772116928000}]'
	run -0 bash -c "grep '^T-2026-045'$'\t' .git/amp/status.cache | cut -f12"
	assert_output '[{"task_id":"T-2026-044","soft":true}]'
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
	run -0 json_get 'd["tasks"][0]["claims"]' <<< "$output"
	assert_output '[{"agent": "alice", "subtask_id": null, "expires": "2026-02-26T14:50:27+00:00", "expired": true}]'
	at 1110; amp release $T --agent alice --from executor > /dev/null
	# nobody holds it now and alice ACKed the round: the result is hers
	# (issue 33; the round's other writes by alice's process too)
	at 1120; AMP_AGENT=alice review_round 0
	at 1130; amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json" > /dev/null
	run -0 amp status
	assert_line --index 0 --regexp "^$T   approved +[0-9]+ msgs  0 rejects  ACK pending\$"
	assert_line --index 1 "$B   new           0 msgs  0 rejects"
}

# plant_register AGENT JSON: commits JSON as AGENT's register record at its
# place (its name made from its timestamp and blob), as a fetch would.
plant_register() {
	local blob ms
	blob=$(printf '%s' "$2" | git hash-object --stdin)
	ms=$(json_get 'd["timestamp"]' <<< "$2" | xargs -I{} date -u -d {} +%s)000
	printf '%s' "$2" | plant "agents/$1/register-$ms-${blob:0:12}.json"
}

@test "amp fsck reports a register record that is not in force: a role it does not declare, another agent's directory, a name that lies, a non-register record" {
	amp register --agent alice --role executor > /dev/null
	run -0 amp fsck
	plant_register mallory '{"protocol_version":"AMP/1.0","type":"register","from":"executor","agent":"mallory","roles":["reviewer"],"timestamp":"2026-02-26T14:32:08+00:00"}'
	plant_register eve '{"protocol_version":"AMP/1.0","type":"register","from":"executor","agent":"alice","roles":["executor"],"timestamp":"2026-02-26T14:32:09+00:00"}'
	printf '{}' | plant agents/bob/register-1772116330000-000000000000.json
	plant_register trent '{"protocol_version":"AMP/1.0","type":"register","from":"executor","agent":"trent","roles":["executor"],"timestamp":"2026-02-26T14:32:11+00:00","task_id":"T-2026-044"}'
	# Well formed, but not written by oscar: the commit names no instance.
	plant_register oscar '{"protocol_version":"AMP/1.0","type":"register","from":"executor","agent":"oscar","roles":["executor"],"timestamp":"2026-02-26T14:32:12+00:00"}'
	run -3 amp fsck --json
	run -0 json_get '[(f["file"], f["kind"], f["reason"]) for f in d["findings"]]' <<< "$output"
	mallory=$(register_paths mallory) eve=$(register_paths eve) trent=$(register_paths trent) oscar=$(register_paths oscar)
	assert_output "[[\"$mallory\", \"rule\", \"/from: an agent registers as one of the roles it declares, or the admin registers it: executor is neither\"], [\"$eve\", \"corrupt\", \"/agent: names agent alice, not the agent of its directory (eve)\"], [\"agents/bob/register-1772116330000-000000000000.json\", \"corrupt\", \"its name says blob 000000000000, its content is blob 9e26dfeeb6e6\"], [\"$trent\", \"corrupt\", \"unexpected property \\\"task_id\\\"\"], [\"$oscar\", \"rule\", \"/agent: only oscar itself (or the admin) registers oscar, but the commit was written by an unnamed instance\"]]"
}

@test "two clones register offline, then sync: both records everywhere (a union); the hub's hook refuses a bad register record" {
	clones_setup
	on a amp register --agent alice --role executor --capability go > /dev/null
	at 1
	on b amp register --agent bob --role reviewer > /dev/null
	on a amp sync > /dev/null
	run -0 on b amp sync
	run -0 on a amp sync
	want=$(git -C a ls-tree -r --name-only refs/amp/messages agents/)
	assert_equal "$(echo "$want" | sed 's/-[0-9a-f]*\.json$//')" "agents/alice/register-1772116327000
agents/bob/register-1772116328000"
	assert_equal "$(git -C b ls-tree -r --name-only refs/amp/messages agents/)" "$want"
	assert_equal "$(git -C hub.git ls-tree -r --name-only refs/amp/messages agents/)" "$want"
	assert_equal "$(git -C b rev-parse refs/amp/messages)" "$(git -C hub.git rev-parse refs/amp/messages)"
	run -0 on a amp fsck
	# The join kept each record's commit, its author and Amp-Agent.
	run -0 git -C hub.git log --format='%an|%s|%(trailers:key=Amp-Agent,valueonly,separator=)' refs/amp/messages -2
	assert_output "bob|register bob reviewer|bob
alice|register alice executor|alice"
	cd a
	plant_register mallory '{"protocol_version":"AMP/1.0","type":"register","from":"executor","agent":"mallory","roles":["reviewer"],"timestamp":"2026-02-26T14:32:08+00:00"}'
	run git push origin 'refs/amp/*:refs/amp/*'
	assert_failure
	assert_output --partial "pre-receive hook declined"
	assert_output --partial "agents/mallory/register-1772116328000-61ac72a48bbe.json: /from: an agent registers as one of the roles it declares, or the admin registers it: executor is neither"
	assert_equal "$(git -C ../hub.git ls-tree -r --name-only refs/amp/messages agents/)" "$want"
}

@test "amp agents shows what each instance declared beside what it did; the newest register record is in force" {
	send_dispatch
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	amp claim $T --agent alice --ttl 600 > /dev/null
	at 6; amp register --agent alice --role executor --capability go > /dev/null
	at 7; amp register --agent alice --role executor --role reviewer --capability rust --capability c > /dev/null
	at 8; amp register --agent bob --role reviewer --from admin > /dev/null
	run -0 amp agents --json
	alice=$(register_paths alice | grep 1772116334000) bob=$(register_paths bob)
	assert_output "{\"format\":{\"name\":\"agents\",\"version\":1},\"agents\":[{\"agent\":\"alice\",\"roles\":[\"executor\"],\"last_write\":\"2026-02-26T14:32:14+00:00\",\"last_task\":null,\"writes\":4,\"last_heartbeat\":null,\"recent\":[],\"holds\":[{\"task_id\":\"T-2026-044\",\"subtask_id\":null,\"expires\":\"2026-02-26T14:42:12+00:00\"}],\"declared\":{\"roles\":[\"executor\",\"reviewer\"],\"capabilities\":[\"c\",\"rust\"],\"from\":\"executor\",\"declared\":\"2026-02-26T14:32:14+00:00\",\"record\":\"$alice\"}},{\"agent\":\"bob\",\"roles\":[],\"last_write\":null,\"last_task\":null,\"writes\":0,\"last_heartbeat\":null,\"recent\":[],\"holds\":[],\"declared\":{\"roles\":[\"reviewer\"],\"capabilities\":[],\"from\":\"admin\",\"declared\":\"2026-02-26T14:32:15+00:00\",\"record\":\"$bob\"}}]}"
	run -0 amp agents
	# Its own register records are writes too (of no task).
	assert_output "alice  roles executor  last write 2026-02-26 14:32:14 +0000  holds $T  declared executor,reviewer; capabilities c,rust
bob  roles -  last write (none)  declared reviewer"
}

@test "amp agents keeps what the history says in a cache keyed by the tip and walks only the commits since" {
	send_dispatch
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	run -0 amp agents --json
	run -0 json_get '[d["tip"], d["agents"]["alice"]["writes"]]' < .git/amp/agents.json
	assert_output "[\"$(git rev-parse refs/amp/messages)\", 1]"
	at 6; amp heartbeat $T --from executor --agent alice > /dev/null
	amp heartbeat $T --from coordinator --agent planner > /dev/null
	run -0 amp agents
	assert_output "alice  roles executor  last write 2026-02-26 14:32:13 +0000 on $T
planner  roles coordinator  last write 2026-02-26 14:32:13 +0000 on $T"
	run -0 json_get '[d["tip"], d["agents"]["alice"]["writes"], d["agents"]["planner"]["writes"]]' < .git/amp/agents.json
	assert_output "[\"$(git rev-parse refs/amp/messages)\", 2, 1]"
	# The cache is what is read on the same tip: a planted count shows.
	$PY -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["agents"]["alice"]["writes"]=41; json.dump(d,open(p,"w"))' .git/amp/agents.json
	run -0 amp agents --json
	run -0 json_get 'd["agents"][0]["writes"]' <<< "$output"
	assert_output 41
	# One more commit: 41 + 1, from the cache and the one commit since.
	at 7; amp heartbeat $T --from executor --agent alice > /dev/null
	run -0 amp agents --json
	run -0 json_get 'd["agents"][0]["writes"]' <<< "$output"
	assert_output 42
	# Another history (the tip does not descend from it): read again.
	echo '{"version":1,"tip":"0123456789012345678901234567890123456789","agents":{"alice":{"agent":"alice","roles":{},"last_write":null,"last_task":null,"writes":41}}}' > .git/amp/agents.json
	run -0 amp agents --json
	run -0 json_get 'd["agents"][0]["writes"]' <<< "$output"
	assert_output 3
}

@test "amp ready --agent: only the tasks whose capability that agent declared, or that need none" {
	B=T-2026-045 C=T-2026-046
	send_dispatch
	amp plan $T --capability rust --from coordinator > /dev/null
	amp plan $B --capability go --from coordinator > /dev/null
	amp plan $C --priority P1 --from coordinator > /dev/null
	amp register --agent alice --role executor --capability rust --capability c > /dev/null
	run -0 amp ready --agent alice --json
	run -0 json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output"
	assert_output '["T-2026-046", "T-2026-044"]'
	run -0 amp ready --agent alice --capability rust
	assert_output "$T  P2  dispatched        since 2026-02-26 14:32:07 +0000"
	# An agent that declared nothing takes what needs no capability.
	run -0 amp ready --agent nobody --json
	run -0 json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output"
	assert_output '["T-2026-046"]'
	at 1; amp register --agent alice --role executor --capability go > /dev/null
	run -0 amp ready --agent alice --json
	run -0 json_get '[t["task_id"] for t in d["tasks"]]' <<< "$output"
	assert_output '["T-2026-046", "T-2026-045"]'
	run -2 amp ready --agent 'a b'
}

@test "amp show and amp inbox name the instance that wrote each message; the inbox cache keeps it" {
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --agent planner-1 --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 amp show "$D"
	assert_line --index 4 "sent        2026-02-26 14:32:07 +0000  (now)"
	assert_line --index 5 "agent       planner-1"
	# --json stays the stored record, byte for byte.
	run -0 amp show "$D" --json
	assert_equal "$output" "$(git show "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$D.json")")"
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	R=$(amp send task_result --task $T --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json")
	E=$(amp escalate $T --type unknown --severity warning --description "stuck" --from executor)
	run -0 amp inbox coordinator
	assert_output --regexp "  task_result +executor +-> coordinator +$T  $R  due in [^ ]+  agent alice
as of "
	run -0 amp inbox admin
	assert_output --regexp "  escalation +executor +-> admin +$T  $E  no ACK required
as of "
	run -0 amp inbox coordinator --json
	run -0 json_get '[m["agent"] for m in d["messages"]]' <<< "$output"
	assert_output '["alice"]'
	# inbox.json's first line is the cache (its second, the team's reports)
	run -0 json_get '[[r["msg_id"], r["agent"]] for r in d["tasks"]["T-2026-044"]]' < <(head -1 .git/amp/inbox.json)
	assert_output "[[\"$R\", \"alice\"], [\"$E\", null]]"
	# The cache is what answers on the same tip.
	$PY -c 'import json,sys; p=sys.argv[1]; lines=open(p).read().split("\n", 1); d=json.loads(lines[0]); d["tasks"]["T-2026-044"][0]["agent"]="cached"; open(p,"w").write(json.dumps(d) + "\n" + (lines[1] if len(lines) > 1 else ""))' .git/amp/inbox.json
	run -0 amp inbox coordinator --json
	run -0 json_get '[m["agent"] for m in d["messages"]]' <<< "$output"
	assert_output '["cached"]'
	# A new message: only it is looked up, the others keep theirs.
	at 6
	# (alice's: she ACKed the round and nobody claims it, issue 33)
	H=$(amp send task_result --task $T --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json")
	run -0 amp inbox coordinator --json
	run -0 json_get '[m["agent"] for m in d["messages"]]' <<< "$output"
	assert_output '["cached", "alice"]'
	run -0 amp inbox executor --all --json
	run -0 json_get '[m["agent"] for m in d["messages"]]' <<< "$output"
	assert_output '["planner-1"]'
}

@test "with signing, an instance registers itself with its own key (alice@executor); a bare role's key or another's is refused, by amp and by amp fsck" {
	unset AMP_NOW
	local K=$BATS_TEST_TMPDIR/keys
	mkdir -p "$K"
	for k in admin alice exec; do ssh-keygen -q -t ed25519 -N '' -f "$K/$k"; done
	# A strict SSOT from its first commit.
	git init -q "$BATS_TEST_TMPDIR/strict" && cd "$BATS_TEST_TMPDIR/strict"
	{
		printf 'admin %s\n' "$(cut -d' ' -f1,2 "$K/admin.pub")"
		printf 'alice@executor %s\n' "$(cut -d' ' -f1,2 "$K/alice.pub")"
		printf 'executor %s\n' "$(cut -d' ' -f1,2 "$K/exec.pub")"
	} > "$K/signers"
	git config amp.allowedSigners "$K/signers"
	git config amp.requireSigned true
	git config amp.signingKey "$K/admin"
	amp init > /dev/null
	git config amp.signingKey "$K/alice"
	run -0 amp register --agent alice --role executor --capability go
	before=$(commit_count)
	run -3 amp register --agent bob --role executor
	assert_output --partial "agent bob disagrees with the signing key's principal alice@executor"
	assert_equal "$(commit_count)" "$before"
	git config amp.signingKey "$K/admin"
	run -0 amp register --agent bob --role reviewer --from admin
	run -0 amp fsck
	# A key that names no instance may write as the executor, but it
	# does not prove carol wrote carol's register record.
	git config amp.signingKey "$K/exec"
	run -0 amp register --agent carol --role executor
	carol=$(register_paths carol)
	run -3 amp fsck
	assert_output --partial "$carol: rule: /agent: carol registers itself with its own key: the signing key's principal is executor, not carol@executor"
	run -0 amp agents --json
	run -0 json_get '[[a["agent"], a["declared"]["roles"]] for a in d["agents"]]' <<< "$output"
	assert_output '[["alice", ["executor"]], ["bob", ["reviewer"]], ["carol", ["executor"]]]'
}

@test "a hand-made depend record naming no task leaves the all-task amp status readable" {
	send_dispatch
	GIT_COMMITTER_DATE=@1772116327 plant "$(next_path $T depend-1772116327001 ctl)" <<< '{"protocol_version":"AMP/1.0","type":"depend","task_id":"T-2026-044","from":"coordinator","timestamp":"2026-02-26T14:32:07+00:00","on":"nothing","soft":false}'
	run -0 amp status
	assert_output "$T   dispatched    1 msgs  0 rejects  ACK pending"
}
