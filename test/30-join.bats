#!/usr/bin/env bats
# Issue 30: what no sequence of writes may do to a clone or a hub.  A long
# chain of dependencies is checked without exhausting the C stack; a join
# sets aside a record a rule refuses in its new place, in any task, so that
# a clone's next sync always delivers the rest; two clones writing one
# msg_id in one millisecond are reconciled by the join, the same way on
# every clone, without a person.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	clones_setup
}

teardown() {
	clones_teardown
}

# chain GITDIR FIRST N: one commit on the messages ref, made by git
# fast-import (as a hub without amp's hook would take it), adding N
# depend records: T-2026-<FIRST+i> waits for T-2026-<FIRST+i+1>.
chain() {
	$PY - "$2" "$3" "$(git -C "$1" rev-parse refs/amp/messages)" <<'PY' |
import sys
first, n, parent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
w = sys.stdout.write
w("commit refs/amp/messages\ncommitter coordinator <coordinator@amp.invalid> 1772116327 +0000\n"
  f"data 6\nchain\nfrom {parent}\n")
for i in range(n):
    t, on = f"T-2026-{first + i}", f"T-2026-{first + i + 1}"
    body = ('{"protocol_version":"AMP/1.0","type":"depend","task_id":"%s","from":"coordinator",'
            '"timestamp":"2026-02-26T14:32:07+00:00","on":"%s","soft":false}\n') % (t, on)
    w(f"M 100644 inline tasks/2026/{t[7:-2]}/{t}/000001.ctl.depend-1772116327000.json\n"
      f"data {len(body)}\n{body}")
PY
		git -C "$1" fast-import --quiet
}

# ---- defect 4: the dependency walk ----------------------------------------

@test "a chain of 100,000 dependencies: amp depend finds the cycle that closes it and takes the link that extends it, without a crash" {
	cd a
	chain . 200000 100000
	# closing the chain into a cycle: refused, the path named
	run -3 amp depend T-2026-300000 --on T-2026-200000 --from coordinator
	assert_output "amp depend: error: /on: a cycle: T-2026-200000 already waits for T-2026-300000 (T-2026-200000 -> T-2026-200001 -> T-2026-200002 -> T-2026-200003 -> ... 99993 more -> T-2026-299997 -> T-2026-299998 -> T-2026-299999 -> T-2026-300000), so T-2026-300000 cannot wait for T-2026-200000"
	# one more link at its head: the whole chain is walked, no cycle
	run -0 amp depend T-2026-199999 --on T-2026-200000 --from coordinator
	assert_output --regexp "^T-2026-199999 waits for T-2026-200000 \(depend-[0-9]+\)$"
	run -0 git ls-tree -r --name-only refs/amp/messages
	assert_line --regexp "^tasks/2026/1999/T-2026-199999/000001\.ctl\.depend-[0-9]+\.json$"
	refute_output --partial T-2026-300000/
}

@test "amp fsck checks a commit of 20,000 dependency links in one pass, and names the cycle a later commit closes" {
	cd a
	chain . 400000 20000
	run -0 amp fsck
	assert_output --regexp "commits checked: clean$"
	# a hub without amp's hook took the link that closes the cycle
	plant "tasks/2026/4200/T-2026-420000/000001.ctl.depend-1772116327000.json" <<'JSON'
{"protocol_version":"AMP/1.0","type":"depend","task_id":"T-2026-420000","from":"coordinator","timestamp":"2026-02-26T14:32:07+00:00","on":"T-2026-400000","soft":false}
JSON
	run -3 amp fsck
	assert_output --partial "T-2026-420000/000001.ctl.depend-1772116327000.json: rule: /on: a cycle: T-2026-400000 already waits for T-2026-420000 (T-2026-400000 -> T-2026-400001 -> T-2026-400002 -> T-2026-400003 -> ... 19993 more -> T-2026-419997 -> T-2026-419998 -> T-2026-419999 -> T-2026-420000)"
	assert_line "amp fsck: 4 commits checked: 0 corrupt, 1 rule, 0 unreadable"
}
