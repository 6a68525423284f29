# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Shared set-up for the bats suites: bats-support/assert/file, amp on PATH,
# and a private HOME so no test reads or writes the user's git config.
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

AMP_BIN=${AMP_BIN:-$BATS_TEST_DIRNAME/../bin}
AMP_SRC=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
PATH=$AMP_BIN:$PATH
FIXTURES=$BATS_TEST_DIRNAME/fixtures
export HOME=$BATS_TEST_TMPDIR/home GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1 TZ=UTC
unset AMP_REPO AMP_ROLE AMP_NOW
mkdir -p "$HOME"

# Makes a fresh git repository at $BATS_TEST_TMPDIR/repo and cds into it.
make_repo() {
	git init -q "$BATS_TEST_TMPDIR/repo"
	cd "$BATS_TEST_TMPDIR/repo" || return 1
	git config user.name tester
	git config user.email tester@example.invalid
}

# Turns every pack of the repository in the current directory into loose
# objects (amp writes packs: a test that damages one object, by moving or
# truncating its file, needs it to be a file of its own).
loosen_objects() {
	local p aside=$BATS_TEST_TMPDIR/packs-aside
	mkdir -p "$aside"
	for p in .git/objects/pack/*.pack; do
		[ -e "$p" ] || continue
		mv "$p" "${p%.pack}.idx" "$aside/"
		git unpack-objects -q < "$aside/$(basename "$p")" || return 1
	done
	rm -rf "$aside"
}
