#!/usr/bin/env bats
# Who wrote a record (issue 30, defects 3 and 11).  A rule that depends on
# the writer reads it from the record's commit (its Amp-Agent trailer,
# bound to the signing key in strict mode), never from the process doing
# the check: amp send, amp sync's join, the hooks, amp watch and amp fsck
# agree, with several instances per role.  A strict hub checks instances
# as it checks roles, ties a system record to the task of the record it
# accompanies, takes no ref under refs/amp/ but amp's two, and bounds the
# errors ref as it bounds records.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones
load signing

T2=T-2026-045

setup() {
	if [[ $BATS_TEST_DESCRIPTION == *"strict hub"* ]]; then
		strict_setup
	elif [[ $BATS_TEST_DESCRIPTION == *"two clones"* ]]; then
		clones_setup
	else
		make_ssot
	fi
}

teardown() {
	if [[ $BATS_TEST_DESCRIPTION == *"strict hub"* || $BATS_TEST_DESCRIPTION == *"two clones"* ]]; then
		clones_teardown
	else
		fsck_teardown
	fi
}

# trailer [REV]: the Amp-Agent trailer of REV's commit on the messages ref.
trailer() {
	git log -1 --format='%(trailers:key=Amp-Agent,valueonly)' "${1:-refs/amp/messages}"
}

# retip DIR AGENT [SED]: replaces the tip of the messages ref of
# $BATS_TEST_TMPDIR/DIR by a commit on the same parent whose Amp-Agent
# trailer is AGENT and whose one added file goes through `sed SED` (a
# record made without amp, not signed).
retip() {
	local dir=$BATS_TEST_TMPDIR/$1 idx=$BATS_TEST_TMPDIR/retip.idx path blob tree msg
	path=$(git -C "$dir" diff-tree --no-commit-id --name-only -r refs/amp/messages | head -1)
	blob=$(git -C "$dir" cat-file blob "refs/amp/messages:$path" | sed "${3:-}" | git -C "$dir" hash-object -w --stdin)
	GIT_INDEX_FILE=$idx git -C "$dir" read-tree refs/amp/messages
	GIT_INDEX_FILE=$idx git -C "$dir" update-index --cacheinfo "100644,$blob,$path"
	tree=$(GIT_INDEX_FILE=$idx git -C "$dir" write-tree)
	rm -f "$idx"
	msg=$(git -C "$dir" log -1 --format=%B refs/amp/messages | sed "s/^Amp-Agent: .*/Amp-Agent: $2/")
	git -C "$dir" update-ref refs/amp/messages "$(git -C "$dir" commit-tree "$tree" -p refs/amp/messages~1 -m "$msg")"
}

@test "defect 3: bob holds the task and alice does not: amp send refuses alice's ACK, heartbeat and result; bob's pass amp fsck and amp watch; two coordinators take leases back" {
	send_dispatch
	amp send task_dispatch --task $T2 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	run -0 amp claim $T --agent bob
	at 5
	# amp send: the writer is the sender's own instance
	run -3 amp ack "$D" --from executor --agent alice
	assert_output "amp ack: error: /from: task $T is claimed by bob until 2026-02-26T15:02:07+00:00: only bob may write to it as the executor (you are alice)"
	run -3 amp heartbeat $T --from executor --agent alice
	assert_output --partial "only bob may write to it as the executor (you are alice)"
	run -0 amp ack "$D" --from executor --agent bob
	assert_equal "$(trailer)" bob
	at 10
	run -0 amp heartbeat $T --from executor --agent bob
	at 20
	run -3 amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_output --partial "only bob may write to it as the executor (you are alice)"
	run -0 amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --agent bob --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_equal "$(trailer)" bob
	# the other task: alice holds it, carol (a coordinator) takes it back,
	# bob claims it, dave (another coordinator) takes it back
	at 30
	run -0 amp claim $T2 --agent alice
	run -0 amp heartbeat $T2 --from executor --agent alice
	at 31
	run -0 amp release $T2 --from coordinator --agent carol
	assert_equal "$(trailer)" carol
	at 32
	run -0 amp claim $T2 --agent bob
	at 33
	run -0 amp release $T2 --from coordinator --agent dave
	# the readers of the history read each writer from its commit, not
	# from the reader (unnamed here)
	run -0 amp fsck
	assert_output "amp fsck: 16 commits checked: clean"
	run -0 amp watch --once
	assert_output ""
	run -0 amp status $T --json
	assert_output --partial '"suspended": false'
}

@test "defect 3: amp fsck and amp watch still refuse what an instance wrote into another's lease, read from its commit" {
	send_dispatch
	amp claim $T --agent bob > /dev/null
	at 5
	amp ack "$D" --from executor --agent bob > /dev/null
	at 10
	# alice's result, made without amp: her commit names her
	amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --agent bob --payload "$BATS_TEST_TMPDIR/p/result.json" > /dev/null
	retip repo alice
	assert_equal "$(trailer)" alice
	bad=$(git rev-parse --short=7 refs/amp/messages)
	run -3 amp fsck
	# 000004 is bob's acked record, in his ACK's commit (issue 33)
	assert_line "amp fsck: $bad: $(record_path "$T" "000005.msg.task_result-$T-1772116337000.json"): rule: /from: task $T is claimed by bob until 2026-02-26T15:02:12+00:00: only bob may write to it as the executor (you are alice)"
	run -0 amp watch --once
	assert_output "escalated unknown $T task_result-$T-1772116337000 (escalation-$T-1772116337000)"
}

@test "defect 3: two clones: alice's heartbeat lands on bob's lease and the join sets it aside; bob's ACK and result, replayed onto the moved hub, pass the join and the hub's hook" {
	dispatched_on_both
	on b amp claim $T --agent bob > /dev/null
	on b amp sync > /dev/null
	# a has not seen the claim: alice's heartbeat is accepted there
	at 5
	on a amp heartbeat $T --from executor --agent alice > /dev/null
	run -0 on a amp sync --json
	assert_output --partial '"superseded":1'
	# the marker and, in the same commit, the conflict escalation the
	# join writes for it
	run -0 git -C "$HUB" log -1 --format=%B refs/amp/messages
	assert_line "Amp-Superseded: control heartbeat-1772116332000"
	assert_line --regexp "^Amp-Escalation: escalation-$T-[0-9]+$"
	# b writes as bob meanwhile; its sync replays onto a's push
	at 10
	on b amp ack "$D" --from executor --agent bob > /dev/null
	at 20
	R=$(on b amp send task_result --task $T --from executor --to coordinator --context-ref "$D" --agent bob --payload "$BATS_TEST_TMPDIR/p/result.json")
	run -0 on b amp sync --json
	# the ACK, bob's acked record beside it (issue 33), the result
	assert_output --partial '"replayed":3,'
	assert_output --partial '"superseded":0'
	records "$HUB" | grep -qx "msg.$R"
	records "$HUB" | grep -qx "ack.$D"
	[ "$(git -C "$HUB" log -1 --format='%(trailers:key=Amp-Agent,valueonly)' refs/amp/messages)" = bob ]
	# the hook, directly: bob's next heartbeat pushed by git itself
	at 30
	on b amp heartbeat $T --from executor --agent bob > /dev/null
	run -0 on b git push -q origin refs/amp/messages:refs/amp/messages
	on a amp sync > /dev/null
	run -0 on a amp fsck
	assert_output --regexp "commits checked: clean$"
	run -0 on a amp watch --once
	assert_output ""
}

# alice_pushes FILE REASON [SED]: clone a's tip, made alice's (retip a
# alice SED), pushed by git: the hub's hook refuses it at FILE for REASON,
# amp fsck in a reports the same as a rule; a's ref goes back to $hub.
alice_pushes() {
	retip a alice "${3:-}"
	run -1 on a git push origin refs/amp/messages:refs/amp/messages
	assert_output --partial "$1: $2"
	run -3 on a amp fsck
	assert_output --partial "$1: rule: $2"
	on a git update-ref refs/amp/messages "$hub"
}

@test "defect 3: two clones: the hub's hook refuses alice's ACK on bob's lease, a heartbeat or claim naming bob in alice's commit, and alice's release of bob's lease; amp fsck reports each" {
	dispatched_on_both
	on b amp claim $T --agent bob > /dev/null
	on b amp sync > /dev/null
	on a amp sync > /dev/null
	hub=$(git -C "$HUB" rev-parse refs/amp/messages)
	at 5
	on a amp ack "$D" --from executor --agent bob > /dev/null
	alice_pushes "ack.$D.json" "/from: task $T is claimed by bob until 2026-02-26T15:02:07+00:00: only bob may write to it as the executor (you are alice)"
	on a amp heartbeat $T --from executor --agent bob > /dev/null
	alice_pushes heartbeat-1772116332000.json "/agent: names instance bob, but alice wrote it (the commit's Amp-Agent)"
	on a amp claim $T --agent bob > /dev/null
	alice_pushes claim-1772116332000.json "/agent: names instance bob, but alice wrote it (the commit's Amp-Agent)"
	on a amp release $T --agent bob > /dev/null
	alice_pushes release-1772116332000.json "/type: alice releases claim-1772116327000, the lease of bob: as the executor an instance releases its own lease only" \
		's/"agent": "bob"/"agent": "alice"/'
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$hub" ]
	on a git update-ref refs/amp/messages "$hub"
	run -0 on a amp fsck
}

# strict_setup: keys for the admin, the coordinator, system and two
# executor instances (alice@executor, bob@executor); a strict hub ($HUB)
# with amp's pre-receive hook; clone c (the admin and the coordinator: the
# SSOT and dispatches of $T and $T2), clones a (alice's key) and b (bob's),
# every clone strict.  No AMP_NOW: strict mode refuses it.
strict_setup() {
	signing_base
	: > "$K/signers"
	local p r
	# a key file per principal, named by what comes before the "@"
	for p in admin coordinator system alice@executor bob@executor; do
		ssh-keygen -q -t ed25519 -N '' -f "$K/${p%@*}"
		echo "$p $(cut -d' ' -f1,2 "$K/${p%@*}.pub")" >> "$K/signers"
	done
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	amp hook install --server --repo "$HUB" > /dev/null
	cd "$BATS_TEST_TMPDIR" || return 1
	for r in c a b; do
		git clone -q "$HUB" $r 2> /dev/null
		git -C $r config amp.allowedSigners "$K/signers"
		git -C $r config amp.requireSigned true
	done
	git -C c config amp.signingKey "$K/admin"
	git -C a config amp.signingKey "$K/alice"
	git -C b config amp.signingKey "$K/bob"
	on c amp init > /dev/null
	on c git config amp.signingKey "$K/coordinator"
	D=$(on c amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on c amp send task_dispatch --task $T2 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	on c amp sync > /dev/null
	on a amp sync > /dev/null
	on b amp sync > /dev/null
}

# resign CLONE KEY REF [BASE]: replaces REF's tip in CLONE by one commit
# of the same tree on BASE (default: the tip's parent), authored and
# worded as the first commit after BASE, signed with KEY as git signs
# (gpg.format=ssh), its Amp-Agent trailer changed to $AGENT (none when
# empty).
resign() {
	local dir=$BATS_TEST_TMPDIR/$1 key=$2 ref=$3 base=${4:-$3~1} msg commit first
	first=$(git -C "$dir" rev-list --reverse "$base..$ref" | head -1)
	msg=$(git -C "$dir" log -1 --format=%B "$first" | sed '/^Amp-Agent: /d')
	[ -z "${AGENT:-}" ] || msg=$(printf '%s\nAmp-Agent: %s\n' "$msg" "$AGENT")
	commit=$(GIT_AUTHOR_NAME=$(git -C "$dir" log -1 --format=%an "$first") \
		GIT_AUTHOR_EMAIL=$(git -C "$dir" log -1 --format=%ae "$first") \
		git -C "$dir" -c gpg.format=ssh -c user.signingKey="$key" \
		commit-tree -S "$ref^{tree}" -p "$base" -m "$msg")
	git -C "$dir" update-ref "$ref" "$commit"
}

@test "defect 11a: strict hub: alice@executor's key cannot release bob's claim as bob, with bob's name on the commit or without; amp fsck finds both" {
	on b amp claim $T --agent bob > /dev/null
	on b amp sync > /dev/null
	on a amp sync > /dev/null
	hub=$(git -C "$HUB" rev-parse refs/amp/messages)
	# locally, strict mode refuses it before anything is written
	run -3 on a amp release $T --agent bob
	assert_output --partial "alice@executor"
	# alice turns strict mode off on her clone: her key signs as bob
	on a git config amp.requireSigned false
	run -0 on a amp release $T --agent bob
	on a git config amp.requireSigned true
	run -4 on a amp sync
	assert_output --partial "it was written as instance bob (Amp-Agent), but its key is alice@executor's (git config amp.requireSigned)"
	bad=$(git -C a rev-parse --short=7 refs/amp/messages)
	run -3 on a amp fsck
	assert_line "amp fsck: $bad: rule: it was written as instance bob (Amp-Agent), but its key is alice@executor's (git config amp.requireSigned)"
	# the same release in a commit that names nobody, pushed by git
	AGENT='' resign a "$K/alice" refs/amp/messages
	run -1 on a git push origin refs/amp/messages:refs/amp/messages
	assert_output --partial "amp hook: refused refs/amp/messages: commit "
	assert_output --partial "it adds a record from executor of instance bob, but its key is alice@executor's (git config amp.requireSigned)"
	bad=$(git -C a rev-parse --short=7 refs/amp/messages)
	run -3 on a amp fsck
	assert_line "amp fsck: $bad: rule: it adds a record from executor of instance bob, but its key is alice@executor's (git config amp.requireSigned)"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$hub" ]
	# bob still holds it on the hub, and releases it himself
	on b amp release $T --agent bob > /dev/null
	run -0 on b amp sync
}

@test "defect 11b: strict hub: a system escalation beside an executor's record is tied to that record's task: one suspending another task is refused; beside its own task's record it passes; amp fsck finds it" {
	hub=$(git -C "$HUB" rev-parse refs/amp/messages)
	# alice writes, unsigned and not strict, a heartbeat of $T and a
	# critical escalation of $T2 from system, then signs both as one commit
	on a git config amp.requireSigned false
	on a git config --unset amp.signingKey
	on a amp heartbeat $T --from executor --agent alice > /dev/null
	on a amp escalate $T2 --type conflict --severity critical --from system --no-sync --description "suspend the other task" > /dev/null
	AGENT=alice resign a "$K/alice" refs/amp/messages refs/amp/messages~2
	run -1 on a git push origin refs/amp/messages:refs/amp/messages
	assert_output --partial "amp hook: refused refs/amp/messages: commit "
	assert_output --partial "it adds a record from system to task $T2, but its record from executor is of task $T: a system record is committed only beside a record of its own task (git config amp.requireSigned)"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$hub" ]
	bad=$(git -C a rev-parse --short=7 refs/amp/messages)
	run -3 on a amp fsck
	assert_line "amp fsck: $bad: rule: it adds a record from system to task $T2, but its record from executor is of task $T: a system record is committed only beside a record of its own task (git config amp.requireSigned)"
	# the same two records, both of $T, pass
	on a git update-ref refs/amp/messages "$hub"
	on a amp heartbeat $T --from executor --agent alice > /dev/null
	on a amp escalate $T --type conflict --severity critical --from system --no-sync --description "suspend this task" > /dev/null
	AGENT=alice resign a "$K/alice" refs/amp/messages refs/amp/messages~2
	run -0 on a git push -q origin refs/amp/messages:refs/amp/messages
	on c amp sync > /dev/null
	run -0 on c amp status $T2 --json
	assert_output --partial '"suspended": false'
	run -0 on c amp status $T --json
	assert_output --partial '"suspended": true'
}

@test "defect 11c: strict hub: a ref under refs/amp/ amp does not define is refused (deleting one is not), and so is an errors-ref file over 1 MiB or out of the log's place; a refusal amp logged passes; amp fsck finds them" {
	run -1 on a git push origin refs/amp/messages:refs/amp/other
	assert_output --partial "amp hook: refused refs/amp/other: amp defines no such ref: under refs/amp/ a hub takes refs/amp/messages (amp.ref) and refs/amp/errors (amp.errorsRef) only"
	[ -z "$(git -C "$HUB" for-each-ref refs/amp/other)" ]
	# one made before the check (by hand on the hub) may still go
	git -C "$HUB" update-ref refs/amp/other refs/amp/messages
	run -0 on a git push -q origin :refs/amp/other
	[ -z "$(git -C "$HUB" for-each-ref refs/amp/other)" ]
	# a refusal amp logs goes through
	run -1 on a amp send task_dispatch --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	run -0 on a amp sync
	[ "$(git -C "$HUB" rev-parse refs/amp/errors)" = "$(git -C a rev-parse refs/amp/errors)" ]
	errs=$(git -C "$HUB" rev-parse refs/amp/errors)
	# 2 MiB in the log's place, signed by alice's key
	idx=$BATS_TEST_TMPDIR/idx
	big=errors/2026/11/27/1764201600000-0123456789ab/raw
	blob=$(head -c 2097152 /dev/zero | git -C a hash-object -w --stdin)
	GIT_INDEX_FILE=$idx git -C a read-tree refs/amp/errors
	GIT_INDEX_FILE=$idx git -C a update-index --add --cacheinfo "100644,$blob,$big"
	tree=$(GIT_INDEX_FILE=$idx git -C a write-tree)
	commit=$(git -C a -c gpg.format=ssh -c user.signingKey="$K/alice" commit-tree -S "$tree" -p refs/amp/errors -m "rejected message")
	run -1 on a git push origin "$commit:refs/amp/errors"
	assert_output --partial "amp hook: refused refs/amp/errors: commit ${commit:0:7}: $big: 2097152 bytes: an error log file is at most 1048576 bytes, as a record is"
	# a small file out of the log's place
	blob=$(echo junk | git -C a hash-object -w --stdin)
	GIT_INDEX_FILE=$idx git -C a read-tree refs/amp/errors
	GIT_INDEX_FILE=$idx git -C a update-index --add --cacheinfo "100644,$blob,errors/junk"
	tree=$(GIT_INDEX_FILE=$idx git -C a write-tree)
	commit2=$(git -C a -c gpg.format=ssh -c user.signingKey="$K/alice" commit-tree -S "$tree" -p refs/amp/errors -m "junk")
	run -1 on a git push origin "$commit2:refs/amp/errors"
	assert_output --partial "amp hook: refused refs/amp/errors: commit ${commit2:0:7}: errors/junk: not a file of the error log (errors/<YYYY>/<MM>/<DD>/<unix_ms>-<blob>/raw or reasons.json)"
	[ "$(git -C "$HUB" rev-parse refs/amp/errors)" = "$errs" ]
	# amp fsck finds the same in a clone that holds them
	on a git update-ref refs/amp/errors "$commit"
	on a git update-ref refs/amp/other refs/amp/messages
	run -3 on a amp fsck
	assert_line "amp fsck: ${commit:0:7}: $big: 2097152 bytes: an error log file is at most 1048576 bytes, as a record is"
	assert_line "amp fsck: $(git -C a rev-parse --short=7 refs/amp/messages): refs/amp/other: amp defines no such ref: the SSOT is refs/amp/messages and refs/amp/errors only (git update-ref -d refs/amp/other)"
	on a git update-ref -d refs/amp/other
	on a git update-ref refs/amp/errors "$errs"
	run -0 on a amp fsck
}
