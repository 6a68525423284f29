#!/usr/bin/env bats
# Strict mode in its documented order and across a key rotation (issue
# 30): where trust starts (the admin's `amp init` in strict mode), what amp
# signs on the errors ref, and keys retired with valid-before checked at
# each commit's time, as git verify-commit checks them.  Throw-away keys
# made with ssh-keygen in the test; no AMP_NOW in strict mode (it refuses
# it), so the past is written before strict mode is on.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load signing

setup() {
	signing_setup
}

# no_raw_keygen: nothing in $output is ssh-keygen's own text outside one
# of amp's lines (its words may only appear inside amp's reason).
no_raw_keygen() {
	if grep -v '^amp \|amp [a-z]*: \|^remote: amp\|^To \|^ ! \|^error: failed' <<< "$output" |
		grep -i 'principal\|ssh-keygen\|signature\|verify'; then
		return 1
	fi
}

# rotate OLD NEW T: amp-sharing(7)'s key rotation, literally: the old key's
# line gets valid-before="T", the new key a line of its own with
# valid-after="T" (same principal).
rotate() {
	local f=$K/signers old new
	old=$(cut -d' ' -f1,2 "$K/$1.pub")
	new=$(cut -d' ' -f1,2 "$K/$2.pub")
	sed -i "s#^\([^ ]*\) $old#\1 valid-before=\"$3\" $old#" "$f"
	printf '%s valid-after="%s" %s\n' "$(grep -F "$old" "$f" | cut -d' ' -f1)" "$3" "$new" >> "$f"
}

@test "key rotation: commits of a key retired with valid-before verify at their commit time in amp fsck, the hook and amp watch; after it the old key is refused by amp send, the hook, amp fsck and amp watch; no ssh-keygen text reaches the terminal raw" {
	git config amp.allowedSigners "$K/signers"
	for r in admin coordinator executor system; do amp keys add $r "$K/$r.pub" > /dev/null; done
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	amp hook install --server --repo "$HUB" > /dev/null
	git remote add origin "$HUB"
	# two days ago, with the coordinator's first key (before strict mode:
	# AMP_NOW dates the commits)
	as admin
	AMP_NOW=$(date -u -d '2 days ago' +%Y-%m-%dT%H:%M:%S+00:00) amp init > /dev/null
	as coordinator
	D=$(AMP_NOW=$(date -u -d '2 days ago' +%Y-%m-%dT%H:%M:%S+00:00) amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	old=$(git rev-parse refs/amp/messages)
	git config amp.requireSigned true
	# the rotation, a day ago
	ssh-keygen -q -t ed25519 -N '' -C coordinator-2 -f "$K/coordinator-2"
	when=$(date -u -d '1 day ago' +%Y%m%d%H%M%S)Z
	rotate coordinator coordinator-2 "$when"
	run -0 grep -c "valid-" "$K/signers"
	assert_output 2
	as coordinator-2
	# git verify-commit: Good for the old key's commit (git passes the
	# commit time); amp agrees, silently
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit "$old"
	run -0 --separate-stderr amp fsck
	assert_output "amp fsck: 3 commits checked: clean"
	[ -z "$stderr" ]
	run -0 amp sync # the hub's hook takes the old key's commit
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$old" ]
	as system
	run -0 --separate-stderr amp watch --once
	refute_output --partial permission_denied # only the two-day-old dispatch's timeouts
	[ -z "$stderr" ]
	# the new key writes
	as executor
	run -0 amp ack "$D" --from executor
	as coordinator-2
	run -0 amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature refs/amp/messages
	assert_output --partial 'Good "git" signature for coordinator'
	# the old key, now: amp send refuses it before anything is written
	as coordinator
	before=$(git rev-parse refs/amp/messages)
	fp=$(ssh-keygen -l -f "$K/coordinator" | cut -d' ' -f2)
	run -3 --separate-stderr amp send task_dispatch --task T-2026-046 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_equal "${stderr_lines[0]}" "amp send: error: the key $fp (git config amp.signingKey) may not write now: its line in $K/signers says valid-before=\"$when\""
	# not logged: the retired key cannot sign the errors ref either
	assert_equal "${stderr_lines[1]}" "amp send: error: could not write the error log: strict mode logs a refusal on refs/amp/errors only signed by a key of $K/signers valid now (${stderr_lines[0]#amp send: error: })"
	[ "$(git rev-parse refs/amp/messages)" = "$before" ]
	# ...and a commit it signs now anyway (a clone not in strict mode) is
	# a rule violation for amp fsck, refused by the hook, escalated by watch
	git config amp.requireSigned false
	amp send task_dispatch --task T-2026-047 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	bad=$(git rev-parse --short=7 refs/amp/messages)
	run -1 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit "$bad"
	git config amp.requireSigned true
	run -3 --separate-stderr amp fsck
	assert_line --regexp "^amp fsck: $bad: rule: written as coordinator, but its key is not in $K/signers as valid at its commit time [0-9-]+ [0-9:]+ \(ssh-keygen: .*\) \(git config amp.requireSigned\)$"
	assert_line "amp fsck: 8 commits checked: 0 corrupt, 1 rule, 0 unreadable"
	[ -z "$stderr" ]
	run -4 amp sync
	assert_output --partial "written as coordinator, but its key is not in $K/signers as valid at its commit time"
	no_raw_keygen
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" != "$(git rev-parse refs/amp/messages)" ]
	as system
	run -0 --separate-stderr amp watch --once
	assert_output --regexp "^escalated permission_denied T-2026-047 task_dispatch-T-2026-047-"
	assert_equal "$(grep -c . <<< "$output")" 1
	[ -z "$stderr" ]
	run -0 amp watch --once
	assert_output ""
}

@test "strict mode in its documented order is clean: amp init before any key, writes, keys, the admin's amp init; amp fsck exits 0, a fresh watcher escalates nothing, the strict hub takes the history, refused writes leave nothing unsigned; a forged unsigned commit after trust started is still reported, escalated and refused" {
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	git remote add origin "$HUB"
	# 1. amp init, and work, before any key
	amp init > /dev/null
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	amp ack "$D" --from executor > /dev/null
	# 2. the keys
	git config amp.allowedSigners "$K/signers"
	for r in admin coordinator executor reviewer system; do amp keys add $r "$K/$r.pub" > /dev/null; done
	# 3. strict mode on, and the admin says where trust starts
	git config amp.requireSigned true
	as coordinator
	run -3 amp init
	assert_output --partial "may not write as admin"
	as admin
	run -0 amp init
	assert_line "Strict mode on: trust starts at the admin's signed commit on each ref;"
	assert_line "what is below it the admin vouches for, everything above must be signed"
	run -0 amp init # once is enough
	refute_output --partial "Strict mode on"
	for ref in refs/amp/messages refs/amp/errors; do
		run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature --format='%an %s%n%b' $ref
		assert_output --partial 'Good "git" signature for admin'
		assert_line "Amp-Strict: on"
	done
	# the hub, strict from its first push: it takes the unsigned history
	# the marker vouches for
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	amp hook install --server --repo "$HUB" > /dev/null
	run -0 amp sync
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$(git rev-parse refs/amp/messages)" ]
	[ "$(git -C "$HUB" rev-parse refs/amp/errors)" = "$(git rev-parse refs/amp/errors)" ]
	# 4. writes, each role with its key
	as executor
	run -0 amp heartbeat $T --from executor
	# 5. forged writes, refused: the executor's key as system (logged,
	# signed by that key), and no key at all (not logged: nothing to sign it)
	run -3 amp escalate $T --from system --type unknown --severity info --description forged
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/errors
	errors=$(git rev-parse refs/amp/errors)
	git config --unset amp.signingKey
	run -3 amp escalate $T --from system --type unknown --severity info --description forged
	assert_output --partial "needs a signing key"
	assert_output --partial "could not write the error log: strict mode logs a refusal on refs/amp/errors only signed by a key of $K/signers valid now"
	[ "$(git rev-parse refs/amp/errors)" = "$errors" ]
	# clean: fsck, a fresh watcher (no amp watch ever ran here), the hub
	run -0 amp fsck
	assert_output "amp fsck: 8 commits checked: clean"
	[ -z "$(git for-each-ref refs/amp-seen)" ]
	as system
	run -0 amp watch --once
	assert_output ""
	run -0 amp sync
	# 6. after trust started, an unsigned record (made by hand, as the
	# executor) is still a rule violation, escalated and refused by the hub
	GIT_AUTHOR_NAME=executor plant "$(next_path $T heartbeat-9 ctl)" <<JSON
{"protocol_version": "AMP/1.0", "type": "heartbeat", "task_id": "$T", "from": "executor",
 "timestamp": "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)"}
JSON
	bad=$(git rev-parse --short=7 refs/amp/messages)
	run -3 amp fsck
	assert_line "amp fsck: $bad: rule: written as executor, but it is not signed (git config amp.requireSigned)"
	assert_line "amp fsck: 9 commits checked: 0 corrupt, 1 rule, 0 unreadable"
	run -0 amp watch --once
	assert_output --regexp "^escalated permission_denied $T "
	run -4 amp sync
	assert_output --partial "it is not signed (git config amp.requireSigned)"
}

@test "trust does not start without the admin's signed marker: unsigned history alone, a marker trailer without a signature, or one signed by another role's key, vouch for nothing" {
	amp init > /dev/null
	git config amp.allowedSigners "$K/signers"
	for r in admin coordinator executor reviewer system; do amp keys add $r "$K/$r.pub" > /dev/null; done
	git config amp.requireSigned true
	root=$(git rev-parse --short=7 refs/amp/messages)
	# no marker: the unsigned history is reported
	run -3 amp fsck
	assert_line "amp fsck: $root: rule: written as amp, but it is not signed (git config amp.requireSigned)"
	# an empty commit carrying the trailer, unsigned, then one signed by
	# the executor's key: neither starts trust
	c=$(git commit-tree "refs/amp/messages^{tree}" -p refs/amp/messages -m "amp: strict mode on" -m "Amp-Strict: on")
	git update-ref refs/amp/messages "$c"
	c=$(git -c gpg.format=ssh -c user.signingKey="$K/executor" commit-tree -S "refs/amp/messages^{tree}" -p refs/amp/messages -m "amp: strict mode on" -m "Amp-Strict: on")
	git update-ref refs/amp/messages "$c"
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages
	run -3 amp fsck
	assert_line "amp fsck: $root: rule: written as amp, but it is not signed (git config amp.requireSigned)"
	assert_line "amp fsck: $(git rev-parse --short=7 refs/amp/messages~1): rule: written as amp, but it is not signed (git config amp.requireSigned)"
	# the admin's marker above them vouches for all of it
	as admin
	amp init > /dev/null
	run -0 amp fsck
	assert_output "amp fsck: 6 commits checked: clean"
}
