#!/usr/bin/env bats
# Arrival times the hub vouches for (issue 32, item 2): deadlines run from
# when a record reached the hub, by the hub's clock, never from the
# timestamp or commit date its writer chose.  The attack: a signed ACK
# whose record timestamp and commit dates say dispatch + 1 s, pushed when
# the real time is dispatch + 8 s, against a 5 s ACK deadline.  The
# dispatch is written and pushed before strict mode is on, with AMP_NOW
# 8 s in the past (the hub's hook, not strict yet, takes the time from it
# as amp takes it everywhere), so nobody sleeps: the ACK's push happens
# at the real time, which is dispatch + 8 s.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load signing
load hub

# iso SECONDS: Unix seconds as amp's ISO 8601.
iso() {
	date -u -d "@$1" +%Y-%m-%dT%H:%M:%S+00:00
}

# backdated_setup [none|hookwatch]: keys for the admin, the coordinator,
# the executor and system; a hub ($HUB) with amp's hooks (none: without;
# hookwatch: with amp.hookWatch and system's key from the ACK's push on);
# clones c (admin, coordinator), e (the executor, whose clock
# lies) and w (system, the watcher).  $D is a dispatch of $T with a 5 s ACK
# deadline, written at $D0 (now - 8 s) and pushed then, and fetched by w
# at $D0 + 6 s; strict mode is on for the hub and for c and w.  Then e writes the ACK with its timestamp
# and commit dates at $D0 + 1 s (AMP_NOW, GIT_AUTHOR_DATE,
# GIT_COMMITTER_DATE), signed with the executor's key, and pushes it now:
# the push's output is in $PUSHED.
backdated_setup() {
	signing_base
	: > "$K/signers"
	local r now
	for r in admin coordinator executor system; do
		ssh-keygen -q -t ed25519 -N '' -C "$r-key" -f "$K/$r"
		echo "$r $(cut -d' ' -f1,2 "$K/$r.pub")" >> "$K/signers"
	done
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	[ "${1:-}" = none ] || amp hook install --server --repo "$HUB" > /dev/null
	cd "$BATS_TEST_TMPDIR" || return 1
	# the clones know the keys from step 2 on: amp sync checks what it
	# fetches against them, and before the admin's marker nothing is signed
	for r in c e w; do
		git clone -q "$HUB" $r 2> /dev/null
	done
	now=$(date +%s)
	D0=$(iso $((now - 8)))
	D1=$(iso $((now - 7)))
	# 1. before strict mode: the dispatch, written and pushed at D0
	on c env AMP_NOW="$D0" amp init > /dev/null
	D=$(on c env AMP_NOW="$D0" amp send task_dispatch --task "$T" --from coordinator --to executor --ack-timeout 5 --no-sync --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on c env AMP_NOW="$D0" amp sync > /dev/null
	# w fetches it at D0 + 6 s: after the ACK's deadline, before the ACK
	on w env AMP_NOW="$(iso $((now - 2)))" amp sync > /dev/null
	# 2. strict mode on: the hub, c and w; the admin says where trust starts
	git -C "$HUB" config amp.requireSigned true
	git -C "$HUB" config amp.allowedSigners "$K/signers"
	for r in c e w; do
		git -C $r config amp.allowedSigners "$K/signers"
	done
	git -C c config amp.requireSigned true
	git -C c config amp.signingKey "$K/admin"
	on c amp init > /dev/null
	on c amp sync > /dev/null
	git -C w config amp.requireSigned true
	git -C w config amp.signingKey "$K/system"
	# 3. the executor's clone, its clock set back: the ACK says D0 + 1 s
	git -C e config amp.signingKey "$K/executor"
	on e amp sync > /dev/null
	on e env AMP_NOW="$D1" GIT_AUTHOR_DATE="$D1" GIT_COMMITTER_DATE="$D1" \
		amp ack "$D" --from executor --no-sync > /dev/null
	ACK_COMMIT=$(git -C e rev-parse refs/amp/messages)
	if [ "${1:-}" = hookwatch ]; then
		git -C "$HUB" config amp.hookWatch true
		git -C "$HUB" config amp.signingKey "$K/system"
	fi
	# ... and pushed now, at D0 + 8 s or later
	PUSHED=$(on e amp sync 2>&1)
}

# hub_note COMMIT: the hub's arrival note on COMMIT, read as git's notes
# format stores it (git notes refuses a ref outside refs/notes/).
hub_note() {
	local f
	f=$(git -C "$HUB" ls-tree -r --name-only refs/amp/arrivals |
		while read -r f; do [ "${f//\//}" != "$1" ] || echo "$f"; done)
	[ -n "$f" ] && git -C "$HUB" cat-file -p "refs/amp/arrivals:$f"
}

# the_late_ack DIR: the description of the ack_timeout escalation on DIR's
# messages ref.
the_late_ack() {
	git -C "$1" grep -h '"description"' refs/amp/messages -- 'tasks/*escalation*' |
		grep 'the ACK came'
}

@test "backdating: the ACK is what the attack says -- signed by the executor, its timestamp and its commit's dates at dispatch + 1 s -- and the strict hub takes it" {
	backdated_setup
	[ "$(git -C e log -1 --format=%ct "$ACK_COMMIT")" = "$(date -d "$D1" +%s)" ]
	[ "$(git -C e log -1 --format=%at "$ACK_COMMIT")" = "$(date -d "$D1" +%s)" ]
	run -0 git -C e grep -h '"timestamp"' "$ACK_COMMIT" -- 'tasks/*ack*'
	assert_output --partial "${D1%+00:00}"
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" -C e verify-commit "$ACK_COMMIT"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$ACK_COMMIT" ]
}

@test "backdating: amp watch on another clone escalates the backdated ACK as late, from its arrival by the hub's clock, and names who vouches for it" {
	backdated_setup
	# amp sync brings the hub's notes along
	on w amp sync > /dev/null
	[ "$(git -C w rev-parse refs/amp/arrivals)" = "$(git -C "$HUB" rev-parse refs/amp/arrivals)" ]
	run -0 --separate-stderr on w amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	[ -z "$stderr" ]
	# the hub's hook noted the push's arrival: the hub's time, not D1
	run -0 hub_note "$ACK_COMMIT"
	assert_line --regexp '^Amp-Arrived-Ms: [0-9]+$'
	arrived=$(sed -n 's/^Amp-Arrived-Ms: //p' <<< "$output")
	[ "$arrived" -ge $(( ($(date -d "$D0" +%s) + 8) * 1000 )) ]
	run -0 the_late_ack w
	assert_output --partial "required an ACK by $(date -u -d "@$(( $(date -d "$D0" +%s) + 5 ))" '+%Y-%m-%dT%H:%M:%S')"
	assert_output --partial "(its arrival at the hub, by the hub's clock (refs/amp/arrivals))"
	# the time named is the hub's note, not the writer's date
	assert_output --partial "at $(date -u -d "@$((arrived / 1000))" '+%Y-%m-%dT%H:%M:%S')"
	# once
	run -0 on w amp watch --once
	assert_output ""
	# the notes are no SSOT ref: amp fsck is clean with them
	run -0 on w amp fsck
	assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
}

@test "backdating: the strict hub's hook (amp.hookWatch) escalates the backdated ACK as late itself, from the arrival it noted, signed with the hub's key; a clone may not push the hub's arrival notes" {
	backdated_setup hookwatch
	<<< "$PUSHED" grep -q "remote: amp hook: escalated ack_timeout $T $D (escalation-$T-"
	arrived=$(hub_note "$ACK_COMMIT" | sed -n 's/^Amp-Arrived-Ms: //p')
	run -0 the_late_ack "$HUB"
	assert_output --partial "(its arrival at the hub, by the hub's clock (refs/amp/arrivals))"
	assert_output --partial "at $(date -u -d "@$((arrived / 1000))" '+%Y-%m-%dT%H:%M:%S')"
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature refs/amp/messages
	assert_output --partial 'Good "git" signature for system'
	# the escalation's own arrival is noted too
	run -0 hub_note "$(git -C "$HUB" rev-parse refs/amp/messages)"
	# a clone watching after it escalates nothing again
	on w amp sync > /dev/null
	run -0 on w amp watch --once
	refute_output --partial ack_timeout
	# nobody else writes the notes: the hub refuses a push of them
	on e git update-ref refs/amp/arrivals "$(git -C e rev-parse refs/amp/messages~1)"
	run -1 on e git push origin +refs/amp/arrivals:refs/amp/arrivals
	assert_output --partial "amp defines no such ref"
	[ "$(hub_note "$ACK_COMMIT" | sed -n 's/^Amp-Arrived-Ms: //p')" = "$arrived" ]
}

@test "a hook-less hub vouches for nothing: a clone that fetched after the deadline and before the backdated ACK escalates it from its own fetches; a clone that fetched both at once counts from the writer's date; amp fsck does not flag an SSOT without arrival notes" {
	backdated_setup none
	run -1 git -C "$HUB" rev-parse -q --verify refs/amp/arrivals
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$ACK_COMMIT" ]
	on w amp sync > /dev/null
	run -0 --separate-stderr on w amp watch --once
	assert_output --regexp "^escalated ack_timeout $T $D \(escalation-$T-[0-9]+\)$"
	[ -z "$stderr" ]
	run -0 the_late_ack w
	assert_output --partial "no earlier than this clone's last fetch without it, by this clone's clock (refs/amp-first-seen)"
	assert_output --partial "at $(date -u -d "@$(( $(date -d "$D0" +%s) + 6 ))" '+%Y-%m-%dT%H:%M:%S')"
	# a clone that saw nothing before: the ACK's own date counts
	git clone -q "$HUB" x 2> /dev/null
	git -C x config amp.allowedSigners "$K/signers"
	git -C x config amp.signingKey "$K/system"
	on x amp sync > /dev/null
	run -0 on x amp watch --once
	refute_output --partial ack_timeout
	# old SSOTs: no notes anywhere, and amp fsck is clean
	run -1 git -C x rev-parse -q --verify refs/amp-first-seen
	git -C x config amp.requireSigned true
	run -0 on x amp fsck
	assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
	run -0 on w amp fsck
	assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
}
