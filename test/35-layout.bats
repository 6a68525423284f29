#!/usr/bin/env bats
# Issue 35 item 1: the SSOT's layout 2 (store.h "Layout"): a task's records
# fanned out by sequence number and the tasks of a year by number, so that a
# write rewrites trees of at most 100 entries whatever the task's length;
# an SSOT written by d39ab41 (layout 1, test/fixtures/layout1-d39ab41.bundle,
# made by test/fixtures/make-layout1-ssot.sh) read, written, synced with a
# layout-2 clone through a hub, migrated (amp gc --migrate), and checked by
# amp fsck.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load hub

setup() {
	make_repo # the work repository the dispatches name
	write_payloads
	# amp init's default, whatever AMP_TEST_LAYOUT the other suites run on
	git config --global amp.layout 2
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	# the fixture's records are dated 2026-02-26 14:32:07 + up to 5,000 s
	at 6000
	# the repository the fixture's dispatches name
	mkdir -p /tmp/amp-layout1-work/.git
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	fsck_all_repos
}

# fixture DIR: a repository at DIR holding the layout-1 SSOT of d39ab41.
fixture() {
	git init -q "$1" &&
		git -C "$1" fetch -q "$FIXTURES/layout1-d39ab41.bundle" 'refs/amp/*:refs/amp/*'
}

# records REV: "<file name> <blob>" of every record at REV, sorted: what a
# migration must keep, whatever the directories.
records() {
	git ls-tree -r "$1" | awk '$4 ~ /^tasks\// { n = split($4, p, "/"); print p[n], $3 }' | sort
}

# assert_amp_fsck_clean [ARGS]: amp fsck exits 0 with no finding.
assert_amp_fsck_clean() {
	run amp fsck --json "$@"
	assert_success
	assert_equal "$(python3 -c 'import json, sys; print(json.load(sys.stdin)["findings"])' <<< "$output")" '[]'
}

# assert_all_acked TASK [ARGS]: every message of TASK that asks for an ACK
# has one (amp status --json).
assert_all_acked() {
	run amp status "$@" --json
	assert_success
	python3 -c 'import json, sys
d = json.load(sys.stdin)
late = [m["msg_id"] for m in d["messages"] if m["requires_ack"] and not m["acked"]]
assert not late, late' <<< "$output"
}

D3=task_dispatch-T-2026-045-1772116827000

@test "a layout-1 SSOT written by d39ab41 is read and written in its layout, migrated by amp gc --migrate in one new commit keeping every record, and amp fsck finds nothing before or after" {
	fixture old && cd old
	assert_amp_fsck_clean
	run amp show review_verdict-T-2026-1234-1772116727000
	assert_success
	assert_output --partial 'rejected'
	run amp log -n 3 --task T-2026-1234
	assert_success
	assert_output --partial 'escalation-T-2026-1234-1772121327000'
	# a write into a layout-1 SSOT stays in layout 1
	run amp ack "$D3" --from executor
	assert_success
	git cat-file -e "refs/amp/messages:tasks/2026/0/T-2026-045/000006.ack.$D3.json"
	run git cat-file -e refs/amp/messages:amp-layout
	assert_failure
	run amp inbox executor --json
	assert_success
	refute_output --partial "$D3"
	amp watch --once > /dev/null
	old=$(git rev-parse refs/amp/messages)
	assert_amp_fsck_clean
	run amp status --all --json
	assert_success
	before=$output

	run amp gc --migrate
	assert_success
	assert_output --partial "the SSOT moved to layout 2 in commit $(git rev-parse refs/amp/messages)"
	assert_equal "$(git rev-parse refs/amp/messages^)" "$old"
	assert_equal "$(git cat-file -p refs/amp/messages:amp-layout)" 2
	assert_equal "$(records refs/amp/messages)" "$(records "$old")"
	git cat-file -e "refs/amp/messages:tasks/2026/0/0/T-2026-045/00/00/000006.ack.$D3.json"
	git cat-file -e "refs/amp/messages:tasks/2026/0/12/T-2026-1234/00/00/000001.msg.task_dispatch-T-2026-1234-1772116627000.json"
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial tasks/2026/0/T-2026-044/
	run amp status --all --json
	assert_success
	assert_equal "$output" "$before"
	assert_amp_fsck_clean
	# nothing the watcher raised before is raised again for the new paths
	# (the missed deadline's cause is the layout-1 path of the plan
	# record), not even by a watcher without its state (another clone)
	rm -f "$(git rev-parse --git-common-dir)/amp/watch.json"
	amp watch --once > /dev/null
	assert_equal "$(git rev-parse refs/amp/messages^)" "$old"
	run amp gc --migrate
	assert_success
	assert_output --partial "layout 2 already"

	# a write after the migration goes to the record's fan-out directory
	at 6100
	run amp escalate T-2026-045 --type conflict --severity info --from executor --no-suspend --description "after the move"
	assert_success
	run git ls-tree -r --name-only refs/amp/messages
	assert_output --regexp 'tasks/2026/0/0/T-2026-045/00/00/000007\.msg\.escalation-T-2026-045-[0-9]+\.json'
	run amp show "$D3"
	assert_success
	assert_output --partial "$D3"
	assert_all_acked T-2026-045
	assert_amp_fsck_clean
}

@test "a layout-1 clone and a migrated clone sync through a hub whose hook checks the migration: the join writes the old clone's records in layout 2" {
	git init -q --bare hub.git
	amp hook install --server --repo hub.git > /dev/null
	fixture seed
	# the hook checks every commit of the old history as it arrives
	git -C seed push -q "$BATS_TEST_TMPDIR/hub.git" 'refs/amp/*:refs/amp/*'
	# a "migration" that loses a record on the way is refused
	(cd seed && amp gc --migrate --quiet)
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C seed read-tree refs/amp/messages
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C seed rm -q --cached \
		"tasks/2026/0/0/T-2026-044/00/00/000008.ack.review_verdict-T-2026-044-1772116527000.json"
	bad=$(git -C seed commit-tree "$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git -C seed write-tree)" \
		-p refs/amp/messages^ -m "amp: SSOT moved to layout 2")
	run git -C seed push "$BATS_TEST_TMPDIR/hub.git" "$bad:refs/amp/messages"
	assert_failure
	assert_output --partial "with a tree other than amp migrate's"
	git clone -q hub.git a 2> /dev/null && git clone -q hub.git b 2> /dev/null
	(cd a && amp sync > /dev/null) && (cd b && amp sync > /dev/null)

	# b moves to layout 2 and pushes the migration
	(cd b && amp gc --migrate --quiet && amp sync > /dev/null)
	assert_equal "$(git -C hub.git cat-file -p refs/amp/messages:amp-layout)" 2
	# a, still on layout 1, writes offline, then joins
	at 6200
	(cd a && amp ack "$D3" --from executor > /dev/null)
	git -C a cat-file -e "refs/amp/messages:tasks/2026/0/T-2026-045/000006.ack.$D3.json"
	run amp sync --repo a
	assert_success
	assert_equal "$(git -C a rev-parse refs/amp/messages)" "$(git -C hub.git rev-parse refs/amp/messages)"
	git -C hub.git cat-file -e "refs/amp/messages:tasks/2026/0/0/T-2026-045/00/00/000006.ack.$D3.json"
	run amp sync --repo b
	assert_success
	run amp inbox coordinator --repo b --json
	assert_success
	refute_output --partial "$D3"
	assert_all_acked T-2026-045 --repo b
	for r in a b hub.git; do assert_amp_fsck_clean --repo "$r"; done
}

@test "a new SSOT is in layout 2: a task in tasks/<YYYY>/<A>/<B>/, its records in <s1>/<s2>/ by sequence number" {
	cd "$BATS_TEST_TMPDIR/repo"
	amp init > /dev/null
	assert_equal "$(git cat-file -p refs/amp/messages:amp-layout)" 2
	send_dispatch
	amp ack "$D" --from executor
	D2=$(amp send task_dispatch --task T-2026-12345 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	run git ls-tree -r --name-only refs/amp/messages
	assert_line "tasks/2026/0/0/T-2026-044/00/00/000001.msg.$D.json"
	assert_line "tasks/2026/0/0/T-2026-044/00/00/000002.ack.$D.json"
	assert_line "tasks/2026/1/23/T-2026-12345/00/00/000001.msg.$D2.json"
	run amp status --all
	assert_success
	assert_output --partial T-2026-12345
	run amp show "$D"
	assert_success
	run amp log -n 5
	assert_success
	assert_output --partial "$D2"
	assert_amp_fsck_clean
	# amp.layout 1 keeps a new SSOT readable by an amp older than layout 2
	git init -q "$BATS_TEST_TMPDIR/old"
	cd "$BATS_TEST_TMPDIR/old"
	git config amp.layout 1
	amp init > /dev/null
	run git cat-file -e refs/amp/messages:amp-layout
	assert_failure
	git config amp.layout 3
	git update-ref -d refs/amp/messages
	run amp init
	assert_failure 2
	assert_output --partial 'amp.layout'
}

# plant_task N: a commit on refs/amp/messages adding task T-2026-999999 of
# N records (dispatches, each ACKed) in layout 2, made with git fast-import
# (amp import of 10,000 records into one task takes many minutes).
plant_task() {
	python3 "$AMP_SRC/share/gen-long-task.py" 2 "$1" T-2026-999999 \
		"$(git rev-parse refs/amp/messages)" | git fast-import --quiet
}

# new_tree_bytes: the bytes of the trees the tip commit wrote (those its
# parent does not have), the root's included.
new_tree_bytes() {
	comm -13 <(git ls-tree -r -t refs/amp/messages^ | awk '$2 == "tree" { print $3 }' | sort -u) \
		<(git ls-tree -r -t refs/amp/messages | awk '$2 == "tree" { print $3 }' | sort -u) |
		{ total=$(git cat-file -s "refs/amp/messages^{tree}"); while read -r t; do
			total=$((total + $(git cat-file -s "$t"))); done; echo "$total"; }
}

@test "a write into a task of 10,000 records rewrites trees of at most 100 entries: its new trees are as small as a fresh task's" {
	cd "$BATS_TEST_TMPDIR/repo"
	amp init > /dev/null
	git config amp.checkRepo false
	plant_task 10000
	amp send task_dispatch --task T-2026-001 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	fresh=$(new_tree_bytes)
	M=$(amp send task_dispatch --task T-2026-999999 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	long=$(new_tree_bytes)
	# the 10,001st record, in its fan-out directory
	git cat-file -e "refs/amp/messages:tasks/2026/99/99/T-2026-999999/01/00/010001.msg.$M.json"
	amp ack "$M" --from executor
	ack=$(new_tree_bytes)
	echo "new tree bytes: fresh task $fresh, 10,000-record task: send $long, ack $ack" >&3
	# a flat task of 10,000 records is a ~700 KB tree rewritten by each
	# write; fanned out the same write costs a few entries more than a
	# fresh task's
	[ "$long" -le $((fresh + 600)) ]
	[ "$ack" -le $((fresh + 600)) ]
	assert_all_acked T-2026-999999
}

@test "amp gc never stores a layout-2 record as a delta" {
	cd "$BATS_TEST_TMPDIR/repo"
	amp init > /dev/null
	git config amp.autoPack 0
	# two rounds: objects in two packs the second time (91-pack's test)
	for round in 1 2; do
		for ((i = 0; i < 12; i++)); do
			at $((round * 1000 + i * 10))
			amp send task_dispatch --task T-2026-044 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
		done
		run -0 amp gc
	done
	records=$(git ls-tree -r refs/amp/messages | awk '$4 ~ /^tasks\/.*\/00\/00\// { print $3 }')
	[ "$(echo "$records" | wc -l)" = 24 ]
	run -0 git cat-file --batch-check='%(deltabase)' <<< "$records"
	refute_output --regexp '[1-9a-f]'
}

@test "bash completion lists a layout-2 SSOT's task ids and a task's msg_ids" {
	cd "$BATS_TEST_TMPDIR/repo"
	amp init > /dev/null
	assert_equal "$(git cat-file -p refs/amp/messages:amp-layout)" 2
	D2=$(amp send task_dispatch --task T-2026-12345 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	send_dispatch
	# shellcheck source=/dev/null
	source "$AMP_BASH_COMPLETION"
	run _amp_tasks
	assert_output "$(printf 'T-2026-044\nT-2026-12345')"
	run _amp_msg_ids T-2026-12345
	assert_output "$D2"
}

@test "a send into a new task of an SSOT of 20,000 tasks rewrites a year tree of 3 entries, not 201" {
	cd "$BATS_TEST_TMPDIR/repo"
	amp init > /dev/null
	git config amp.checkRepo false
	python3 "$AMP_SRC/share/gen-long-task.py" 2 20000 --tasks "$(git rev-parse refs/amp/messages)" |
		git fast-import --quiet
	amp send task_dispatch --task T-2026-020001 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	bytes=$(new_tree_bytes)
	echo "new tree bytes of a send into a new task of 20,000: $bytes; year tree $(git cat-file -s refs/amp/messages:tasks/2026)" >&3
	assert_equal "$(git ls-tree --name-only refs/amp/messages:tasks/2026)" "$(printf '00\n01\n02')"
	# layout 1: a 201-entry year tree (~6 KB) and a 100-task shard
	[ "$bytes" -le 1200 ]
	run amp status T-2026-019999
	assert_success
}
