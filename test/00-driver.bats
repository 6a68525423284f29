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

# amp(1): amp's own commands are built into amp; bin/amp-<command>
# are links to it.
@test "amp's commands are one program: amp-<command> is a link to amp that runs its command, and amp runs it without a second program" {
	local cmd
	for cmd in send status watch validate; do
		[ "$(stat -L -c %d:%i "$AMP_BIN/amp-$cmd")" = "$(stat -L -c %d:%i "$AMP_BIN/amp")" ]
	done
	run "$AMP_BIN/amp-status" --help
	assert_success
	assert_output --partial "usage: amp status"
	run "$AMP_BIN/amp-validate" --no-such-flag
	assert_failure 2
	assert_output --partial "usage: amp validate"
	# one execve: amp itself, no amp-status after it
	# LeakSanitizer cannot run under ptrace (make asan)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" run strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/trace" amp status --help
	assert_success
	[ "$(grep -c 'execve(' "$BATS_TEST_TMPDIR/trace")" = 1 ]
	# a link named for no command is refused, not a random command
	ln "$AMP_BIN/amp" "$BATS_TEST_TMPDIR/amp-nope"
	run "$BATS_TEST_TMPDIR/amp-nope" --help
	assert_failure 2
	assert_output --partial "'nope' is not an amp command"
}

@test "an amp-<command> next to amp that is another program runs instead of the built-in; a symbolic link to amp is the built-in" {
	mkdir -p "$BATS_TEST_TMPDIR/other" "$BATS_TEST_TMPDIR/linked"
	cp "$AMP_BIN/amp" "$BATS_TEST_TMPDIR/other/amp"
	printf '#!/bin/sh\necho "replaced amp-status: $*"\nexit 6\n' > "$BATS_TEST_TMPDIR/other/amp-status"
	chmod +x "$BATS_TEST_TMPDIR/other/amp-status"
	run "$BATS_TEST_TMPDIR/other/amp" status --help
	assert_failure 6
	assert_output "replaced amp-status: --help"
	cp "$AMP_BIN/amp" "$BATS_TEST_TMPDIR/linked/amp"
	ln -s amp "$BATS_TEST_TMPDIR/linked/amp-status"
	# LeakSanitizer cannot run under ptrace (make asan)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" run strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/trace" "$BATS_TEST_TMPDIR/linked/amp" status --help
	assert_success
	assert_output --partial "usage: amp status"
	[ "$(grep -c 'execve(' "$BATS_TEST_TMPDIR/trace")" = 1 ]
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
