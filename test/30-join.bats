#!/usr/bin/env bats
# Issue 30: what no sequence of writes may do to a clone or a hub.  A long
# chain of dependencies is checked without exhausting the C stack; a join
# sets aside a record a rule refuses in its new place, in any task, so that
# a clone's next sync always delivers the rest; two clones writing one
# msg_id in one millisecond are reconciled by the join, the same way on
# every clone, without a person.

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
	clones_teardown
}

# chain GITDIR FIRST N: one commit on the messages ref, made by git
# fast-import (as a hub without amp's hook would take it), adding N
# depend records: T-2026-<FIRST+i> waits for T-2026-<FIRST+i+1>.
chain() {
	$PY - "$2" "$3" "$(git -C "$1" rev-parse refs/amp/messages)" "$(cd "$1" && ssot_layout)" <<'PY' |
import sys
first, n, parent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def task_dir(t):  # helpers.bash task_path
    s = t[7:-2]
    if sys.argv[4] == "1":
        return f"tasks/2026/{s}/{t}"
    return f"tasks/2026/0/{s}/{t}/00/00" if len(s) <= 2 else f"tasks/2026/{s[:-2]}/{s[-2:]}/{t}/00/00"
w = sys.stdout.write
w("commit refs/amp/messages\ncommitter coordinator <coordinator@amp.invalid> 1772116327 +0000\n"
  f"data 6\nchain\nfrom {parent}\n")
for i in range(n):
    t, on = f"T-2026-{first + i}", f"T-2026-{first + i + 1}"
    body = ('{"protocol_version":"AMP/1.0","type":"depend","task_id":"%s","from":"coordinator",'
            '"timestamp":"2026-02-26T14:32:07+00:00","on":"%s","soft":false}\n') % (t, on)
    w(f"M 100644 inline {task_dir(t)}/000001.ctl.depend-1772116327000.json\n"
      f"data {len(body)}\n{body}")
PY
		git -C "$1" fast-import --quiet
}

# ---- defect 4: the dependency walk ----------------------------------------

# The one walk of 100,000 links costs seconds (every link is a task
# directory read from the tree): one test makes it, the cycle's; the
# link that extends a chain, walked whole too, is the next test's, on a
# chain of 20,000.
@test "a chain of 100,000 dependencies: amp depend finds the cycle that closes it, without a crash" {
	cd a
	chain . 200000 100000
	tip=$(git rev-parse refs/amp/messages)
	# closing the chain into a cycle: refused, the path named
	run -3 amp depend T-2026-300000 --on T-2026-200000 --from coordinator
	assert_output "amp depend: error: /on: a cycle: T-2026-200000 already waits for T-2026-300000 (T-2026-200000 -> T-2026-200001 -> T-2026-200002 -> T-2026-200003 -> ... 99993 more -> T-2026-299997 -> T-2026-299998 -> T-2026-299999 -> T-2026-300000), so T-2026-300000 cannot wait for T-2026-200000"
	[ "$(git rev-parse refs/amp/messages)" = "$tip" ]
}

@test "amp depend takes the link that extends a chain of 20,000 at its head; amp fsck checks the commit of 20,000 links in one pass, and names the cycle a later commit closes" {
	cd a
	chain . 400000 20000
	run -0 amp fsck
	assert_output --regexp "commits checked: clean$"
	# one more link at its head: the whole chain is walked, no cycle
	run -0 amp depend T-2026-399999 --on T-2026-400000 --from coordinator
	assert_output --regexp "^T-2026-399999 waits for T-2026-400000 \(depend-[0-9]+\)$"
	run -0 git ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "^$(task_path T-2026-399999)/([0-9]{2}/[0-9]{2}/)?000001\.ctl\.depend-[0-9]+\.json$"
	# a hub without amp's hook took the link that closes the cycle
	plant "$(record_path T-2026-420000 000001.ctl.depend-1772116327000.json)" <<'JSON'
{"protocol_version":"AMP/1.0","type":"depend","task_id":"T-2026-420000","from":"coordinator","timestamp":"2026-02-26T14:32:07+00:00","on":"T-2026-400000","soft":false}
JSON
	run -3 amp fsck
	assert_output --partial "$(record_path T-2026-420000 000001.ctl.depend-1772116327000.json): rule: /on: a cycle: T-2026-400000 already waits for T-2026-420000 (T-2026-400000 -> T-2026-400001 -> T-2026-400002 -> T-2026-400003 -> ... 19993 more -> T-2026-419997 -> T-2026-419998 -> T-2026-419999 -> T-2026-420000)"
	assert_line "amp fsck: 5 commits checked: 0 corrupt, 1 rule, 0 unreadable"
}

# ---- defect 13: one msg_id, two records --------------------------------------

# blob_of GITDIR NAME_REGEX: the content of the one record whose file name
# matches, on the messages ref.
blob_of() {
	local path
	path=$(git -C "$1" ls-tree -r --name-only refs/amp/messages | grep -E "$2") || return 1
	[ "$(wc -l <<< "$path")" -eq 1 ] || return 1
	git -C "$1" cat-file blob "refs/amp/messages:$path"
}

@test "two clones writing one type into one task in one millisecond: the join keeps the hub's record and gives the other the next free millisecond, with what names it" {
	dispatched_on_both
	at 20
	E=$(on a amp escalate $T --type unknown --severity info --description "seen on a" --from executor --no-suspend)
	EB=$(on b amp escalate $T --type unknown --severity info --description "seen on b" --from executor --no-suspend)
	[ "$E" = "$EB" ]
	ms=${E##*-}
	E2=escalation-$T-$((ms + 1))
	# on b, records built on b's escalation: the admin's ACK of it, and a
	# later escalation naming it
	at 21
	run -0 on b amp ack "$E" --from admin
	at 22
	F=$(on b amp escalate $T --type unknown --severity info --description "about $E" --from executor --affected "$E" --no-suspend)
	run -0 on a amp sync
	run -0 on b amp sync --json
	run -0 json_get '[d["replayed"], d["superseded"], d["push"]]' <<< "$output"
	assert_output '[3, 0, true]'
	run -0 on a amp sync
	# one history everywhere
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	# a's record keeps its id; b's has the next millisecond, byte for byte
	# what b wrote but for its msg_id
	run -0 blob_of "$HUB" "\.msg\.$E\.json$"
	run -0 json_get '[d["msg_id"], d["payload"]["description"]]' <<< "$output"
	assert_output "[\"$E\", \"seen on a\"]"
	run -0 blob_of "$HUB" "\.msg\.$E2\.json$"
	run -0 json_get '[d["msg_id"], d["payload"]["description"], d["timestamp"]]' <<< "$output"
	assert_output "[\"$E2\", \"seen on b\", \"$(date -u -d @$((1772116327 + 20)) +%Y-%m-%dT%H:%M:%S+00:00)\"]"
	# what named b's record names the new id
	run -0 blob_of "$HUB" "\.ack\.$E2\.json$"
	run -0 json_get '[d["ack_for"], d["from"]]' <<< "$output"
	assert_output "[\"$E2\", \"admin\"]"
	run -1 blob_of "$HUB" "\.ack\.$E\.json$"
	run -0 blob_of "$HUB" "\.msg\.$F\.json$"
	run -0 json_get 'd["payload"]["affected_msgs"]' <<< "$output"
	assert_output "[\"$E2\"]"
	# the audit trail says so, on the commit that brought it
	run -0 git -C "$HUB" log --format=%B refs/amp/messages
	assert_output --partial "Amp-Renamed: message $E as $E2 (the remote holds another record of that id)"
	# both records in force on both clones, the ACK on b's; fsck clean
	for c in a b; do
		run -0 on $c amp status $T --json
			run -0 json_get '[[e["msg_id"], e["description"]] for e in d["escalations"]][:2]' <<< "$output"
		assert_output "[[\"$E\", \"seen on a\"], [\"$E2\", \"seen on b\"]]"
		run -0 on $c amp show "$E2"
		assert_output --regexp "ack +.*admin"
		run -0 on $c amp fsck
		assert_output --regexp "commits checked: clean$"
	done
}

# ---- defect 5: a record the hub refuses after a join ------------------------

# cycle_halves: clone a records T-2026-101 waits for T-2026-102, clone b,
# offline, T-2026-102 waits for T-2026-101; a syncs first.
cycle_halves() {
	at 30
	on a amp depend T-2026-101 --on T-2026-102 --from coordinator > /dev/null &&
		on b amp depend T-2026-102 --on T-2026-101 --from coordinator > /dev/null &&
		on a amp sync > /dev/null
}

# then_more_from_b: b writes on after the join; a's next sync gets it.
then_more_from_b() {
	at 40
	on b amp depend T-2026-103 --on T-2026-101 --from coordinator > /dev/null || return 1
	run -0 on b amp sync --json
	run -0 json_get '[d["pushed"], d["superseded"]]' <<< "$output"
	assert_output '[1, 0]'
	run -0 on a amp sync
	run -0 on a amp status T-2026-103 --json
	run -0 json_get 'd["waits_for"]' <<< "$output"
}

# depends_in_force CLONE TASK: the tasks TASK waits for there.
depends_in_force() {
	on "$1" amp status "$2" --json | json_get '[w["task_id"] for w in d["waits_for"]]'
}

@test "two offline clones each adding half of a dependency cycle: the second join sets its half aside, the hub's hook takes the rest, and later writes still reach the hub" {
	cycle_halves
	run -0 on b amp sync --json
	run -0 json_get '[d["replayed"], d["superseded"], d["push"]]' <<< "$output"
	assert_output '[2, 1, true]'
	run -0 on b amp status T-2026-102 --json
	run -0 json_get '[(s["type"], s["from"], s["reason"]) for s in d["superseded"]]' <<< "$output"
	assert_output --partial '[["depend", "coordinator", "a cycle: T-2026-101 already waits for T-2026-102 (T-2026-101 -> T-2026-102)'
	run -0 git -C "$HUB" log --format=%B refs/amp/messages
	assert_output --regexp "Amp-Superseded: control depend-[0-9]+"
	# logged on b's errors ref and escalated to the admin, once
	run -0 on b amp errors --json
	assert_output --partial '"command": "sync"'
	assert_output --partial "a cycle: T-2026-101 already waits for T-2026-102"
	run -0 on a amp sync
	run -0 on a amp status T-2026-102 --json
	run -0 json_get '[(e["escalation_type"], e["from"], e["severity"], e["description"]) for e in d["escalations"]]' <<< "$output"
	assert_output --regexp '^\[\["conflict", "system", "warning", "a join set aside control depend-1772116357000: a cycle: T-2026-101 already waits for T-2026-102 \(T-2026-101 -> T-2026-102\), so T-2026-102 cannot wait for T-2026-101\. It is kept, in force nowhere \(amp status\); write it again if it is still wanted"\]\]$'
	then_more_from_b
	run -0 on b amp status T-2026-102 --json
	run -0 json_get 'len(d["escalations"])' <<< "$output"
	assert_output 1
	for c in a b; do
		run -0 depends_in_force $c T-2026-102
		assert_output '[]'
		run -0 depends_in_force $c T-2026-101
		assert_output '["T-2026-102"]'
		run -0 on $c amp fsck
	done
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}

@test "through a hub without amp's hook, the second half of a dependency cycle is set aside by the join, not delivered in force to everyone" {
	# the same hub, its hook taken away
	rm -f "$HUB/hooks/pre-receive" "$HUB/hooks/post-receive"
	cycle_halves
	run -0 on b amp sync --json
	run -0 json_get 'd["superseded"]' <<< "$output"
	assert_output 1
	then_more_from_b
	for c in a b; do
		run -0 depends_in_force $c T-2026-102
		assert_output '[]'
		run -0 on $c amp fsck
		assert_output --regexp "commits checked: clean$"
	done
}

@test "a record of another task naming a record the join set aside is set aside in turn, not pushed for the hub to refuse at every sync" {
	two_verdicts
	# on b, an escalation of another task names b's verdict
	at 102
	X=$(on b amp escalate T-2026-045 --type unknown --severity info --description "follow-up of $V2" --from executor --affected "$V2" --no-suspend)
	run -0 on a amp sync
	run -0 on b amp sync --json
	run -0 json_get '[d["replayed"], d["superseded"]]' <<< "$output"
	assert_output '[4, 2]'
	run -0 on b amp status T-2026-045 --json
	run -0 json_get '[(s["kind"], s["id"]) for s in d["superseded"]]' <<< "$output"
	assert_output "[[\"message\", \"$X\"]]"
	run -0 json_get '[s["reason"] for s in d["superseded"]][0]' <<< "$(on b amp status T-2026-045 --json)"
	assert_output --partial "$V2 is not in the SSOT"
	then_more_from_b
	run -0 on a amp status T-2026-045 --json
	run -0 json_get '[[(e["escalation_type"], e["from"], e["affected_msgs"]) for e in d["escalations"]], len(d["superseded"])]' <<< "$output"
	assert_output "[[[\"conflict\", \"system\", [\"$X\"]]], 1]"
}

# ---- defect 5: what only the hub's own settings refuse -----------------------

# escalations_of CLONE TASK: [type, from, description] of each escalation
# of TASK there.
escalations_of() {
	on "$1" amp status "$2" --json |
		json_get '[[e["escalation_type"], e["from"], e["description"]] for e in d["escalations"]]'
}

# then_two_syncs WRITER READER [MSG_ID...]: WRITER writes an escalation
# of T-2026-045 and syncs, twice; READER then holds MSG_IDs and those two
# there, and one escalation of $T (the one that told of a record set
# aside); the hub passes amp fsck.
then_two_syncs() {
	local w=$1 r=$2 s
	shift 2
	local ids=("$@")
	for s in 30 40; do
		at $s
		ids+=("$(on "$w" amp escalate T-2026-045 --type unknown --severity info --description "at $s" --from executor --no-suspend)") || return 1
		run -0 on "$w" amp sync
	done
	run -0 on "$r" amp sync
	run -0 on "$r" amp status T-2026-045 --json
	run -0 json_get '[e["msg_id"] for e in d["escalations"]]' <<< "$output"
	assert_output "$(printf '%s\n' "${ids[@]}" | $PY -c 'import json, sys; print(json.dumps(sys.stdin.read().split()))')"
	run -0 escalations_of "$r" "$T"
	run -0 json_get 'len(d)' <<< "$output"
	assert_output 1
	run -0 amp fsck --repo "$HUB"
}

# refused_beside CLONE REASON: CLONE escalates in T-2026-045 (sets E) and
# syncs: the hub's refusal (REASON) is shown as git gave it, one record is
# set aside, and the push goes through.
refused_beside() {
	at 21
	E=$(on "$1" amp escalate T-2026-045 --type unknown --severity info --description "beside it" --from executor --no-suspend)
	run -0 --separate-stderr on "$1" amp sync --json
	# shellcheck disable=SC2154 # bats's run sets stderr
	[[ $stderr == *"$2"* ]]
	run -0 json_get '[d["superseded"], d["push"]]' <<< "$output"
	assert_output '[1, true]'
}

@test "a record only the hub's settings refuse (an ACK of a dispatch the hub's amp.approvalRequired holds): amp sync sets it aside, logs and escalates it once, delivers the rest, and every later sync works" {
	# the hub holds medium-risk dispatches for the admin; the clones do not
	git -C "$HUB" config amp.approvalRequired medium
	dispatched_on_both
	at 20
	run -0 on b amp ack "$D" --from executor
	refused_beside b "awaits the admin's approval (git config amp.approvalRequired)"
	# the ACK is set aside, kept byte for byte; the escalation went through
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "/$T/([0-9]{2}/[0-9]{2}/)?[0-9]+\.ctl\.superseded-[0-9a-f]+\.json$"
	assert_line --regexp "/$T/([0-9]{2}/[0-9]{2}/)?[0-9]+\.ack\.$D\.json$"
	run -0 on a amp sync
	run -0 on a amp status T-2026-045 --json
	run -0 json_get '[e["msg_id"] for e in d["escalations"]]' <<< "$output"
	assert_output "[\"$E\"]"
	run -0 on a amp status "$T" --json
	run -0 json_get '[d["state"], [(s["kind"], s["id"], s["from"]) for s in d["superseded"]]]' <<< "$output"
	assert_output "[\"dispatched\", [[\"ack\", \"$D\", \"executor\"]]]"
	run -0 json_get '[s["reason"] for s in d["superseded"]][0]' <<< "$(on a amp status "$T" --json)"
	assert_output --partial "origin's hook refused it: /ack_for: $D awaits the admin's approval"
	# logged on b's errors ref, escalated once to the admin
	run -0 on b amp errors --json
	assert_output --partial '"command": "sync"'
	assert_output --partial "$D awaits the admin's approval"
	run -0 escalations_of a "$T"
	assert_output --regexp "^\[\[\"conflict\", \"system\", \"a join set aside ack $D: origin's hook refused it: /ack_for: $D awaits the admin's approval \(git config amp.approvalRequired\)\. It is kept, in force nowhere \(amp status\); write it again if it is still wanted\"\]\]$"
	# a second and a third sync deliver what b writes next
	then_two_syncs b a "$E"
	for c in a b; do
		[ "$(git -C $c rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
		run -0 on $c amp fsck
	done
}

@test "inbox mode: a record the hub's join sets aside (an ACK its amp.approvalRequired holds) is logged on the hub's errors ref and escalated once, and the clone's later syncs deliver" {
	git -C "$HUB" config amp.approvalRequired medium
	on a git config amp.syncPush inbox
	on b git config amp.syncPush inbox
	dispatched_on_both
	at 20
	run -0 on b amp ack "$D" --from executor
	run -0 on b amp sync
	id=$(on b git config amp.syncId)
	# the hub's join set it aside, logged it and told the admin
	run -0 amp errors --repo "$HUB" --json
	assert_output --partial "refs/amp-in/$id/messages"
	assert_output --partial "$D awaits the admin's approval"
	run -0 escalations_of b "$T"
	assert_output --regexp "^\[\[\"conflict\", \"system\", \"a join set aside ack $D: $D awaits the admin's approval \(git config amp.approvalRequired\)\. It is kept, in force nowhere \(amp status\); write it again if it is still wanted\"\]\]$"
	# later writes still arrive, and nothing is told twice
	then_two_syncs b a
}

# protected_on_hub_only MODE: with clone a syncing in amp.syncPush MODE, a
# dispatch to a branch only the hub protects, beside an escalation: the
# sync sets the dispatch aside, logs and escalates it once, and delivers
# the rest to clone b, then and at later syncs.
protected_on_hub_only() {
	git -C "$HUB" config amp.protectedBranches feature/watch-breath-v2
	on a git config amp.syncPush "$1"
	at 10
	D=$(on a amp send task_dispatch --task "$T" --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	refused_beside a '/payload/branch: must not be "feature/watch-breath-v2": a protected branch'
	run -0 on b amp sync
	run -0 on b amp status "$T" --json
	run -0 json_get '[d["state"], [(s["kind"], s["id"]) for s in d["superseded"]]]' <<< "$output"
	assert_output "[\"new\", [[\"message\", \"$D\"]]]"
	run -0 escalations_of b "$T"
	assert_output --partial "a join set aside message $D: origin's hook refused it: /payload/branch: must not be"
	run -0 on a amp errors --json
	assert_output --partial "a protected branch"
	then_two_syncs a b "$E"
}

@test "a dispatch to a branch only the hub protects (its amp.protectedBranches): amp sync sets it aside, the hub's hook takes it so, the rest is delivered and later syncs work" {
	protected_on_hub_only ref
}

@test "inbox mode: a dispatch to a branch only the hub protects, refused by the hub's hook on the inbox, is set aside by the clone's sync, and the rest reaches the hub and the other clone" {
	protected_on_hub_only inbox
}

@test "a refusal amp sync cannot pin on a record (a hub's own hook saying no) stays exit 4 with git's reason, and a record refused again after it was set aside stops the sync instead of looping" {
	at 10
	D=$(on a amp send task_dispatch --task "$T" --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	before=$(git -C a rev-parse refs/amp/messages)
	mv "$HUB/hooks/pre-receive" "$HUB/hooks/pre-receive.amp"
	printf '#!/bin/sh\necho "closed for maintenance" >&2\nexit 1\n' > "$HUB/hooks/pre-receive"
	chmod +x "$HUB/hooks/pre-receive"
	run -4 --separate-stderr on a amp sync
	[[ $stderr == *"remote: closed for maintenance"* ]]
	[[ $stderr == *"amp sync: error: origin refused the push of refs/amp/messages: [remote rejected] (pre-receive hook declined)"* ]]
	[ "$(git -C a rev-parse refs/amp/messages)" = "$before" ]
	# a hook naming the newest message whatever amp sync does with it
	cat > "$HUB/hooks/pre-receive" <<'SH'
#!/bin/sh
while read -r old new ref; do
	[ "$ref" = refs/amp/messages ] || continue
	path=$(git ls-tree -r --name-only "$new" | grep '\.msg\.' | tail -n 1)
	echo "amp hook: refused $ref: commit $(git rev-parse --short=11 "$new"): $path: no, never" >&2
done
exit 1
SH
	run -4 --separate-stderr on a amp sync
	# the dispatch set aside, then the escalation that tells of it (set
	# aside and logged, not escalated again), then that escalation named
	# again: the hub's refusal stands
	[ "$(grep -c "amp hook: refused refs/amp/messages" <<< "$stderr")" -eq 3 ]
	[[ $stderr == *"amp sync: error: origin refused the push of refs/amp/messages: [remote rejected] (pre-receive hook declined)"* ]]
	run -0 on a amp status "$T" --json
	run -0 json_get '[(s["kind"], s["id"], s["reason"]) for s in d["superseded"]]' <<< "$output"
	assert_output --regexp "^\[\[\"message\", \"$D\", \"origin's hook refused it: no, never\"\], \[\"message\", \"escalation-$T-[0-9]+\", \"origin's hook refused it: no, never\"\]\]$"
	# with amp's hook back, the sync delivers; the dispatch stays set aside
	mv "$HUB/hooks/pre-receive.amp" "$HUB/hooks/pre-receive"
	run -0 on a amp sync
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}
