#!/usr/bin/env bats
# What the last review left: amp ask and amp progress refuse a role other
# than the executor through the write skeleton's one guard (amp_cli_writer
# .role); the team's reports of a warm `amp inbox coordinator|executor`
# come from inbox.json alone, and stay right as sends change them; and
# share/doc/hub-gitolite.md step 8, inbox mode on gitolite3, followed
# literally.

bats_require_minimum_version 1.5.0
load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

# alice_holds: the coordinator dispatches $T at 0; executor alice ACKs it
# at 5 and claims it.
alice_holds() {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim "$T" --agent alice > /dev/null
}

# ---- one role guard ---------------------------------------------------------------

@test "amp progress and amp ask from another role than the executor are refused with exit 3 on /from, their own reason, writing nothing" {
	alice_holds
	tip=$(git rev-parse refs/amp/messages)
	run -3 --separate-stderr amp progress "$T" --percent 10 --from coordinator --agent alice
	assert_equal "$stderr" "amp progress: error: /from: progress is reported by the executor that holds the task, not coordinator"
	assert_output ''
	run -3 --separate-stderr amp ask "$T" --question why --from reviewer --agent alice
	assert_equal "$stderr" "amp ask: error: /from: a clarification question comes from the executor, not reviewer"
	# the role from git config is checked as --from is
	git config amp.role admin
	run -3 --separate-stderr amp ask "$T" --question why --agent alice
	assert_equal "$stderr" "amp ask: error: /from: a clarification question comes from the executor, not admin"
	assert_equal "$(git rev-parse refs/amp/messages)" "$tip"
	git config --unset amp.role
	run -0 amp progress "$T" --percent 10 --agent alice
	run -0 amp ask "$T" --question why --agent alice
}
