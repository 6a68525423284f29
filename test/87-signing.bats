#!/usr/bin/env bats
# Signed records and roles bound to keys (issue 11): every commit amp
# writes is signed with git config amp.signingKey as git signs commits
# (gpg.format=ssh); git config amp.allowedSigners says which role each key
# may speak as; with amp.requireSigned (strict mode) a write as a role the
# key may not use is refused before anything is written, AMP_NOW is
# refused, and what arrives unsigned or signed by the wrong key is refused
# by the hub's hook and escalated by amp watch.  Throw-away keys made with
# ssh-keygen in the test.  No AMP_NOW here: strict mode refuses it.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load signing

setup() {
	signing_setup
	: > "$K/signers"
	local r
	for r in admin coordinator executor reviewer system; do
		printf '%s %s\n' "$r" "$(cut -d' ' -f1,2 "$K/$r.pub")" >> "$K/signers"
	done
	git config amp.allowedSigners "$K/signers"
	as admin
	amp init > /dev/null
}

# tip: the messages ref.
tip() {
	git -C "$SSOT" rev-parse refs/amp/messages
}

@test "every commit amp writes is signed: git verify-commit and git log --show-signature accept it with the same allowed-signers file" {
	as coordinator
	send_dispatch
	as executor
	amp ack "$D" --from executor > /dev/null
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages~1
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" log --show-signature --format=%an refs/amp/messages
	assert_output --partial 'Good "git" signature for executor with ED25519 key'
	assert_output --partial 'Good "git" signature for coordinator with ED25519 key'
	# the errors ref too
	run -1 amp send task_dispatch --task $T --from coordinator --payload <(echo '{}')
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/errors
	# without a key nothing is signed
	git config --unset amp.signingKey
	amp heartbeat $T --from executor > /dev/null
	run -1 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages
}

@test "strict mode: the executor's key cannot resume, ACK for the reviewer or write as system; the admin's key can resume" {
	git config amp.requireSigned true
	as coordinator
	send_dispatch
	amp escalate $T --from coordinator --type conflict --severity critical --description "stop" > /dev/null
	run -0 amp status $T --json
	assert_output --partial '"suspended": true'
	as executor
	before=$(tip)
	fp=$(ssh-keygen -l -f "$K/executor" | cut -d' ' -f2)
	run -3 amp resume $T --from admin --reason "I resume myself"
	assert_output "amp resume: error: the key $fp (git config amp.signingKey) may not write as admin: no principal of it in $K/signers grants that role"
	[ "$(tip)" = "$before" ]
	run -3 amp escalate $T --from system --type unknown --severity info --description forged
	assert_output --partial "may not write as system"
	[ "$(tip)" = "$before" ]
	# refused attempts are logged, signed by the key that tried
	run -0 amp errors --json
	assert_output --partial '"command": "resume"'
	as admin
	run -0 amp resume $T --from admin --reason "looked at it"
	run -0 amp status $T --json
	assert_output --partial '"suspended": false'
	# an ACK for the executor with the coordinator's key; for the
	# reviewer with the executor's
	as coordinator
	run -3 amp ack "$D" --from executor
	assert_output --partial "may not write as executor"
	as executor
	amp ack "$D" --from executor > /dev/null
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	as coordinator
	amp ack "$R" --from coordinator > /dev/null
	Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	as executor
	before=$(tip)
	run -3 amp ack "$Q" --from reviewer
	assert_output --partial "may not write as reviewer"
	[ "$(tip)" = "$before" ]
	as reviewer
	run -0 amp ack "$Q" --from reviewer
}

@test "strict mode refuses AMP_NOW and needs amp.allowedSigners; a key that is not in the file cannot write at all" {
	git config amp.requireSigned true
	run -2 env AMP_NOW=2026-02-26T14:32:07+00:00 amp status
	assert_output --partial "AMP_NOW is refused with git config amp.requireSigned"
	git config --unset amp.allowedSigners
	run -2 amp status
	assert_output --partial "amp.requireSigned needs git config amp.allowedSigners"
	git config amp.allowedSigners "$K/signers"
	ssh-keygen -q -t ed25519 -N '' -f "$K/stranger"
	git config amp.signingKey "$K/stranger"
	run -3 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_output --partial "is not in $K/signers, so it may not write as coordinator"
	git config --unset amp.signingKey
	run -3 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_output --partial "needs a signing key (git config amp.signingKey)"
}

@test "a named agent instance: alice@executor may write as the executor, not as the reviewer" {
	ssh-keygen -q -t ed25519 -N '' -f "$K/alice"
	run -0 amp keys add executor --agent alice "$K/alice.pub"
	assert_output --regexp "^allowed: alice@executor SHA256:[A-Za-z0-9+/]+ in $K/signers$"
	run -0 amp keys add executor --agent alice "$K/alice.pub"
	assert_output --regexp "^already allowed: alice@executor"
	run -0 amp keys list
	assert_line --regexp "^alice@executor ssh-ed25519 [A-Za-z0-9+/=]+"
	git config amp.requireSigned true
	as coordinator
	send_dispatch
	git config amp.signingKey "$K/alice"
	run -0 amp ack "$D" --from executor
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature refs/amp/messages
	assert_output --partial 'Good "git" signature for alice@executor'
	run -3 amp heartbeat $T --from reviewer
	# keys: what is not a role, an agent name or a key is a usage error
	run -2 amp keys add boss "$K/alice.pub"
	assert_output --partial "'boss' is not a role"
	run -2 amp keys add executor --agent 'al ice' "$K/alice.pub"
	assert_output --partial "is not an agent name"
	run -2 amp keys add executor "$K/nope.pub"
	assert_output --partial "is neither an SSH public key nor a file holding one"
	run -2 amp keys add executor "ssh-ed25519 AAAAnotakey"
	assert_output --partial "ssh-keygen cannot read the key"
}

@test "the hub's hook in strict mode refuses an unsigned push and a record signed by a key of another role, and takes a signed one" {
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	amp hook install --server --repo "$HUB" > /dev/null
	git remote add origin "$HUB"
	amp sync > /dev/null # the init commit, signed by the admin
	as coordinator
	send_dispatch
	run -0 amp sync
	# unsigned: a record committed by hand, as the executor
	GIT_AUTHOR_NAME=executor plant "$(next_path $T heartbeat-1 ctl)" <<JSON
{"protocol_version": "AMP/1.0", "type": "heartbeat", "task_id": "$T", "from": "executor",
 "timestamp": "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)"}
JSON
	run -4 amp sync
	assert_output --partial "it is not signed (git config amp.requireSigned)"
	git update-ref refs/amp/messages refs/amp/messages~1
	# signed by the executor's key, written as the coordinator
	as executor
	git config amp.requireSigned false
	amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	run -4 amp sync
	assert_output --partial "written as coordinator, but its key may not write as coordinator"
	git update-ref refs/amp/messages refs/amp/messages~1
	amp ack "$D" --from executor > /dev/null
	run -0 amp sync
	[ "$(tip)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
}

@test "amp watch in strict mode escalates a record that arrived unsigned, once, and the task is suspended until the admin resumes" {
	as coordinator
	send_dispatch
	# as a fetch brings it: nobody signed it
	git config --unset amp.signingKey
	amp ack "$D" --from executor > /dev/null
	git config amp.requireSigned true
	as system
	run -0 amp watch --once
	assert_output --regexp "^escalated permission_denied $T $D \(escalation-$T-[0-9]+\)$"
	run -0 amp watch --once
	assert_output ""
	run -0 amp status $T --json
	assert_output --partial '"suspended": true'
	run -0 amp status $T
	assert_output --partial "commit"
	assert_output --partial "it is not signed"
	as admin
	run -0 amp resume $T --from admin --reason "the ACK is genuine"
	as system
	run -0 amp watch --once
	assert_output ""
}

@test "a relative amp.signingKey is the repository's; amp sync's replayed commits are signed too; a system escalation beside its role's record passes the strict hub" {
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	amp hook install --server --repo "$HUB" > /dev/null
	git remote add origin "$HUB"
	amp sync > /dev/null
	git clone -q "$HUB" "$BATS_TEST_TMPDIR/b" 2> /dev/null
	cp "$K/executor" "$K/executor.pub" "$BATS_TEST_TMPDIR/b/"
	git -C "$BATS_TEST_TMPDIR/b" config amp.signingKey executor
	git -C "$BATS_TEST_TMPDIR/b" config amp.allowedSigners "$K/signers"
	(cd "$BATS_TEST_TMPDIR/b" && amp sync > /dev/null)
	# a dispatch that wants its ACK within 1 s
	as coordinator
	D=$(amp send task_dispatch --task $T --from coordinator --ack-timeout 1 --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	amp sync > /dev/null
	(cd "$BATS_TEST_TMPDIR/b" && amp sync > /dev/null)
	# meanwhile the coordinator writes more, so b's ACK is replayed
	amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp sync > /dev/null
	sleep 1.2
	# the late ACK is committed with its ack_timeout escalation from system
	run -0 bash -c "cd '$BATS_TEST_TMPDIR/b' && amp ack '$D' --from executor --json"
	assert_output --regexp '"escalation":"escalation-'
	run -0 bash -c "cd '$BATS_TEST_TMPDIR/b' && amp sync --json"
	assert_output --partial '"replayed":2,'
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature --format='%an %s' refs/amp/messages
	assert_output --partial 'Good "git" signature for executor'
	assert_output --partial 'executor '
}

@test "amp fsck, with amp.allowedSigners set, reports a commit that is not signed or signed by a key of another role" {
	as coordinator
	send_dispatch
	run -0 amp fsck
	# unsigned, as the executor
	git config --unset amp.signingKey
	amp ack "$D" --from executor > /dev/null
	bad=$(git rev-parse --short=7 refs/amp/messages)
	run -3 amp fsck
	assert_line "amp fsck: $bad: rule: written as executor, but it is not signed (git config amp.requireSigned)"
	assert_line "amp fsck: 4 commits checked: 0 corrupt, 1 rule, 0 unreadable"
	# without the allowed-signers file, fsck does not look at signatures
	git config --unset amp.allowedSigners
	run -0 amp fsck
}
