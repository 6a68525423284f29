#!/usr/bin/env bats
# The amp driver: amp <name> runs amp-<name>, like git.

load helpers

@test "amp <command> runs amp-<command> from next to amp" {
	run amp validate --help
	assert_success
	assert_output --partial "usage: amp validate"
}

@test "a user's own amp-<name> on PATH extends amp, with its arguments and exit code" {
	mkdir -p "$BATS_TEST_TMPDIR/ext"
	printf '#!/bin/sh\necho "hello from amp-hello: $*"\nexit 7\n' > "$BATS_TEST_TMPDIR/ext/amp-hello"
	chmod +x "$BATS_TEST_TMPDIR/ext/amp-hello"
	PATH=$BATS_TEST_TMPDIR/ext:$PATH run amp hello a "b c"
	assert_failure 7
	assert_output "hello from amp-hello: a b c"
}

@test "amp's own commands win over same-named programs on PATH" {
	mkdir -p "$BATS_TEST_TMPDIR/ext"
	printf '#!/bin/sh\necho impostor\n' > "$BATS_TEST_TMPDIR/ext/amp-validate"
	chmod +x "$BATS_TEST_TMPDIR/ext/amp-validate"
	PATH=$BATS_TEST_TMPDIR/ext:$PATH run amp validate --help
	assert_output --partial "usage: amp validate"
}

@test "an unknown command exits 2 and says so" {
	run amp no-such-command
	assert_failure 2
	assert_output --partial "'no-such-command' is not an amp command"
}

@test "amp help, --help and --version" {
	run amp help
	assert_success
	assert_output --partial "The AMP/1.0 commands:"
	assert_output --partial "Exit codes: 0 ok, 1 message does not conform, 2 usage"
	run amp --version
	assert_success
	assert_output --regexp '^amp version [0-9.]+ \(AMP/1.0\)$'
	# amp help CMD is the manual page (test/93-man-install.bats); --help the usage
	run amp status --help
	assert_success
	assert_output --partial "usage: amp status"
	run amp
	assert_failure 2
	assert_output --partial "usage: amp"
}

@test "every command answers --help on stdout and a wrong flag with exit 2" {
	for cmd in validate init send ack status errors; do
		run amp $cmd --help
		assert_success
		assert_output --partial "usage: amp $cmd"
		run amp $cmd --no-such-flag
		assert_failure 2
		assert_output --partial "usage: amp $cmd"
	done
}
