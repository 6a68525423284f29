#!/usr/bin/env bats
# Issue 35, item 2: first runs that do not replay the world, in bounded
# memory.  Memory is bounded with `ulimit -v` on SSOTs whose derived state
# is large per task (hostile records written with git, as a fetch brings
# them), so that what a first run holds at once shows at a test's size.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
}

# hostile_tasks FIRST COUNT: COUNT aborted tasks T-2026-FIRST... whose
# dispatch's timestamp is a string of 60,000 characters: each task's
# summary holds that string (amp status's "last").
hostile_tasks() {
	aborted_tasks "$1" "$2" 60000
}

@test "a first amp status holds a bounded part of the summaries it makes: 1,000 tasks of 60 KB summaries each (60 MB) listed under a 50 MB address-space limit, the cache written whole" {
	hostile_tasks 1000 1000
	run -0 bash -c "ulimit -v 50000 && amp status"
	assert_output "no open tasks; 1000 finished (amp status --all lists them)"
	# every task's summary in the cache, once, with its 60,000 characters
	run -0 awk -F '\t' 'NR > 1 { n[$1]++; if (length($9) < 60026) short++ }
		END { for (t in n) if (n[t] > 1) dup++; print length(n), dup + 0, short + 0 }' \
		"$(git rev-parse --git-common-dir)/amp/status.cache"
	assert_output "1000 0 0"
	# and read back
	run -0 bash -c "ulimit -v 50000 && amp status"
	assert_output "no open tasks; 1000 finished (amp status --all lists them)"
	run -0 amp status T-2026-1999
	assert_output --partial "aborted"
}
