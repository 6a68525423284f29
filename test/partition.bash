# partition.bash: the partition scenario of test/32-partitions.bats and
# test/32-partitions2.bats (issue 32, item 5): a hub, four clones, two
# groups; the suites' setup and teardown.
# shellcheck shell=bash

load helpers
load conversation
load enforcer
load hub

setup() {
	make_repo # the work repository the dispatches name
	write_payloads
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	git config --global init.defaultBranch main
}

teardown() {
	fsck_all_repos
}

C=T-2026-046 # the task both groups claim

# before_partition DIR: in DIR, the hub, its four clones and what they all
# hold: task $T in review (the reviewer ACKed the review_request: sets D,
# R, Q), task $C dispatched to the executors, tasks 101 and 102 dispatched.
before_partition() {
	HUB_BASE=$1
	mkdir -p "$HUB_BASE"
	git init -q --bare "$HUB_BASE/hub.git"
	amp hook install --server --repo "$HUB_BASE/hub.git" > /dev/null
	local c
	for c in a1 a2 b1 b2; do git clone -q "$HUB_BASE/hub.git" "$HUB_BASE/$c" 2> /dev/null; done
	cd "$HUB_BASE/a1" || return 1
	at 0
	amp init > /dev/null
	dispatch_acked
	at 10
	review_round 0 || return 1
	at 20
	amp send task_dispatch --task $C --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp send task_dispatch --task T-2026-101 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp send task_dispatch --task T-2026-102 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	cd "$BATS_TEST_TMPDIR" || return 1
	for c in a1 a2 b1 b2; do on "$c" amp sync > /dev/null || return 1; done
}

# partitioned: B's own hub, a copy of the hub, and each group writing,
# syncing within its group; b1 writes one record more after its last sync.
partitioned() {
	git clone -q --bare "$HUB_BASE/hub.git" "$HUB_BASE/b-hub.git" 2> /dev/null
	git -C "$HUB_BASE/b-hub.git" fetch -q origin 'refs/amp/*:refs/amp/*'
	amp hook install --server --repo "$HUB_BASE/b-hub.git" > /dev/null
	on b1 git remote set-url origin "$HUB_BASE/b-hub.git"
	on b2 git remote set-url origin "$HUB_BASE/b-hub.git"
	# group A
	at 100
	on a1 amp claim $C --agent alice --from executor > /dev/null
	on a1 amp sync > /dev/null
	at 101
	# shellcheck disable=SC2034 # VA and VB: for the suites' checks
	VA=$(on a2 amp verdict "$T" --decision approved --confidence 0.9 --from reviewer)
	on a2 amp sync > /dev/null
	at 102
	on a1 amp depend T-2026-101 --on T-2026-102 --from coordinator > /dev/null
	on a1 amp send task_dispatch --task T-2026-201 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	on a1 amp sync > /dev/null
	on a2 amp sync > /dev/null
	# group B, the same things the other way
	at 110
	on b1 amp claim $C --agent bob --from executor > /dev/null
	on b1 amp sync > /dev/null
	at 111
	VB=$(on b2 amp verdict "$T" --decision approved --confidence 0.95 --from reviewer)
	at 112
	on b2 amp ack "$VB" --from coordinator > /dev/null
	on b2 amp depend T-2026-102 --on T-2026-101 --from coordinator > /dev/null
	on b2 amp send task_dispatch --task T-2026-202 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	on b2 amp sync > /dev/null
	on b1 amp sync > /dev/null
	at 113
	on b1 amp heartbeat $C --agent bob --from executor > /dev/null
}

# every_record: the records of every clone, before the rejoin, sorted.
every_record() {
	local c
	for c in a1 a2 b1 b2; do records "$HUB_BASE/$c"; done | sort -u
}

# rejoin ORDER...: B's clones back on the hub; each clone of ORDER syncs,
# twice round.
rejoin() {
	local c
	at 200
	on b1 git remote set-url origin "$HUB_BASE/hub.git"
	on b2 git remote set-url origin "$HUB_BASE/hub.git"
	for c in "$@" "$@"; do on "$c" amp sync > /dev/null || return 1; done
}

# decided CLONE: what is in force and what is set aside, as CLONE sees it.
decided() {
	on "$1" amp status "$C" --json | json_get '[d["claims"], d["superseded"]]'
	on "$1" amp status "$T" --json | json_get '[d["state"], d["subtasks"], d["superseded"]]'
	on "$1" amp status T-2026-101 --json | json_get '[d["waits_for"], d["superseded"]]'
	on "$1" amp status T-2026-102 --json | json_get '[d["waits_for"], d["superseded"]]'
}

# conflicts TASK CLONE: the descriptions of the conflict escalations of
# TASK, as CLONE sees them, one a line.
conflicts() {
	on "$2" amp status "$1" --json |
		json_get '"\n".join(e["description"] for e in d["escalations"] if e["escalation_type"] == "conflict")'
}
