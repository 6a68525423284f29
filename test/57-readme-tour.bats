#!/usr/bin/env bats
# The README is a contract (issue 13): every shell block of its tour, between
# <!-- tour --> and <!-- /tour -->, is run as written, in order, in a
# temporary directory, and the task it tells ends approved.

bats_require_minimum_version 1.5.0

load helpers
load enforcer

# The tour's shell blocks, in order, as one script.
tour_script() {
	python3 "$AMP_SRC/test/doc-claims.py" blocks "$AMP_SRC/README.md" "<!-- tour -->" "<!-- /tour -->" 5
}

@test "every shell block of the README's tour runs as written, and the task ends approved" {
	run -0 tour_script
	script=$output
	[[ "$script" == *"amp init"* ]]
	[[ "$script" == *"amp verdict"* ]]
	cd "$BATS_TEST_TMPDIR"
	unset AMP_NOW AMP_ROLE AMP_REPO
	run -0 bash -euo pipefail -c "$script"
	assert_output --partial "Initialized AMP/1.0 store"
	cd tour-repo
	[ "$(amp status T-2026-001 --json | json_get 'd["state"]')" = approved ]
	# nothing was refused on the way
	[ "$(amp errors --json | json_get 'd["errors"]')" = "[]" ]
	[ "$(git rev-list --count refs/amp/messages)" -eq 9 ]
}
