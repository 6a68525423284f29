#!/usr/bin/env bats
# amp fsck and rewrite detection (issue 11, items 3 and 4): a history that
# edits, deletes or rolls back records is reported by amp fsck with its
# commit, and escalated once by amp watch (critical: the task is suspended
# until the admin resumes it); an honest SSOT, joined by amp sync with
# superseded records, passes both.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	if [[ $BATS_TEST_DESCRIPTION == joined* ]]; then
		clones_setup
	else
		make_ssot
	fi
}

teardown() {
	if [[ $BATS_TEST_DESCRIPTION == joined* ]]; then
		clones_teardown
	else
		fsck_teardown
	fi
}

# locked_then_watched: three rejected rounds lock the task (the lock
# escalation written with the third verdict), then amp watch --once (the
# tip it found intact goes to refs/amp-seen/messages); sets V and LOCK.
locked_then_watched() {
	dispatch_acked
	reject_rounds 3 || return 1
	LOCK=$(the_escalation hallucination_lock) || return 1
	at 1000
	amp watch --once > /dev/null
}

# tamper_commit: one ordinary commit on top of the messages ref that turns
# the verdict $V into "approved" and deletes the lock escalation $LOCK (a
# fast-forward any hub accepts); prints the commit.
tamper_commit() {
	local idx=$BATS_TEST_TMPDIR/tamper.idx v e blob tree commit
	v=$(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$V.json")
	e=$(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$LOCK.json")
	blob=$(git show "refs/amp/messages:$v" | sed 's/"rejected"/"approved"/' | git hash-object -w --stdin)
	GIT_INDEX_FILE=$idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$idx git update-index --cacheinfo "100644,$blob,$v"
	GIT_INDEX_FILE=$idx git update-index --force-remove "$e"
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	commit=$(git commit-tree "$tree" -p refs/amp/messages -m "fix the verdict")
	git update-ref refs/amp/messages "$commit"
	rm -f "$idx"
	echo "$commit"
}

# critical_unknowns: the critical `unknown` escalations of $T, one a line.
critical_unknowns() {
	amp status $T --json |
		json_get '"\n".join(e["msg_id"] for e in d["escalations"] if e["escalation_type"] == "unknown" and e["severity"] == "critical")'
}

@test "an honest SSOT with a lock and a resume passes amp fsck, and amp watch finds nothing rewritten" {
	locked_then_watched
	at 1100
	run -0 amp resume $T --from admin --reason "reviewed"
	run -0 amp fsck
	assert_output --regexp '^amp fsck: [0-9]+ commits checked: clean$'
	run -0 amp fsck --json
	assert_output --partial '"findings": []'
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
	[ "$(git rev-parse refs/amp-seen/messages)" = "$(git rev-parse refs/amp/messages)" ]
}

@test "a record whose file name is not UTF-8 (a fetch or a hand-made commit): amp fsck names it, exit 3" {
	local dir
	send_dispatch
	dir=$(dirname "$(record_path "$T" 000002.x.json)")
	echo '{"hello": "world"}' | plant "$dir/000002.msg.task_dispatch-$T-"$'\xff\xfe'".json"
	run -3 amp fsck
	assert_output --partial "$(git rev-parse --short=7 refs/amp/messages): $dir/000002.msg.task_dispatch-$T-"'\\xff\\xfe'".json: a file name that is not UTF-8"
	assert_output --partial "1 corrupt"
	run -3 amp fsck --json
	assert_output --partial '"file": "'"$dir"'/000002.msg.task_dispatch-'"$T"'-\\xff\\xfe.json"'
}

@test "a fast-forward that edits a verdict and deletes the lock: amp fsck names the commit and both files, exit 3" {
	locked_then_watched
	C=$(tamper_commit)
	run -3 amp fsck
	assert_line "amp fsck: ${C:0:7}: $(git ls-tree -r --name-only refs/amp/messages | grep -F ".msg.$V.json"): modifies a file: the SSOT only appends"
	assert_line --regexp "^amp fsck: ${C:0:7}: $(task_path "$T")/([0-9]{2}/[0-9]{2}/)?[0-9]{6}\.msg\.$LOCK\.json: deletes a file: the SSOT only appends$"
	run -3 amp fsck --json
	run -0 json_get '[(f["commit"], f["kind"], f["file"].split(".")[1:3], f["reason"]) for f in d["findings"] if f["commit"] == "'"$C"'"]' <<< "$output"
	assert_output "[[\"$C\", \"corrupt\", [\"msg\", \"$V\"], \"modifies a file: the SSOT only appends\"], [\"$C\", \"corrupt\", [\"msg\", \"$LOCK\"], \"deletes a file: the SSOT only appends\"]]"
}

@test "a fast-forward that edits a verdict and deletes the lock: amp watch escalates it once, critical, and the task is suspended until the admin resumes" {
	locked_then_watched
	SEEN=$(git rev-parse refs/amp/messages)
	at 1100
	run -0 amp resume $T --from admin --reason "reviewed"
	run -0 amp watch --once
	SEEN=$(git rev-parse refs/amp/messages)
	C=$(tamper_commit)
	at 1200
	run -0 amp watch --once
	assert_line --regexp "^escalated unknown $T .*\(escalation-$T-[0-9]+\)$"
	run -0 critical_unknowns
	[ "${#lines[@]}" -eq 1 ]
	E=${lines[0]}
	run -0 escalation_file "$E"
	assert_output --partial "amp watch cannot use ${SEEN:0:12}:$(task_path "$T")/"
	assert_output --partial "moved from $SEEN (kept as refs/amp-seen/messages) to $C"
	assert_output --partial ".msg.$V.json (changed)"
	assert_output --partial ".msg.$LOCK.json (removed)"
	# the evidence stays readable where the seen ref keeps it
	[ "$(git rev-parse refs/amp-seen/messages)" = "$SEEN" ]
	run -0 git show "refs/amp-seen/messages:$(git ls-tree -r --name-only "$SEEN" | grep -F ".msg.$LOCK.json")"
	assert_output --partial '"hallucination_lock"'
	run -0 task_state
	assert_output suspended
	# once: later passes are silent
	at 1300
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
	run -0 critical_unknowns
	[ "${#lines[@]}" -eq 1 ]
	run -3 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	at 1400
	run -0 amp resume $T --from admin --reason "history checked"
	run -0 task_state
	refute_output suspended
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
}

@test "a rollback with git update-ref: amp fsck reports the records rolled away, amp watch escalates on the rolled-back tip naming the lock" {
	locked_then_watched
	SEEN=$(git rev-parse refs/amp/messages)
	# the commit that wrote the third verdict with its lock is rolled away
	back=$(git log --format=%H --grep "locks the task" refs/amp/messages | head -1)
	git update-ref refs/amp/messages "$back~1"
	OLD=$(git rev-parse refs/amp/messages)
	run -0 task_state
	refute_output locked
	run -3 amp fsck
	assert_line --regexp "^amp fsck: ${SEEN:0:7}: $(task_path "$T")/([0-9]{2}/[0-9]{2}/)?[0-9]{6}\.msg\.$LOCK\.json: removed: refs/amp-seen/messages \(${SEEN:0:12}\) holds it, refs/amp/messages \(${OLD:0:12}\) does not: history was rewritten$"
	at 1100
	run -0 amp watch --once
	assert_line --regexp "^escalated unknown $T "
	# written on the rolled-back tip
	[ "$(git rev-parse refs/amp/messages~1)" = "$OLD" ]
	run -0 critical_unknowns
	[ "${#lines[@]}" -eq 1 ]
	run -0 escalation_file "${lines[0]}"
	assert_output --partial ".msg.$LOCK.json (removed)"
	assert_output --partial ".msg.$V.json (removed)"
	assert_output --partial "to $OLD"
	[ "$(git rev-parse refs/amp-seen/messages)" = "$SEEN" ]
	run -0 task_state
	assert_output suspended
	at 1200
	run -0 amp watch --once
	refute_output --partial "escalated unknown"
	run -0 amp resume $T --from admin --reason "rollback reviewed"
	run -0 task_state
	refute_output suspended
}

@test "joined: a history rewritten and pushed with force to the hub, fetched with git fetch -f: amp fsck and amp watch report it; a real amp sync join with superseded records does not" {
	dispatched_on_both
	at 400
	run -0 on a amp watch --once
	at 460
	run -0 on b amp watch --once
	# both clones escalated one ACK timeout: the join sets one aside
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":1,'
	run -0 on a amp sync
	for c in a b; do
		run -0 on $c amp fsck
		assert_output --regexp '^amp fsck: [0-9]+ commits checked: clean$'
		at 500
		run -0 on $c amp watch --once
		refute_output --partial "escalated unknown"
		[ "$(git -C $c rev-parse refs/amp-seen/messages)" = "$(git -C $c rev-parse refs/amp/messages)" ]
	done
	run -0 amp fsck --repo "$HUB"
	# the hub's history rewritten without the dispatch's ACK timeout
	SEEN=$(git -C a rev-parse refs/amp/messages)
	git -C a update-ref refs/amp/messages refs/amp/messages~3
	git -C a push -q -f "$HUB" refs/amp/messages:refs/amp/messages 2> /dev/null ||
		git -C "$HUB" update-ref refs/amp/messages "$(git -C a rev-parse refs/amp/messages)"
	git -C a update-ref refs/amp/messages "$SEEN"
	git -C b fetch -q -f "$HUB" refs/amp/messages:refs/amp/messages
	NEW=$(git -C b rev-parse refs/amp/messages)
	run -3 on b amp fsck
	assert_output --regexp "refs/amp/messages \(${NEW:0:12}\) does not: history was rewritten"
	at 600
	run -0 on b amp watch --once
	assert_line --regexp "^escalated unknown $T "
	run -0 on b critical_unknowns
	[ "${#lines[@]}" -eq 1 ]
	run -0 on b task_state
	assert_output suspended
}

@test "a damaged object (its content no longer hashes to its name) is corrupt to amp fsck, which re-hashes every record; the other commands trust the name, as git does" {
	send_dispatch
	local path oid obj
	path=$(git ls-tree -r --name-only refs/amp/messages tasks | grep "\.msg\.$D\.json$")
	oid=$(git rev-parse "refs/amp/messages:$path")
	loosen_objects
	obj=.git/objects/${oid:0:2}/${oid:2}
	cp "$obj" "$BATS_TEST_TMPDIR/good"
	git cat-file blob "$oid" | sed 's/"from": *"coordinator"/"from":"admin"/' > "$BATS_TEST_TMPDIR/bad.json"
	! cmp -s "$BATS_TEST_TMPDIR/bad.json" <(git cat-file blob "$oid")
	python3 -c '
import sys, zlib
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(zlib.compress(b"blob %d\0" % len(d) + d))' "$BATS_TEST_TMPDIR/bad.json" "$BATS_TEST_TMPDIR/bad"
	chmod u+w "$obj"
	cp "$BATS_TEST_TMPDIR/bad" "$obj"
	run -3 amp fsck
	assert_output --partial "$path: cannot read blob $oid: object hash mismatch"
	# a read trusts the name (git cat-file does too): the record reads as stored
	run -0 amp status "$T" --json
	[ "$(json_get "len(d['unreadable'])" <<< "$output")" = 0 ]
	cp "$BATS_TEST_TMPDIR/good" "$obj"
	run -0 amp fsck
}

@test "a merge made by hand: amp fsck walks the first parents from the root and names the merge; amp log lists what it brought, as the merge's" {
	locked_then_watched
	C=$(tamper_commit)
	tip=$(git rev-parse refs/amp/messages)
	# a side line adding an ACK of the dispatch, merged into the SSOT
	path=$(next_path $T "$D" ack)
	blob=$(printf '{"protocol_version": "AMP/1.0", "type": "ack", "ack_for": "%s", "task_id": "%s", "from": "reviewer", "to": "coordinator", "timestamp": "%s"}\n' \
		"$D" $T "$AMP_NOW" | git hash-object -w --stdin)
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/m.idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/m.idx git update-index --add --cacheinfo "100644,$blob,$path"
	tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/m.idx git write-tree)
	side=$(git commit-tree "$tree" -p "$tip" -m "side")
	M=$(git commit-tree "$tree" -p "$tip" -p "$side" -m "merge by hand")
	git update-ref refs/amp/messages "$M"
	run -3 amp fsck --json
	# root first: the tampering commit's findings before the merge's; the
	# side commit is not on the main line
	run -0 json_get '[(f["commit"][:7], f["reason"].split(":")[0]) for f in d["findings"] if f["commit"] in ("'"$C"'", "'"$M"'")]' <<< "$output"
	assert_output "[[\"${C:0:7}\", \"modifies a file\"], [\"${C:0:7}\", \"deletes a file\"], [\"${M:0:7}\", \"a merge commit\"]]"
	run -0 amp log --json
	run -0 $PY -c 'import json, sys
print(json.dumps([[r["commit"], r["kind"]] for r in map(json.loads, sys.stdin) if r["path"] == sys.argv[1]]))' "$path" <<< "$output"
	assert_output "[[\"$M\", \"ack\"]]"
}
