#!/usr/bin/env bats
# What the last review left: amp ask and amp progress refuse a role other
# than the executor through the write skeleton's one guard (amp_cli_writer
# .role); the team's reports of a warm `amp inbox coordinator|executor`
# come from inbox.json alone, and stay right as sends change them; and
# share/doc/hub-gitolite.md step 8, inbox mode on gitolite3, followed
# literally.

bats_require_minimum_version 1.5.0
load helpers
load conversation
load enforcer
load transitions
load hub
load signing
load gitolite

setup() {
	# the gitolite test makes its own repositories (people_setup)
	[[ $BATS_TEST_DESCRIPTION == gitolite3* ]] || make_ssot
}

teardown() {
	stop_gitolite_sshd
	stop_servers
	fsck_all_repos
}

# alice_holds: the coordinator dispatches $T at 0; executor alice ACKs it
# at 5 and claims it.
alice_holds() {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim "$T" --agent alice > /dev/null
}

# ---- one role guard ---------------------------------------------------------------

@test "amp progress and amp ask from another role than the executor are refused with exit 3 on /from, their own reason, writing nothing" {
	alice_holds
	tip=$(git rev-parse refs/amp/messages)
	run -3 --separate-stderr amp progress "$T" --percent 10 --from coordinator --agent alice
	assert_equal "$stderr" "amp progress: error: /from: progress is reported by the executor that holds the task, not coordinator"
	assert_output ''
	run -3 --separate-stderr amp ask "$T" --question why --from reviewer --agent alice
	assert_equal "$stderr" "amp ask: error: /from: a clarification question comes from the executor, not reviewer"
	# the role from git config is checked as --from is
	git config amp.role admin
	run -3 --separate-stderr amp ask "$T" --question why --agent alice
	assert_equal "$stderr" "amp ask: error: /from: a clarification question comes from the executor, not admin"
	assert_equal "$(git rev-parse refs/amp/messages)" "$tip"
	git config --unset amp.role
	run -0 amp progress "$T" --percent 10 --agent alice
	run -0 amp ask "$T" --question why --agent alice
}

# ---- the team's reports in inbox.json --------------------------------------------

# team ROLE [ARGS...]: amp inbox ROLE --json's team members, compact.
team() {
	amp inbox "$@" --json |
		json_get 'json.dumps({k: [(x.get("task_id"), x.get("record"), x.get("percent"), x.get("due_seconds"), (x.get("answer") or {}).get("answer")) for x in d[k]] for k in ("progress", "questions", "answers", "released") if k in d}, sort_keys=True)'
}

@test "a warm amp inbox coordinator reads the team's reports from inbox.json alone (the status cache not read), and they stay right as progress, a question and its answer change them" {
	alice_holds
	at 10
	P1=$(amp progress "$T" --percent 30 --note first --agent alice --json | json_get 'd["record"]')
	run -0 team coordinator
	assert_output '{"progress": [["'$T'", "'$P1'", 30, null, null]], "questions": []}'
	# inbox.json keeps them, keyed by task, on the line after the cache
	run -0 json_get 'json.dumps([(t, [p["percent"] for p in r["progress"]]) for t, r in d.items()])' < <(sed -n 2p .git/amp/inbox.json)
	assert_output '[["'$T'", [30]]]'
	# warm: the same answer with no status cache, which is not read (so
	# not written again either)
	rm -f .git/amp/status.cache .git/amp/status.shards
	run -0 team coordinator
	assert_output '{"progress": [["'$T'", "'$P1'", 30, null, null]], "questions": []}'
	[ ! -e .git/amp/status.cache ]
	# a send changes them: the inbox catches up with the new tip
	at 20
	P2=$(amp progress "$T" --percent 60 --agent alice --json | json_get 'd["record"]')
	Q=$(amp ask "$T" --question 'v1 or v2?' --ack-timeout 600 --agent alice)
	at 80
	run -0 team coordinator
	assert_output '{"progress": [["'$T'", "'$P2'", 60, null, null]], "questions": [["'$T'", "'$Q'", null, 540, null]]}'
	run -0 team executor --agent alice
	assert_output '{"answers": [], "released": []}'
	at 90
	amp answer "$T" --question "$Q" --answer v2 --agent dave > /dev/null
	run -0 team coordinator
	assert_output '{"progress": [["'$T'", "'$P2'", 60, null, null]], "questions": []}'
	run -0 team executor --agent alice
	assert_output '{"answers": [["'$T'", "'$Q'", null, null, "v2"]], "released": []}'
	run -0 team executor --agent bob
	assert_output '{"answers": [], "released": []}'
	# the same as read from the status cache (--all leaves inbox.json out)
	# and as rebuilt from nothing
	run -0 amp inbox coordinator --all --json
	assert_equal "$(json_get 'json.dumps([d["progress"], d["questions"]])' <<< "$output")" \
		"$(amp inbox coordinator --json | json_get 'json.dumps([d["progress"], d["questions"]])')"
	rm .git/amp/inbox.json
	run -0 team coordinator --task "$T"
	assert_output '{"progress": [["'$T'", "'$P2'", 60, null, null]], "questions": []}'
	run -0 team coordinator --task T-2026-999
	assert_output '{"progress": [], "questions": []}'
	# approved, every message ACKed: finished, so out of inbox.json and
	# of the listing; --task still shows its reports (from its records)
	at 100
	AMP_AGENT=alice result
	amp ack "$R" --from coordinator > /dev/null
	request "$D" "$R"
	amp ack "$Q" --from reviewer > /dev/null
	verdict approved "$Q"
	amp ack "$V" --from coordinator > /dev/null
	[ "$(task_state)" = approved ]
	run -0 team coordinator
	assert_output '{"progress": [], "questions": []}'
	rm -f .git/amp/status.cache .git/amp/status.shards
	assert_equal "$(sed -n 2p .git/amp/inbox.json)" '{}'
	run -0 team coordinator --task "$T"
	assert_output '{"progress": [["'$T'", "'$P2'", 60, null, null]], "questions": []}'
	[ ! -e .git/amp/status.cache ]
}

# ---- share/doc/hub-gitolite.md step 8: inbox mode on gitolite3 -----------------

@test "gitolite3, hub-gitolite.md step 8 as written: with the hub's key in the repository's conf and allowed signers and a refs/amp-in/ rule, strict clones in inbox mode deliver a task through their inboxes; the hub's join commits under its key, each record keeps its author's signature, fsck is clean everywhere" {
	people_setup
	gitolite_setup
	HUB=$GL/repositories/amp.git
	# 8. the hub's key, made on the server as the hosting user ...
	ssh-keygen -q -t ed25519 -N '' -C amp-hub -f "$GL/amp-hub-key"
	# ... in gitolite-admin's allowed signers as system, and the
	# repository's conf: the inboxes' rule and the key for the join
	printf 'system %s\n' "$(cut -d' ' -f1,2 "$GL/amp-hub-key.pub")" >> ga/amp/allowed_signers
	sed -i "/^repo amp\$/a\\    RW+ refs/amp-in/ = @amp\\n    config amp.signingKey = $GL/amp-hub-key" ga/conf/gitolite.conf
	grep -qx '    RW+ refs/amp-in/ = @amp' ga/conf/gitolite.conf
	git -C ga commit -q -a -m "amp: inbox mode"
	git -C ga push -q origin master 2> /dev/null
	[ "$(git -C "$HUB" config amp.signingKey)" = "$GL/amp-hub-key" ]
	for p in $PEOPLE; do git -C "$p" config amp.syncPush inbox; done
	# a task delivered through the inboxes
	D=$(turn coordinator amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	id=$(git -C coordinator config amp.syncId)
	run -0 git -C "$HUB" for-each-ref --format='%(refname)' "refs/amp-in/$id/"
	assert_output "refs/amp-in/$id/messages"
	on executor amp sync > /dev/null
	run -0 on executor amp inbox executor --json
	assert_equal "$(json_get '[m["msg_id"] for m in d["messages"]]' <<< "$output")" "[\"$D\"]"
	turn executor amp ack "$D" --from executor > /dev/null
	# each clone's next push to its inbox replaces what the hub joined
	# (its records, re-committed by the hub): a forced push, hence RW+
	R=$(turn executor amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	turn coordinator amp ack "$R" --from coordinator > /dev/null
	on executor amp sync > /dev/null
	run -0 on executor amp status $T --json
	assert_equal "$(json_get 'd["state"]' <<< "$output")" submitted
	[ "$(records executor)" = "$(records "$HUB")" ]
	for r in "msg.$D" "ack.$D" "msg.$R" "ack.$R"; do
		[ "$(records "$HUB" | grep -cxF "$r")" = 1 ]
	done
	# the hub's join committed the records under its own key (system);
	# each record carries its author's own signature
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$GL/.gitolite/amp/allowed_signers" \
		log --format='%G? %an %GS' refs/amp/messages
	assert_line "G coordinator system"
	assert_line "G executor system"
	refute_line --regexp '^[^G]'
	run -0 on coordinator amp fsck --proofs
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\\.ack\\.$D\\.json: record signature by executor\$"
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\\.msg\\.$D\\.json: record signature by coordinator\$"
	for p in $PEOPLE; do
		on "$p" amp sync > /dev/null
		[ "$(git -C "$p" rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
		run -0 on "$p" amp fsck
		assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean\$"
	done
}
