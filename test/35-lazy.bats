#!/usr/bin/env bats
# Issue 35 item 1, what a write into a long task reads: the trees of a
# task's directory in layout 2 come from its tree cache (treecache.h),
# each checked against its id, so that a write reads from git only the
# few trees the writes since changed, and no cache file, stale, cut short
# or forged, changes what a command decides.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_repo
	write_payloads
	git config --global amp.layout 2
	amp init > /dev/null
	git config amp.checkRepo false
	git config amp.autoPack 0
	export AMP_NOW=2026-03-01T00:00:00+00:00
}

teardown() {
	fsck_all_repos
}

TASK=T-2026-999999

# plant_task N [--review]: a commit per record on refs/amp/messages adding
# task $TASK of N records in layout 2 (share/gen-long-task.py), the last
# ones a task_result and a review_request awaiting a verdict with --review.
plant_task() {
	python3 "$AMP_SRC/share/gen-long-task.py" 2 "$1" "$TASK" \
		"$(git rev-parse refs/amp/messages)" "${@:2}" | git fast-import --quiet
}

# trace_field NAME: the value of NAME= in the AMP_TRACE line of $output.
trace_field() {
	sed -n "s/.*trace:.* $1=\([0-9]*\).*/\1/p" <<< "$output" | tail -1 | grep .
}

# verdict_traced: the reviewer approves the open review_request of $TASK;
# $output is what AMP_TRACE printed.
verdict_traced() {
	AMP_TRACE=1 run -0 --separate-stderr amp verdict "$TASK" --decision approved --confidence 0.9 \
		--from reviewer
	output=$stderr
}

trees_file() { echo "$(git rev-parse --git-dir)/amp/trees/$TASK"; }

# swap_blob FILE FROM TO: in the tree cache FILE, the entry named
# *.FROM-* of the tree that holds it gets the blob id of the entry named
# *.TO-* (a forgery that keeps every length and the file's framing).
swap_blob() {
	python3 - "$@" <<-'EOF'
	import re, sys
	path, frm, to = sys.argv[1:]
	data = bytearray(open(path, "rb").read())
	off = len(b"amp-trees 1\n")
	done = False
	while off + 24 <= len(data):
	    n = int.from_bytes(data[off + 20:off + 24], "little")
	    start, end = off + 24, off + 24 + n
	    tree = bytes(data[start:end])
	    a = re.search(rb"\.%s-[^\0]*\0" % frm.encode(), tree)
	    b = re.search(rb"\.%s-[^\0]*\0" % to.encode(), tree)
	    if a and b:
	        data[start + a.end():start + a.end() + 20] = tree[b.end():b.end() + 20]
	        done = True
	    off = end
	assert done, "no tree holds both"
	open(path, "wb").write(data)
	EOF
}

@test "a send into a task of 1,000 records reads from git only the trees the last write changed: AMP_TRACE trees_read, trees_cached" {
	plant_task 1000
	# the first read lists the 13 trees from git (the task's, 00, 00/00 to
	# 00/10) and writes the tree cache
	AMP_TRACE=1 run -0 --separate-stderr amp send task_dispatch --task "$TASK" --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	output=$stderr
	[ "$(trace_field trees_read)" -ge 13 ]
	[ -s "$(trees_file)" ]
	local before
	before=$(amp status "$TASK" --json | jq '.messages | length')
	AMP_TRACE=1 run -0 --separate-stderr amp send task_dispatch --task "$TASK" --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	output=$stderr
	# the task's tree, 00 and 00/10 (of the tip, and of the tip after the
	# send when a check reads it again); the other ten from the file
	[ "$(trace_field trees_read)" -le 6 ]
	[ "$(trace_field trees_cached)" -ge 10 ]
	# and the listing is whole: the send is one more message of the task
	assert_equal "$(amp status "$TASK" --json | jq '.messages | length')" $((before + 1))
}

@test "a forged tree cache changes no decision: a tree that does not hash to its id is read from git, and the file written again" {
	plant_task 300 --review
	run -0 amp status "$TASK" --json
	cp "$(trees_file)" "$BATS_TEST_TMPDIR/trees"
	# trusted, the forgery would make the review_request a task_result
	# under its name: out of its place, and the verdict would answer no
	# open review_request
	swap_blob "$(trees_file)" review_request task_result
	run cmp -s "$(trees_file)" "$BATS_TEST_TMPDIR/trees"
	assert_failure
	verdict_traced
	[ "$(trace_field trees_read)" -ge 1 ]
	run -0 amp status "$TASK" --json
	assert_output --partial '"state": "approved"'
	# written again from the trees of the task at the verdict's read
	run -0 python3 -c 'import sys; a, b = (open(p, "rb").read() for p in sys.argv[1:]); sys.exit(a != b)' \
		"$(trees_file)" "$BATS_TEST_TMPDIR/trees"
}

@test "a tree cache cut short or not amp's changes nothing and is written again whole" {
	plant_task 300 --review
	run -0 amp status "$TASK" --json
	local want size
	want=$(amp status "$TASK" --json)
	cp "$(trees_file)" "$BATS_TEST_TMPDIR/trees"
	size=$(stat -c %s "$(trees_file)")
	truncate -s $((size / 2)) "$(trees_file)"
	run -0 amp status "$TASK" --json
	assert_equal "$output" "$want"
	cmp "$(trees_file)" "$BATS_TEST_TMPDIR/trees"
	head -c 4000 /dev/urandom > "$(trees_file)"
	run -0 amp status "$TASK" --json
	assert_equal "$output" "$want"
	cmp "$(trees_file)" "$BATS_TEST_TMPDIR/trees"
}

@test "a tree cache another writer made stale by moving the ref: the trees it lacks come from git, and the verdict sees the review_request" {
	plant_task 300 --review
	local tip
	tip=$(git rev-parse refs/amp/messages)
	# the cache written at the tip before the review_request and its ACK
	git update-ref refs/amp/messages "$tip~2"
	run -0 amp status "$TASK" --json
	[ -s "$(trees_file)" ]
	git update-ref refs/amp/messages "$tip"
	verdict_traced
	[ "$(trace_field trees_read)" -ge 3 ]
	run -0 amp status "$TASK" --json
	assert_output --partial '"state": "approved"'
}

@test "a reader killed while writing a tree cache leaves a temporary file that a write sweeps after an hour" {
	mkdir -p .git/amp/trees
	: > .git/amp/trees/$TASK.4242.tmp
	: > .git/amp/trees/$TASK.4243.tmp
	touch -d '2 hours ago' .git/amp/trees/$TASK.4242.tmp
	rm -f .git/amp/objects-swept
	amp send task_dispatch --task "$TASK" --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	[ ! -e .git/amp/trees/$TASK.4242.tmp ]
	# a young one may be a live reader's
	[ -e .git/amp/trees/$TASK.4243.tmp ]
}

@test "amp watch's first pass over a task of 600 records applies each record to the task's state a bounded number of times, not once per record before it: AMP_TRACE state_steps" {
	plant_task 600 --review
	AMP_TRACE=1 run -0 --separate-stderr amp watch --once
	# what it finds: the reviewer silent since the planted request
	assert_equal "$(grep -c '^escalated ' <<< "$output")" 1
	assert_output --partial "escalated heartbeat_timeout $TASK review_request-$TASK-"
	output=$stderr
	# the state before each record (600), the task's, and those of the
	# escalation's write: 3,600, where computing each from the start
	# applied some 500,000
	[ "$(trace_field state_steps)" -le 6000 ]
}

@test "a verdict into a task of 300 records applies its records to the task's state twice, not three times: its rules and the lock it may bring share one fold (AMP_TRACE state_steps)" {
	plant_task 300 --review
	local tip
	tip=$(git rev-parse refs/amp/messages)
	verdict_traced
	# amp verdict's own read (300), the send's rules (300), the lock (1)
	[ "$(trace_field state_steps)" -le 610 ]
	# a rejection at amp.lockThreshold 1 brings the lock in its commit
	git update-ref refs/amp/messages "$tip"
	git config amp.lockThreshold 1
	cat > "$BATS_TEST_TMPDIR/p/reject.json" <<-'JSON'
	{"criteria_results": [{"criterion": "it works", "passed": false, "evidence": "it does not"}],
	 "issues": [{"severity": "critical", "file": "a.c", "line": 1, "description": "broken",
	             "suggested_fix": "mend it"}]}
	JSON
	run -0 amp verdict "$TASK" --decision rejected --confidence 0.9 \
		--payload "$BATS_TEST_TMPDIR/p/reject.json" --from reviewer
	run -0 git log -1 --format=%B refs/amp/messages
	assert_output --partial "Amp-Escalation: escalation-$TASK-"
	run -0 amp status "$TASK" --json
	assert_output --partial '"state": "locked"'
}
