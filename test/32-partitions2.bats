#!/usr/bin/env bats
# Partitions, byte for byte (issue 32, item 5): the scenario of
# 32-partitions.bats (partition.bash), rejoined in three orders, must end
# with one SSOT: the tree of refs/amp/messages (every record's path and
# bytes, the markers and the escalations of what was set aside included)
# is the same whatever the order, on the hub and on every clone, whether
# B's records come back through B's clones or through B's hub joined into
# A's.  The commits differ by order (an append-only history records who
# joined when), their trees do not.

bats_require_minimum_version 1.5.0

load partition # setup, teardown and the scenario

# hub_join: B's hub joined into A's, as a clone's inbox is: its history
# pushed to the hub's inbox for B's hub, which the hub's hook joins.
hub_join() {
	git -C "$HUB_BASE/b-hub.git" push -q "$HUB_BASE/hub.git" \
		'refs/amp/messages:refs/amp-in/b-hub/messages' 2> /dev/null
}

# rejoin_each STEP...: B's clones back on A's hub, then each STEP (a
# clone's sync, or "hub": hub_join) twice round.
rejoin_each() {
	local s
	at 200
	on b1 git remote set-url origin "$HUB_BASE/hub.git"
	on b2 git remote set-url origin "$HUB_BASE/hub.git"
	for s in "$@" "$@"; do
		if [ "$s" = hub ]; then hub_join; else on "$s" amp sync > /dev/null || return 1; fi
	done
}

# one_ssot RUN: every clone of RUN holds the hub's tree of the messages
# ref, which goes to RUN/tree; the hub and every clone pass amp fsck.
one_ssot() {
	local c tree
	tree=$(git -C "$1/hub.git" rev-parse 'refs/amp/messages^{tree}')
	for c in a1 a2 b1 b2; do
		[ "$(git -C "$1/$c" rev-parse 'refs/amp/messages^{tree}')" = "$tree" ]
		(cd "$1/$c" && amp fsck > /dev/null)
	done
	amp fsck --repo "$1/hub.git" > /dev/null
	echo "$tree" > "$1/tree"
	git -C "$1/hub.git" ls-tree -r refs/amp/messages > "$1/files"
	git -C "$1/hub.git" rev-parse 'refs/amp/errors^{tree}' > "$1/errors"
}

# same_trees RUN...: the runs' trees are one, and the files listing too
# (what differs, when one does).
same_trees() {
	local first=$1 n
	shift
	for n in "$@"; do
		diff "$first/files" "$n/files"
		cmp "$first/tree" "$n/tree"
	done
}

@test "partitioned groups rejoined through one hub in three orders end with one tree of refs/amp/messages, byte for byte: the same record paths, markers and escalations on the hub and every clone, and one tree of refs/amp/errors" {
	local order n=0
	for order in "b1 b2 a1 a2" "a1 b2 a2 b1" "b2 a2 b1 a1"; do
		n=$((n + 1))
		before_partition "$BATS_TEST_TMPDIR/run$n"
		partitioned
		# shellcheck disable=SC2086
		rejoin $order
		one_ssot "$HUB_BASE"
		cd "$BATS_TEST_TMPDIR"
	done
	same_trees "$BATS_TEST_TMPDIR/run1" "$BATS_TEST_TMPDIR/run2" "$BATS_TEST_TMPDIR/run3"
	# the errors ref, the log of what was set aside, too: one source
	cmp "$BATS_TEST_TMPDIR/run1/errors" "$BATS_TEST_TMPDIR/run2/errors"
	cmp "$BATS_TEST_TMPDIR/run1/errors" "$BATS_TEST_TMPDIR/run3/errors"
	# each loser escalated once, right after its marker and record
	run -0 git -C "$BATS_TEST_TMPDIR/run1/hub.git" ls-tree -r --name-only refs/amp/messages
	assert_output --regexp "T-2026-046/00/00/000003\.ctl\.superseded-[0-9a-f]{40}\.json
[^
]*T-2026-046/00/00/000004\.ctl\.claim-[0-9]+\.json
[^
]*T-2026-046/00/00/000005\.msg\.escalation-T-2026-046-[0-9]+\.json
[^
]*T-2026-046/00/00/000006\.ctl\.superseded-[0-9a-f]{40}\.json
[^
]*T-2026-046/00/00/000007\.ctl\.heartbeat-[0-9]+\.json
[^
]*T-2026-046/00/00/000008\.msg\.escalation-T-2026-046-[0-9]+\.json"
}

@test "two hubs that both took writes, B's joined into A's by the hub's join at three points among the clones' syncs, end with the tree one hub gives, byte for byte, on the hub and every clone" {
	local order n=0
	for order in "hub b1 b2 a1 a2" "b2 hub a1 b1 a2" "a2 b1 hub b2 a1" "b1 b2 a1 a2"; do
		n=$((n + 1))
		before_partition "$BATS_TEST_TMPDIR/run$n"
		partitioned
		# shellcheck disable=SC2086
		rejoin_each $order
		one_ssot "$HUB_BASE"
		cd "$BATS_TEST_TMPDIR"
	done
	# the last run: no hub's join, B's clones alone (one hub)
	same_trees "$BATS_TEST_TMPDIR/run4" "$BATS_TEST_TMPDIR/run1" "$BATS_TEST_TMPDIR/run2" \
		"$BATS_TEST_TMPDIR/run3"
}

@test "strict mode: a record another author signed, whose id the hub holds with other content, is never renamed by a clone's join: it is set aside byte for byte with its signature, which ssh-keygen verifies for its role, and so is the ACK that names it; its author rejoins with nothing left to deliver" {
	local r X ours theirs path
	load signing
	unset AMP_NOW # strict mode refuses it
	K=$BATS_TEST_TMPDIR/keys
	mkdir -p "$K"
	role_keys
	role_signers
	HUB_BASE=$BATS_TEST_TMPDIR
	cd "$HUB_BASE"
	strict_hub hub.git
	for r in adm:admin co:coordinator co2:coordinator exe:executor; do
		strict_clone hub.git "${r%%:*}" "${r#*:}"
	done
	on adm amp init > /dev/null
	on adm amp sync > /dev/null
	for r in co co2 exe; do on $r amp sync > /dev/null; done
	# partitioned: co2 and exe through a hub of their own
	git clone -q --bare hub.git b-hub.git 2> /dev/null
	git -C b-hub.git fetch -q origin 'refs/amp/*:refs/amp/*'
	strict_hub b-hub.git # a bare repository already: initialised again
	on co2 git remote set-url origin "$HUB_BASE/b-hub.git"
	on exe git remote set-url origin "$HUB_BASE/b-hub.git"
	# the same msg_id on each side, other content: co's on the hub, co2's
	# (the same id and time, another description) on B's hub
	X=$(on co amp send task_dispatch --task T-2026-046 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	on co amp sync > /dev/null
	path=$(git -C hub.git ls-tree -r --name-only refs/amp/messages | grep "\.msg\.$X\.json$")
	git -C hub.git show "refs/amp/messages:$path" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d["payload"]["description"]="the other side"; print(json.dumps(d))' > theirs.json
	run -0 on co2 amp send --envelope "$HUB_BASE/theirs.json"
	assert_output "$X"
	on co2 amp sync > /dev/null
	on exe amp sync > /dev/null
	# the executor acknowledges co2's dispatch, the ACK naming it
	on exe amp ack "$X" --from executor > /dev/null
	on exe amp sync > /dev/null
	theirs=$(git -C b-hub.git ls-tree -r refs/amp/messages | grep "\.msg\.$X\.json$" | awk '{print $3}')
	ours=$(git -C hub.git rev-parse "refs/amp/messages:$path")
	[ "$theirs" != "$ours" ]
	# the executor's clone rejoins first, with the coordinator's record
	on exe git remote set-url origin "$HUB_BASE/hub.git"
	run -0 on exe amp sync
	# co2's bytes are on the hub, set aside, with co2's signature
	run -0 git -C hub.git ls-tree -r refs/amp/messages
	assert_output --regexp "$ours	[^	]*/000001\.msg\.$X\.json"
	assert_output --regexp "blob [0-9a-f]{40}	[^	]*/000002\.ctl\.superseded-$theirs\.json
[^
]*blob $theirs	[^	]*/000003\.msg\.$X\.json
[^
]*/000003\.msg\.$X\.json\.sig"
	path=$(git -C hub.git ls-tree -r --name-only refs/amp/messages | grep "/000003\.msg\.$X\.json$")
	git -C hub.git show "refs/amp/messages:$path.sig" > rec.sig
	git -C hub.git show "refs/amp/messages:$path" |
		ssh-keygen -Y verify -f "$K/signers" -I coordinator -n amp-record -s rec.sig
	# in force: co's dispatch; co2's set aside, and the ACK naming it
	# (the executor's key may not write as system: no escalation)
	run -0 on exe amp status T-2026-046 --json
	run -0 json_get '[[s["kind"], s["id"], s["reason"]] for s in d["superseded"]] + [len(d["escalations"])]' <<< "$output"
	assert_output "[[\"message\", \"$X\", \"the remote holds another record of id $X, and renamed, this one would lose its author's signature\"], [\"ack\", \"$X\", \"it names $X, which this join set aside (the remote holds another record of that id)\"], 0]"
	# logged on the executor's errors ref
	run -0 on exe amp errors --json
	assert_output --partial "the remote holds another record of id $X, and renamed"
	# its author rejoins: nothing more to deliver, one SSOT
	on co2 git remote set-url origin "$HUB_BASE/hub.git"
	run -0 on co2 amp sync
	for r in co co2 exe; do
		on $r amp sync > /dev/null
		[ "$(git -C $r rev-parse refs/amp/messages)" = "$(git -C hub.git rev-parse refs/amp/messages)" ]
		(cd $r && amp fsck > /dev/null)
	done
	amp fsck --repo hub.git > /dev/null
	[ "$(git -C hub.git ls-tree -r --name-only refs/amp/messages | grep -c "\.msg\.$X\.json$")" = 2 ]
}
