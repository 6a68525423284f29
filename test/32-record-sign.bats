#!/usr/bin/env bats
# Authorship on the record (issue 32, item 1): in strict mode every record
# amp writes carries its author's SSH signature over its own bytes, beside
# it ("<record>.sig", namespace amp-record), so any commit may carry any
# author's records: the hub's join in inbox mode, a replay after a hub is
# restored from a backup.  Records whose signature is missing, forged or
# by a key the role does not grant are refused by the hook, escalated by
# amp sync and reported by amp fsck; old SSOTs stay readable and amp fsck
# --proofs says which proof each record carries.  Real hubs: bare
# repositories with amp's server hook, served by git daemon or by path,
# and one with no hook at all; throw-away keys made with ssh-keygen.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load signing

setup() {
	signing_setup
	role_signers
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	stop_servers
	fsck_all_repos
}

# verify_records GITDIR: every record of the messages ref has a signature
# beside it that ssh-keygen itself (not amp) verifies for the record's
# "from" role; prints "<path> <from>" for each.
verify_records() {
	local path from
	for path in $(git -C "$1" ls-tree -r --name-only refs/amp/messages | grep '^tasks/.*\.json$'); do
		from=$(git -C "$1" show "refs/amp/messages:$path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["from"])')
		git -C "$1" show "refs/amp/messages:$path.sig" > "$BATS_TEST_TMPDIR/rec.sig" || return 1
		git -C "$1" show "refs/amp/messages:$path" |
			ssh-keygen -Y verify -f "$K/signers" -I "$from" -n amp-record -s "$BATS_TEST_TMPDIR/rec.sig" > /dev/null 2>&1 ||
			{ echo "$path: no signature of $from verifies" >&2; return 1; }
		echo "$path $from"
	done
}

@test "strict mode and inbox mode together: clones with the admin's, the coordinator's and the executor's keys write through one hub over git daemon; the hub's join, signed by the hub's key, keeps every record's own signature, which ssh-keygen verifies for its role" {
	HUB_BASE=$BATS_TEST_TMPDIR
	strict_hub "$BATS_TEST_TMPDIR/hub.git"
	start_daemon
	strict_clone "$URL" adm admin
	strict_clone "$URL" co coordinator
	strict_clone "$URL" exe executor
	for c in adm co exe; do git -C $c config amp.syncPush inbox; done
	run -0 on adm amp init
	run -0 on adm amp sync
	run -0 on co amp sync
	D=$(on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 on co amp sync
	run -0 on exe amp sync
	run -0 on exe amp ack "$D" --from executor
	run -0 on exe amp heartbeat $T --from executor
	run -0 on exe amp sync --json
	assert_output --regexp '"push":true'
	id=$(on exe git config amp.syncId)
	run -0 git -C hub.git for-each-ref --format='%(refname)' "refs/amp-in/$id/"
	assert_output "refs/amp-in/$id/messages"
	# the coordinator sees the executor's records, joined by the hub
	run -0 on co amp sync
	run -0 on co amp status $T --json
	assert_output --partial '"acked_at"'
	# every record on the hub: its own signature, for its own role
	run -0 verify_records hub.git
	assert_line --regexp "^tasks/.*\.msg\.$D\.json coordinator$"
	assert_line --regexp "^tasks/.*\.ack\.$D\.json executor$"
	assert_line --regexp "^tasks/.*\.ctl\.heartbeat-.*\.json executor$"
	# the hub's join committed the executor's records under its own key
	run -0 git -C hub.git -c gpg.ssh.allowedSignersFile="$K/signers" log --format='%an %GS' refs/amp/messages
	assert_line "executor system"
	run -0 git -C hub.git rev-list --merges --count refs/amp/messages
	assert_output 0
	# and every reader agrees: the hub's fsck, each clone's, the watcher
	run -0 amp fsck --repo hub.git
	for c in co exe; do
		run -0 on $c amp sync
		[ "$(git -C $c rev-parse refs/amp/messages)" = "$(git -C hub.git rev-parse refs/amp/messages)" ]
		run -0 on $c amp fsck
	done
	run -0 on co amp fsck --proofs
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\.ack\.$D\.json: record signature by executor$"
	assert_line "amp fsck: proofs of 3 records: 3 record signature, 0 commit signature only, 0 none"
	git -C co config amp.signingKey "$K/system"
	run -0 on co amp watch --once
	refute_output --partial permission_denied
}

@test "a hub restored from an old backup: the coordinator's clone, holding the executor's ACK the hub lacks, replays it with its own commit signature but never re-signs the record; the hub takes it with its original author verified, and the coordinator's new dispatch at once" {
	HUB=$BATS_TEST_TMPDIR/hub.git
	strict_hub "$HUB"
	strict_clone "$HUB" adm admin
	strict_clone "$HUB" co coordinator
	strict_clone "$HUB" exe executor
	strict_clone "$HUB" sy system
	on adm amp init > /dev/null
	on adm amp sync > /dev/null
	on co amp sync > /dev/null
	D=$(on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on co amp sync > /dev/null
	# the backup, before the executor's ACK
	cp -a "$HUB" backup.git
	on exe amp sync > /dev/null
	on exe amp ack "$D" --from executor > /dev/null
	run -0 on exe amp sync
	run -0 on co amp sync
	ack=$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep "\.ack\.$D\.json$")
	blob=$(git -C "$HUB" rev-parse "refs/amp/messages:$ack")
	sig=$(git -C "$HUB" rev-parse -q --verify "refs/amp/messages:$ack.sig" || true)
	# the hub is lost and restored from the backup; the executor's
	# clone is gone; the system writes to the restored hub first
	rm -rf "$HUB" exe
	cp -a backup.git "$HUB"
	on sy amp sync > /dev/null
	run -0 on sy amp escalate $T --from system --type unknown --severity info --description "after the restore"
	run -0 on sy amp sync
	# the coordinator's clone replays the ACK and delivers its own new
	# dispatch in the same sync
	D2=$(on co amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run -0 on co amp sync
	[ "$(git -C co rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	ack2=$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep "\.ack\.$D\.json$")
	[ "$(git -C "$HUB" rev-parse "refs/amp/messages:$ack2")" = "$blob" ]
	[ -n "$sig" ] && [ "$(git -C "$HUB" rev-parse "refs/amp/messages:$ack2.sig")" = "$sig" ]
	git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$D2\.json$"
	# the original author, verified by ssh-keygen; the commit that
	# carries it is the coordinator's
	run -0 verify_records "$HUB"
	assert_line "$ack2 executor"
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" log --format='%an %GS' refs/amp/messages
	assert_line "executor coordinator"
	# every reader: a fresh clone's sync verifies it, fsck names its proof
	strict_clone "$HUB" fresh system
	run -0 --separate-stderr on fresh amp sync
	[ -z "$stderr" ]
	run -0 on fresh amp fsck --proofs
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: $ack2: record signature by executor$"
	run -0 on fresh amp watch --once
	refute_output --partial permission_denied
}

# forge PARENT PATH RECORD SIGKEY COMMITKEY [AUTHOR]: a commit on PARENT adding
# RECORD (a file) at PATH, with a record signature made by $K/SIGKEY
# ("-": none; "junk": not a signature), signed by $K/COMMITKEY and written
# as AUTHOR (executor), made with git alone; prints its id.
forge() {
	local idx=$BATS_TEST_TMPDIR/forge.idx blob tree
	blob=$(git hash-object -w "$3")
	GIT_INDEX_FILE=$idx git read-tree "$1"
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$blob,$2"
	case $4 in
	-) ;;
	junk) GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(echo junk | git hash-object -w --stdin),$2.sig" ;;
	*) GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(ssh-keygen -q -Y sign -n amp-record -f "$K/$4" < "$3" | git hash-object -w --stdin),$2.sig" ;;
	esac
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	rm -f "$idx"
	GIT_AUTHOR_NAME=${6:-executor} GIT_AUTHOR_EMAIL=${6:-executor}@amp.invalid \
		git -c gpg.format=ssh -c user.signingkey="$K/$5" commit-tree -S "$tree" -p "$1" -m "forged"
}

@test "a record whose signature is forged, made by a key its role does not grant, or missing where the commit is not its author's, is refused by the strict hub's hook, escalated by amp sync from a hub without a hook and by amp watch, and reported by amp fsck; amp ack refuses to act on such a message, and amp send with a key its role does not grant writes nothing" {
	HUB=$BATS_TEST_TMPDIR/hub.git
	strict_hub "$HUB"
	git init -q --bare plain.git # no hook: GitHub, GitLab
	strict_clone "$HUB" exe admin
	on exe amp init > /dev/null
	git -C exe config amp.signingKey "$K/coordinator"
	D=$(on exe amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	git -C exe config amp.signingKey "$K/executor"
	on exe amp sync > /dev/null
	git -C exe push -q "$BATS_TEST_TMPDIR/plain.git" refs/amp/messages refs/amp/errors
	strict_clone "$BATS_TEST_TMPDIR/plain.git" w system
	on w amp sync > /dev/null
	cd exe
	# amp send with a key its role does not grant: nothing written
	tip=$(git rev-parse refs/amp/messages)
	run -3 amp heartbeat $T --from reviewer
	assert_output --partial "may not write as reviewer"
	[ "$(git rev-parse refs/amp/messages)" = "$tip" ]
	# the directory of records 000090..000099 of $T
	dir=$(dirname "$(record_path "$T" 000090.ctl.x.json)")
	now=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)
	for n in 1 2 3; do
		printf '{"protocol_version": "AMP/1.0", "type": "heartbeat", "task_id": "%s", "from": "executor", "timestamp": "%s", "note": "%s"}\n' \
			"$T" "$now" "$n" > ../hb$n.json
	done
	# 1: signed by the reviewer's key; 2: not a signature; 3: none, in a
	# commit the coordinator's key signed (not the record's author)
	f1=$(forge "$tip" "$dir/000090.ctl.heartbeat-f1.json" ../hb1.json reviewer executor)
	f2=$(forge "$tip" "$dir/000091.ctl.heartbeat-f2.json" ../hb2.json junk executor)
	f3=$(forge "$tip" "$dir/000092.ctl.heartbeat-f3.json" ../hb3.json - coordinator)
	# the hook refuses each, naming the record signature
	run -1 git push origin "$f1:refs/amp/messages"
	assert_output --partial "it is from executor, but its record signature is by reviewer, who may not write as executor"
	run -1 git push origin "$f2:refs/amp/messages"
	assert_output --partial "$dir/000091.ctl.heartbeat-f2.json: its record signature: "
	run -1 git push origin "$f3:refs/amp/messages"
	assert_output --partial "written as executor, but its key may not write as executor"
	# a signature whose record the commit does not add, one over 8 KiB
	idx=$BATS_TEST_TMPDIR/orphan.idx
	GIT_INDEX_FILE=$idx git read-tree "$tip"
	disp=$(git ls-tree -r --name-only "$tip" | grep '\.msg\..*\.json$')
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(echo x | git hash-object -w --stdin),$dir/000099.msg.none.json.sig"
	orphan=$(GIT_AUTHOR_NAME=executor GIT_AUTHOR_EMAIL=executor@amp.invalid git -c gpg.format=ssh -c user.signingkey="$K/executor" commit-tree -S "$(GIT_INDEX_FILE=$idx git write-tree)" -p "$tip" -m orphan)
	rm -f "$idx"
	run -1 git push origin "$orphan:refs/amp/messages"
	assert_output --partial "$dir/000099.msg.none.json.sig: a record signature (.sig) whose record this commit does not add"
	head -c 9000 /dev/zero | tr '\0' x > ../big.sig
	f4=$(forge "$tip" "$dir/000093.ctl.heartbeat-f4.json" ../hb1.json - executor)
	GIT_INDEX_FILE=$idx git read-tree "$f4"
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(git hash-object -w ../big.sig),$dir/000093.ctl.heartbeat-f4.json.sig"
	big=$(GIT_AUTHOR_NAME=executor GIT_AUTHOR_EMAIL=executor@amp.invalid git -c gpg.format=ssh -c user.signingkey="$K/executor" commit-tree -S "$(GIT_INDEX_FILE=$idx git write-tree)" -p "$tip" -m big)
	rm -f "$idx"
	run -1 git push origin "$big:refs/amp/messages"
	assert_output --partial "heartbeat-f4.json.sig: a record signature larger than 8192 bytes"
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$tip" ]
	# amp ack acts on no message whose record signature fails: a dispatch
	# "from the coordinator" signed by the executor's key
	FD=task_dispatch-$T-$((${D##*-} + 1))
	git show "$tip:$disp" | python3 -c 'import json,sys; d=json.load(sys.stdin); d["msg_id"]=sys.argv[1]; print(json.dumps(d))' "$FD" > ../fd.json
	fd=$(forge "$tip" "$dir/000094.msg.$FD.json" ../fd.json executor coordinator coordinator)
	git update-ref refs/amp/messages "$fd"
	run -3 amp ack "$FD" --from executor
	assert_output --partial "$FD is not proven in strict mode: $dir/000094.msg.$FD.json: it is from coordinator, but its record signature is by executor, who may not write as coordinator"
	[ "$(git rev-parse refs/amp/messages)" = "$fd" ]
	git update-ref refs/amp/messages "$tip"
	# a hub without a hook takes them; the next clone's amp sync
	# escalates each, and amp fsck reports each
	c1=$(forge "$tip" "$dir/000090.ctl.heartbeat-f1.json" ../hb1.json reviewer executor)
	c2=$(forge "$c1" "$dir/000091.ctl.heartbeat-f2.json" ../hb2.json junk executor)
	c3=$(forge "$c2" "$dir/000092.ctl.heartbeat-f3.json" ../hb3.json - coordinator)
	git push -q "$BATS_TEST_TMPDIR/plain.git" "$c3:refs/amp/messages"
	cd ..
	# amp watch on a clone that does not check what it fetches (it pushes nothing back)
	strict_clone "$BATS_TEST_TMPDIR/plain.git" w2 system
	git -C w2 config amp.syncVerify false
	run -0 --separate-stderr on w2 amp sync
	[ -z "$stderr" ]
	run -0 on w2 amp watch --once
	assert_line --regexp "^escalated permission_denied $T .*heartbeat-f1"
	assert_line --regexp "^escalated permission_denied $T .*heartbeat-f2"
	run -0 --separate-stderr on w amp sync
	assert_equal "${#stderr_lines[@]}" 3
	assert_regex "${stderr_lines[0]}" "^amp sync: warning: $dir/000090\.ctl\.heartbeat-f1\.json: .*its record signature is by reviewer, who may not write as executor.*escalated escalation-"
	assert_regex "${stderr_lines[1]}" "^amp sync: warning: $dir/000091\.ctl\.heartbeat-f2\.json: .*its record signature: .*escalated escalation-"
	assert_regex "${stderr_lines[2]}" "^amp sync: warning: $dir/000092\.ctl\.heartbeat-f3\.json: written as executor, but its key may not write as executor.*escalated escalation-"
	run -0 on w amp status $T --json
	run -0 json_get '[e["escalation_type"] for e in d["escalations"]]' <<< "$output"
	assert_output '["permission_denied", "permission_denied", "permission_denied"]'
	run -3 on w amp fsck
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: rule: .*its record signature is by reviewer, who may not write as executor"
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: rule: $dir/000091\.ctl\.heartbeat-f2\.json: its record signature: "
	run -3 on w amp fsck --proofs --json
	run -0 json_get '[(p["file"].split("/")[-1], p["proof"]) for p in d["proofs"] if "heartbeat-f" in p["file"]]' <<< "$output"
	assert_output '[["000090.ctl.heartbeat-f1.json", "none"], ["000091.ctl.heartbeat-f2.json", "none"], ["000092.ctl.heartbeat-f3.json", "none"]]'
}

@test "an old SSOT stays readable: records with no signature, with a commit signature only, and with their own signature side by side; amp fsck --proofs says which proof each carries, in words and in JSON" {
	cd "$SSOT"
	amp init > /dev/null
	D1=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	git config amp.allowedSigners "$K/signers"
	as coordinator # a key, no strict mode: the commit is signed, not the record
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	git ls-tree -r --name-only refs/amp/messages > ../before
	run ! grep '\.sig$' ../before
	git config amp.requireSigned true
	as admin
	amp init > /dev/null
	as executor
	run -0 amp ack "$D1" --from executor
	run -0 git ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "^tasks/.*\.ack\.$D1\.json\.sig$"
	# readable: status, inbox, fsck
	run -0 amp status $T --json
	assert_output --partial '"acked_at"'
	run -0 amp inbox executor --json
	assert_output --partial "$D2"
	run -0 amp fsck
	assert_output --regexp "^amp fsck: [0-9]+ commits checked: clean$"
	run -0 amp fsck --proofs
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\.msg\.$D1\.json: no proof of its author: it has no record signature \(\.sig\); its commit: it is not signed$"
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\.msg\.$D2\.json: commit signature only, by coordinator$"
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: tasks/.*\.ack\.$D1\.json: record signature by executor$"
	assert_line "amp fsck: proofs of 3 records: 1 record signature, 1 commit signature only, 1 none"
	run -0 amp fsck --proofs --json
	run -0 json_get '[d["findings"], d["counts"], [(p["from"], p["proof"], p.get("principal")) for p in d["proofs"]]]' <<< "$output"
	assert_output '[[], {"record": 1, "commit": 1, "none": 1}, [["coordinator", "none", null], ["coordinator", "commit", "coordinator"], ["executor", "record", "executor"]]]'
	# without amp.allowedSigners there is nothing to check a key against
	git config --unset amp.requireSigned
	git config --unset amp.allowedSigners
	run -2 amp fsck --proofs
	assert_output --partial "no git config amp.allowedSigners"
}
