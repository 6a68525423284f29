# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Two clones, a and b, of a bare hub guarded by the server hook, for the
# suites that sync (84-join, 85-sync-options).  Load after helpers,
# conversation, enforcer and hub (its `on NAME CMD...` runs in a clone).

# clones_setup: the work repository, the payloads, AMP_NOW at T0, the hub
# ($HUB) with amp's pre-receive hook, clone a with the SSOT initialised and
# pushed, clone b synced; cds into $BATS_TEST_TMPDIR.
clones_setup() {
	make_repo # the work repository the dispatches name
	write_payloads
	at 0
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	amp hook install --server --repo "$HUB" > /dev/null
	cd "$BATS_TEST_TMPDIR" || return 1
	git clone -q "$HUB" a 2> /dev/null
	git clone -q "$HUB" b 2> /dev/null
	(cd a && amp init > /dev/null && amp sync > /dev/null) &&
		(cd b && amp sync > /dev/null)
}

# clones_teardown: every repository passes git fsck.
clones_teardown() {
	fsck_all_repos
}

# dispatched_on_both: a dispatch sent on clone a (sets D), synced to b.
dispatched_on_both() {
	D=$(on a amp send task_dispatch --task "$T" --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json") &&
		on a amp sync > /dev/null && on b amp sync > /dev/null
}

# in_review: on clone a, a round up to a review_request the reviewer
# ACKed (sets D, R, Q), synced to the hub and to clone b.
in_review() {
	cd "$BATS_TEST_TMPDIR/a" || return 1
	dispatch_acked || return 1
	at 10
	review_round 0 || return 1
	amp sync > /dev/null || return 1
	cd "$BATS_TEST_TMPDIR" || return 1
	on b amp sync > /dev/null
}

# two_verdicts: in_review, then a verdict on the review_request on each
# clone, offline, a's first (sets V1, V2).
two_verdicts() {
	in_review || return 1
	at 100
	V1=$(on a amp verdict "$T" --decision approved --confidence 0.9 --from reviewer) || return 1
	at 101
	V2=$(on b amp verdict "$T" --decision approved --confidence 0.95 --from reviewer)
}

# The hub's join under way, for the inbox suites (32-join, 32-proc): LOCK is
# the join's lock file ($HUB/amp/refs_amp-in.flock), HOLDER the pid of the
# process holding it (empty: none).

# hold [LOCKFILE]: a process takes the join's lock (or LOCKFILE), as a
# join under way holds it (HOLDER, its pid), until let_go.
hold() {
	mkdir -p "$HUB/amp"
	python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close(); time.sleep(600)' "${1:-$LOCK}" "$BATS_TEST_TMPDIR/held" 3>&- &
	HOLDER=$!
	until [ -e "$BATS_TEST_TMPDIR/held" ]; do sleep 0.05; done
}

# let_go [SIGNAL]: the holder ends (killed with SIGNAL, TERM by default).
let_go() {
	[ -n "$HOLDER" ] || return 0
	kill "-${1:-TERM}" "$HOLDER" 2> /dev/null || true
	wait "$HOLDER" 2> /dev/null || true
	HOLDER=
	rm -f "$BATS_TEST_TMPDIR/held"
}

# send CLONE TASK: a dispatch of TASK on CLONE (a name in the test's
# directory, or an absolute path); its msg_id on stdout.
send() {
	(cd "$1" && amp send task_dispatch --task "$2" --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
}
