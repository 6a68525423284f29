#!/usr/bin/env bats
# Issue 35 item 1, what a write into a long task costs: a write reads its
# task's records once and looks them up by id through the log's index, its
# own copies of the log (the log plus what the write adds) included.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_repo
	write_payloads
	git config --global amp.layout 2
	# the repository gen-long-task.py's dispatches name
	mkdir -p /tmp/amp-layout1-work/.git
	amp init > /dev/null
	git config amp.checkRepo false
	git config amp.autoPack 0
}

teardown() {
	fsck_all_repos
}

# plant_task N [--review]: a commit on refs/amp/messages adding task
# T-2026-999999 of N records in layout 2 (share/gen-long-task.py), the
# last ones a task_result and a review_request awaiting a verdict with
# --review; AMP_NOW after them.
plant_task() {
	python3 "$AMP_SRC/share/gen-long-task.py" 2 "$1" T-2026-999999 \
		"$(git rev-parse refs/amp/messages)" "${@:2}" | git fast-import --quiet
	export AMP_NOW=2026-03-01T00:00:00+00:00
}

# trace_field NAME: the value of NAME= in the AMP_TRACE line of $output.
trace_field() {
	sed -n "s/.*trace:.* $1=\([0-9]*\).*/\1/p" <<< "$output" | tail -1 | grep .
}

@test "a verdict into a task of 300 records looks its records up by index, never by scanning the log: AMP_TRACE lookup_scans=0" {
	plant_task 300 --review
	AMP_TRACE=1 run -0 --separate-stderr amp verdict T-2026-999999 --decision approved --confidence 0.9 --from reviewer
	output=$stderr
	# the lock it may bring and its snapshot are checked on the log plus
	# the verdict: a copy of the log that has an index of its own
	assert_equal "$(trace_field lookup_scans)" 0
	run -0 amp status T-2026-999999 --json
	assert_output --partial '"state": "approved"'
}

@test "a verdict into a task of 300 records builds each record once: the send's read takes what the verdict's read built" {
	plant_task 300 --review
	AMP_TRACE=1 run -0 --separate-stderr amp verdict T-2026-999999 --decision approved --confidence 0.9 --from reviewer
	output=$stderr
	# amp verdict reads the task to find the request it answers, then the
	# send reads it again at its tip: 300 records built, not 600
	assert_equal $(($(trace_field records_parsed) + $(trace_field records_cached))) 300
	# from the record cache the first read wrote, the same
	git update-ref refs/amp/messages refs/amp/messages^
	AMP_TRACE=1 run -0 --separate-stderr amp verdict T-2026-999999 --decision approved --confidence 0.9 --from reviewer
	output=$stderr
	assert_equal "$(trace_field records_parsed) $(trace_field records_cached)" "0 300"
	run -0 amp status T-2026-999999 --json
	assert_output --partial '"state": "approved"'
}
