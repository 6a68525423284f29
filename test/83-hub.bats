#!/usr/bin/env bats
# One hub, three agents (issue 10): a bare hub guarded by amp's server
# hook, served on loopback by `git daemon` and by a real sshd (test/hub.bash),
# and one clone per role.  The agents run at the same time, each in its own
# process, syncing in a loop until the message it must answer arrives; at
# the end every clone and the hub hold the same records.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub

setup() {
	make_repo # the work repository the dispatch names
	write_payloads
	at 0
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	git config --global init.defaultBranch main
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	amp hook install --server --repo "$HUB" > /dev/null
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	# the agents first, then the servers they talk to
	local p
	for p in ${AGENTS:-}; do kill "$p" 2> /dev/null || true; done
	stop_servers
	fsck_all_repos
}

# clones URL: one clone of the hub per role, each with git config
# amp.role; the coordinator's ran amp init and delivered it.
clones() {
	local role
	for role in coordinator executor reviewer; do
		git clone -q "$1" "$role" 2> /dev/null || return 1
		git -C "$role" config amp.role "$role"
	done
	on coordinator amp init > /dev/null
	on coordinator amp sync > /dev/null
}

# sync_once: one amp sync in the current clone; a failure is logged in
# sync.failed (the test shows it), not fatal: the agent syncs again.
sync_once() {
	local rc=0
	amp sync --json >> sync.out 2>> sync.err || rc=$?
	[ $rc -eq 0 ] || echo "$(basename "$PWD"): amp sync exit $rc" >> "$BATS_TEST_TMPDIR/sync.failed"
	return $rc
}

# await TYPE: syncs in a loop until the inbox of this clone's role holds a
# message of TYPE; prints its msg_id (at most 60 s: a loaded machine).
await() {
	local id role
	role=$(git config amp.role)
	while [ $SECONDS -lt 60 ]; do
		sync_once || true
		id=$(amp inbox "$role" --json |
			json_get "([m['msg_id'] for m in d['messages'] if m['type'] == '$1'] + [''])[0]")
		[ -z "$id" ] || { echo "$id"; return 0; }
	done
	echo "$role: no $1 in 60 s" >&2
	return 1
}

# deliver: syncs until one sync succeeds, so what this clone wrote is on
# the hub (at most 60 s: a loaded machine).
deliver() {
	while [ $SECONDS -lt 60 ]; do
		sync_once && return 0
	done
	return 1
}

# The three agents, each in its clone, AMP_NOW moving 5 s a step.
coordinator() {
	local d r v
	cd "$BATS_TEST_TMPDIR/coordinator" || return 1
	d=$(amp send task_dispatch --task $T --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json") || return 1
	at 15; r=$(await task_result) || return 1
	amp ack "$r" > /dev/null || return 1
	at 20; amp send review_request --task $T --payload "$(review_payload "$d" "$r" 0)" > /dev/null || return 1
	at 35; v=$(await review_verdict) || return 1
	amp ack "$v" > /dev/null || return 1
	deliver
}
executor() {
	local d
	cd "$BATS_TEST_TMPDIR/executor" || return 1
	at 5; d=$(await task_dispatch) || return 1
	amp ack "$d" > /dev/null || return 1
	at 10; amp send task_result --task $T --payload "$BATS_TEST_TMPDIR/p/result.json" > /dev/null || return 1
	deliver
}
reviewer() {
	local q
	cd "$BATS_TEST_TMPDIR/reviewer" || return 1
	at 25; q=$(await review_request) || return 1
	amp ack "$q" > /dev/null || return 1
	at 30; amp verdict $T --decision approved --confidence 0.95 \
		--payload "$BATS_TEST_TMPDIR/p/verdict.json" > /dev/null || return 1
	deliver
}

# whole_task URL: the three agents run one task through the hub at URL at
# the same time; then every clone syncs, and all hold what the hub holds.
whole_task() {
	clones "$1"
	local role pid failed=0
	AGENTS=
	for role in coordinator executor reviewer; do
		(SECONDS=0; "$role") > "$role.log" 2>&1 3>&- &
		AGENTS="$AGENTS $!"
	done
	for pid in $AGENTS; do wait "$pid" || failed=1; done
	AGENTS=
	[ $failed = 0 ] || { tail -n 20 ./*.log ./*/sync.err; false; }
	# every sync of the agents succeeded (the hub took every push in the end)
	[ ! -s sync.failed ] || { cat sync.failed; false; }
	# each agent's syncs raced the others': some fetched what others wrote
	[ "$(cat ./*/sync.out | grep -c '"fetched":[1-9]')" -ge 3 ]
	# a last round of syncs, then every clone holds what the hub holds
	for role in coordinator executor reviewer coordinator executor; do on $role amp sync > /dev/null; done
	local hub
	hub=$(records "$HUB")
	for role in coordinator executor reviewer; do
		[ "$(records $role)" = "$hub" ] || { diff <(records $role) <(echo "$hub"); false; }
		[ "$(git -C $role rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
		run -0 on $role amp status $T --json
		[ "$(echo "$output" | json_get 'd["state"]')" = approved ]
		[ "$(echo "$output" | json_get 'd["escalations"]')" = "[]" ]
	done
	# exactly the task's four messages and four ACKs, none twice, none
	# lost, one seq each, and no escalation
	run -0 echo "$hub"
	[ "${#lines[@]}" = 8 ]
	[ "$(echo "$hub" | grep -c '^ack\.')" = 4 ]
	for t in task_dispatch task_result review_request review_verdict; do
		[ "$(echo "$hub" | grep -c "^msg\.$t-")" = 1 ]
	done
	[ -z "$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages |
		sed -n 's#^\(tasks/.*/[0-9]\{6\}\)\..*#\1#p' | sort | uniq -d)" ]
	[ "$(git -C "$HUB" rev-list --merges --count refs/amp/messages)" = 0 ]
	# the hook guarded these pushes: a dispatch to main, written by hand
	# as an old amp would have, is refused through the same server
	cd executor
	at 40
	$PY - "$T" "$AMP_NOW" "$BATS_TEST_TMPDIR/p/dispatch.json" <<'PY' > ../main.json
import json, sys
t, now, payload = sys.argv[1:]
p = json.load(open(payload)); p["branch"] = "main"
print(json.dumps({"msg_id": f"task_dispatch-T-2026-099-1772116367000", "protocol_version": "AMP/1.0",
                  "type": "task_dispatch", "from": "coordinator", "to": "executor", "task_id": "T-2026-099",
                  "timestamp": now, "requires_ack": True, "ack_timeout_sec": 300, "payload": p}, indent=2))
PY
	plant "$(next_path T-2026-099 task_dispatch-T-2026-099-1772116367000)" < ../main.json
	before=$(git -C "$HUB" rev-parse refs/amp/messages)
	run -4 amp sync
	assert_output --partial "protected branch"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
}

@test "three agents, one per role, run a whole task at the same time through git daemon: every clone ends with the hub's records" {
	start_daemon
	whole_task "$URL"
}

@test "three agents, one per role, run a whole task at the same time through sshd: every clone ends with the hub's records" {
	start_sshd
	whole_task "$SSH_URL"
}

@test "offline over ssh: sshd stopped, sends succeed locally and amp sync exits 4; sshd back, one sync delivers them all" {
	start_sshd
	clones "$SSH_URL"
	stop_sshd
	cd coordinator
	amp send task_dispatch --task $T --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp send task_dispatch --task T-2026-045 --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	at 5
	amp heartbeat $T > /dev/null
	before=$(git rev-parse refs/amp/messages)
	run -4 amp sync
	assert_output --partial "amp sync: error: git fetch from origin failed"
	[ "$(git rev-parse refs/amp/messages)" = "$before" ]
	cd ..
	start_sshd
	run -0 on coordinator amp sync
	assert_output --regexp "^fetched 0 records, pushed 3 records to origin \([0-9a-f]{7}\)$"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
	run -0 on executor amp sync
	assert_output --regexp "^fetched 3 records \([0-9a-f]{7}\)$"
	[ "$(records executor)" = "$(records "$HUB")" ]
	[ "$(records coordinator)" = "$(records "$HUB")" ]
	run -0 on executor amp inbox executor --json
	[ "$(echo "$output" | json_get 'len(d["messages"])')" = 2 ]
}
