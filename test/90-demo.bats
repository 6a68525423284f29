#!/usr/bin/env bats
# make demo's script is the README's first promise: it must keep working.

load helpers

@test "the demo runs a whole task to approved, and the enforcer demo locks and resumes" {
	run env TMPDIR="$BATS_TEST_TMPDIR" "$AMP_SRC/share/demo.sh"
	assert_success
	assert_output --regexp "T-2026-044  +approved"
	assert_output --partial "critical hallucination_lock"
	assert_output --partial "resume by admin"
	# strict mode: the executor's key cannot resume, the admin's can
	assert_output --regexp "amp resume: error: the key SHA256:[^ ]+ \(git config amp.signingKey\) may not write as admin"
	assert_output --partial "(exit 3: refused, nothing written)"
	assert_output --regexp "resumed T-2026-044 \(suspended -> dispatched\)"
	assert_output --partial 'Good "git" signature for admin'
	# two executors race for one task: one claim wins, the other is told who
	assert_output --regexp "claimed T-2026-045 as (alice|bob), expires "
	assert_output --regexp "amp claim: error: /task_id: task T-2026-045 is claimed by (alice|bob) until "
	# the demo cleans up its throw-away repositories
	assert_equal "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'amp-demo*' | wc -l)" 0
}
