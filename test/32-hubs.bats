#!/usr/bin/env bats
# Real hubs (issue 32, items 4): Debian's gitolite3 behind a private sshd
# on loopback, set up as share/doc/hub-gitolite.md says, step by step; and
# a plain bare hub with no hook at all, as GitHub or GitLab are to amp.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load signing
load gitolite

setup() {
	people_setup
}

teardown() {
	stop_gitolite_sshd
	stop_servers
	fsck_all_repos
}

# ---- gitolite ---------------------------------------------------------------

@test "gitolite3: a whole task in strict mode through four clones, one key per person, amp's hooks run by gitolite; only amp's refs may be pushed, receive.maxInputSize holds, and a key rotated by a push to gitolite-admin refuses the old key" {
	gitolite_setup
	HUB=$GL/repositories/amp.git
	# the hub runs amp's hooks through gitolite's multi-hook driver, and
	# took the admin's strict-mode marker
	[ "$(readlink "$HUB/hooks/pre-receive.h00-amp-pre-receive")" = "$GL/local/hooks/repo-specific/amp-pre-receive" ]
	run -0 cat "$GL/local/hooks/repo-specific/amp-pre-receive"
	assert_line "exec $AMP_BIN/amp hook pre-receive" # the installed amp under make installcheck
	[ "$(git -C "$HUB" config amp.requireSigned)" = true ]
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$(git -C admin rev-parse refs/amp/messages)" ]
	run -0 git -C "$HUB" log -1 --format=%B refs/amp/messages
	assert_line "Amp-Strict: on"
	# the task: dispatch, ACK, result, review, verdict, each by its person
	D=$(turn coordinator amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	turn executor amp ack "$D" --from executor > /dev/null
	R=$(turn executor amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	turn coordinator amp ack "$R" --from coordinator > /dev/null
	Q=$(turn coordinator amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R" 0)")
	turn reviewer amp ack "$Q" --from reviewer > /dev/null
	V=$(turn reviewer amp verdict $T --decision approved --confidence 0.95 --from reviewer --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	turn coordinator amp ack "$V" --from coordinator > /dev/null
	for p in $PEOPLE; do on "$p" amp sync > /dev/null; done
	for p in $PEOPLE; do
		[ "$(git -C "$p" rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
		[ "$(records "$p")" = "$(records "$HUB")" ]
		run -0 on "$p" amp status $T --json
		[ "$(echo "$output" | json_get 'd["state"]')" = approved ]
		[ "$(echo "$output" | json_get 'd["escalations"]')" = "[]" ]
		run -0 on "$p" amp fsck
		assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
	done
	[ "$(records "$HUB" | grep -c '^ack\.')" = 4 ]
	[ "$(records "$HUB" | grep -c '^msg\.')" = 4 ]
	# every commit on the hub is signed by its person's key
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$GL/.gitolite/amp/allowed_signers" \
		log --format='%G? %an' refs/amp/messages
	refute_line --regexp '^[^G]'
	# only amp's refs: a branch is refused by gitolite's rules, another
	# ref under refs/amp/ by amp's hook (pre-receive runs before
	# gitolite's update hook)
	cd executor
	git checkout -q -b work 2> /dev/null || git switch -q -c work
	git commit -q --allow-empty -m work
	run -1 git push origin work:refs/heads/main
	assert_output --partial "DENIED by fallthru"
	git update-ref refs/amp/other refs/amp/messages
	run -1 git push origin refs/amp/other
	assert_output --partial "amp hook: refused refs/amp/other: amp defines no such ref"
	[ -z "$(git -C "$HUB" for-each-ref refs/heads refs/amp/other)" ]
	# receive.maxInputSize: a pack over 1 MiB is refused before any hook
	head -c 2000000 /dev/urandom > big
	blob=$(git hash-object -w big)
	tree=$(printf '100644 blob %s\tbig\n' "$blob" | git mktree)
	c=$(git commit-tree "$tree" -p refs/amp/messages -m big)
	git update-ref refs/amp/messages "$c"
	run -1 git push origin refs/amp/messages
	assert_output --partial "pack exceeds maximum allowed size"
	git update-ref refs/amp/messages refs/amp/messages~1
	cd ..
	# a key rotated by the admin's push to gitolite-admin: the
	# coordinator's new key in keydir and in amp/allowed_signers, the old
	# one valid before now
	ssh-keygen -q -t ed25519 -N '' -C coordinator-2 -f "$K/coordinator-2"
	when=$(date -u +%Y%m%d%H%M%S)Z
	old=$(cut -d' ' -f1,2 "$K/coordinator.pub")
	sed -i "s#^coordinator $old#coordinator valid-before=\"$when\" $old#" ga/amp/allowed_signers
	printf 'coordinator valid-after="%s" %s\n' "$when" "$(cut -d' ' -f1,2 "$K/coordinator-2.pub")" >> ga/amp/allowed_signers
	cp "$K/coordinator-2.pub" ga/keydir/coordinator.pub
	git -C ga commit -q -a -m "amp: the coordinator's key rotated"
	git -C ga push -q origin master 2> /dev/null
	# the hub's copy is the pushed one
	cmp ga/amp/allowed_signers "$GL/.gitolite/amp/allowed_signers"
	# wait for the clock to pass the switch (at most a second)
	while [ "$(date -u +%Y%m%d%H%M%S)Z" = "$when" ]; do sleep 0.1; done
	# the old ssh key no longer logs in
	run -4 on coordinator amp sync
	# with the new key, the coordinator writes; the old key, writing
	# anyway (a clone not in strict mode), is refused by the hub's hook
	git -C coordinator config core.sshCommand "$(ssh_for coordinator-2)"
	git -C coordinator config amp.requireSigned false
	on coordinator amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	before=$(git -C "$HUB" rev-parse refs/amp/messages)
	run -4 on coordinator amp sync
	assert_output --partial "written as coordinator, but its key is not in $GL/.gitolite/amp/allowed_signers as valid at its commit time"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$before" ]
	# the same record, signed with the new key, is taken
	git -C coordinator update-ref refs/amp/messages "$before"
	git -C coordinator config amp.requireSigned true
	git -C coordinator config amp.signingKey "$K/coordinator-2"
	run -0 on coordinator amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	run -0 on coordinator amp sync
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$(git -C coordinator rev-parse refs/amp/messages)" ]
	run -0 on admin amp sync
	run -0 on admin amp fsck
	assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
}

# ---- a hub with no hook (GitHub, GitLab, a bare repository) -----------------

@test "a hub with no hook: a hand-made bad commit pushed straight to it with git push is checked by every other clone's amp sync (not with amp.syncVerify false), escalated and logged once in all, kept in the history, and the rest is delivered" {
	at 0
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	for c in c1 c2 c3; do git clone -q "$HUB" $c 2> /dev/null; done
	on c1 amp init > /dev/null
	D=$(on c1 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on c1 amp sync > /dev/null
	for c in c2 c3; do on $c amp sync > /dev/null; done
	# c1, by hand: an ACK of the dispatch by the reviewer (only its
	# addressee, the executor, may ACK it) and a heartbeat that is no
	# valid record (no timestamp), in one commit, pushed with git push
	cd c1
	at 5
	printf '{"protocol_version":"AMP/1.0","type":"ack","ack_for":"%s","task_id":"%s","from":"reviewer","to":"coordinator","timestamp":"%s"}\n' \
		"$D" "$T" "$AMP_NOW" > ../ack.json
	printf '{"protocol_version":"AMP/1.0","type":"heartbeat","task_id":"%s","from":"executor"}\n' "$T" > ../hb.json
	ack=$(next_path "$T" "$D" ack)
	hb=$(dirname "$ack")/000003.ctl.heartbeat-1.json
	idx=$BATS_TEST_TMPDIR/idx
	GIT_INDEX_FILE=$idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(git hash-object -w ../ack.json),$ack"
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(git hash-object -w ../hb.json),$hb"
	bad=$(git commit-tree "$(GIT_INDEX_FILE=$idx git write-tree)" -p refs/amp/messages -m "by hand")
	git update-ref refs/amp/messages "$bad"
	run -0 git push origin refs/amp/messages
	# and a good record after it, through amp
	at 10
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 amp sync
	cd ..
	# c3, with amp.syncVerify false, takes it unchecked, says nothing
	at 15
	git -C c3 config amp.syncVerify false
	run -0 --separate-stderr on c3 amp sync
	[ -z "$stderr" ]
	run -0 on c3 amp status $T --json
	run -0 json_get 'd["escalations"]' <<< "$output"
	assert_output '[]'
	git -C c3 config --unset amp.syncVerify
	# c2 checks what it fetched: each bad record escalated (its cause its
	# path, as amp watch's), logged, said on stderr; the rest in force
	at 20
	run -0 --separate-stderr on c2 amp sync
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" "amp sync: warning: $ack: /from: only the addressee (executor) may ACK, not reviewer (fetched from origin: escalated escalation-$T-1772116347000)"
	assert_equal "${stderr_lines[1]}" "amp sync: warning: $hb: missing required property \"timestamp\" (fetched from origin: escalated escalation-$T-1772116347001)"
	run -0 on c2 amp status $T --json
	run -0 json_get '[(e["escalation_type"], e["severity"], e["from"], e["description"][:len("amp watch cannot use ") + 40]) for e in d["escalations"]]' <<< "$output"
	assert_output "[[\"unknown\", \"warning\", \"system\", \"amp watch cannot use ${ack:0:40}\"], [\"unknown\", \"warning\", \"system\", \"amp watch cannot use ${hb:0:40}\"]]"
	run -0 on c2 amp status $T --json
	assert_output --partial "amp sync fetched it from origin, whose hub took it unchecked (no amp hook); it stays in the history"
	run -0 on c2 amp errors --json
	run -0 json_get '[(e["command"], e["source"]) for e in d["errors"]]' <<< "$output"
	assert_output '[["sync", "origin"], ["sync", "origin"]]'
	run -0 on c2 amp status T-2026-045 --json
	run -0 json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output"
	assert_output "[\"$D2\"]"
	# the escalations went to the hub with the same sync; c3 fetches
	# them and escalates, logs and says nothing again, nor does amp watch
	[ "$(git -C c2 rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	at 30
	run -0 --separate-stderr on c3 amp sync
	[ -z "$stderr" ]
	run -0 on c3 amp status $T --json
	run -0 json_get 'len(d["escalations"])' <<< "$output"
	assert_output 2
	run -0 on c3 amp errors --json
	run -0 json_get 'len(d["errors"])' <<< "$output"
	assert_output 2
	run -0 on c3 amp watch --once
	assert_output ""
	# the bad records stay in the history (append-only for everyone)
	run -0 git -C "$HUB" cat-file -e "refs/amp/messages:$ack"
	# later syncs check nothing twice; c1 fetches the escalations
	run -0 --separate-stderr on c2 amp sync
	[ -z "$stderr" ]
	run -0 --separate-stderr on c1 amp sync
	[ -z "$stderr" ]
	for c in c1 c2 c3; do
		[ "$(git -C $c rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	done
}

@test "a hub with no hook, strict mode on the clones: an unsigned commit pushed straight to it as the executor is escalated by the next clone's amp sync as permission_denied, critical, once, and amp watch does not escalate it again" {
	for p in admin coordinator executor system; do ssh-keygen -q -t ed25519 -N '' -C "$p" -f "$K/$p"; done
	for p in admin coordinator executor system; do
		printf '%s %s\n' "$p" "$(cut -d' ' -f1,2 "$K/$p.pub")" >> "$K/signers"
	done
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	for c in c1 c2 c3; do
		git clone -q "$HUB" $c 2> /dev/null
		git -C $c config amp.allowedSigners "$K/signers"
		git -C $c config amp.requireSigned true
	done
	git -C c1 config amp.signingKey "$K/admin"
	on c1 amp init > /dev/null
	git -C c1 config amp.signingKey "$K/coordinator"
	D=$(on c1 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on c1 amp sync > /dev/null
	git -C c2 config amp.signingKey "$K/system" # a watcher's clone
	on c2 amp sync > /dev/null
	# c3: the executor's ACK, in an unsigned commit made by hand
	on c3 amp sync > /dev/null
	cd c3
	printf '{"protocol_version":"AMP/1.0","type":"ack","ack_for":"%s","task_id":"%s","from":"executor","to":"coordinator","timestamp":"%s"}\n' \
		"$D" "$T" "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)" > ../ack.json
	ack=$(next_path "$T" "$D" ack)
	AMP_NOW=$(date -u +%Y-%m-%dT%H:%M:%S+00:00) GIT_AUTHOR_NAME=executor plant "$ack" < ../ack.json
	run -0 git push origin refs/amp/messages
	cd ..
	run -0 --separate-stderr on c2 amp sync
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^amp sync: warning: $ack: written as executor, but it is not signed \(git config amp.requireSigned\) \(fetched from origin: escalated escalation-$T-[0-9]+\)$"
	run -0 on c2 amp status $T --json
	run -0 json_get '[(e["escalation_type"], e["severity"], e["from"], e["auto_suspended"], e["description"].startswith("amp watch cannot use '"$ack"': ")) for e in d["escalations"]] + [d["suspended"]]' <<< "$output"
	assert_output '[["permission_denied", "critical", "system", true, true], true]'
	# amp watch (the system's key) finds the same cause escalated
	run -0 on c2 amp watch --once
	refute_output --partial permission_denied
	run -0 --separate-stderr on c2 amp sync
	[ -z "$stderr" ]
	run -0 --separate-stderr on c1 amp sync
	[ -z "$stderr" ]
	run -0 on c1 amp status $T --json
	run -0 json_get 'len(d["escalations"])' <<< "$output"
	assert_output 1
}
