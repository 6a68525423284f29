#!/usr/bin/env bats
# Issue 34, "help and mistakes like git": `amp help` groups the commands by
# what a user does with them, and a mistyped command gets git's hint of the
# most similar ones (lib/base/similar.h), never a wrong one.

bats_require_minimum_version 1.5.0

load helpers

@test "amp stauts: not an amp command, and the most similar one is status (exit 2, stderr)" {
	run -2 --separate-stderr amp stauts
	assert_output ""
	assert_equal "$stderr" "amp: 'stauts' is not an amp command. See 'amp --help'.

The most similar command is
	status"
}

@test "a typo as near to several commands lists each of them, in the help's order" {
	run -2 --separate-stderr amp ac
	assert_equal "$stderr" "amp: 'ac' is not an amp command. See 'amp --help'.

The most similar commands are
	ack
	gc"
}

@test "a swap, a missing letter, an extra letter and a prefix are each recognised" {
	local typo want
	while read -r typo want; do
		run -2 --separate-stderr amp "$typo"
		[[ $stderr == *"The most similar command is"$'\n\t'"$want" ]] || fail "$typo: $stderr"
	done <<-'EOF'
	vedrict verdict
	escalte escalate
	dashbord dashboard
	inboxx inbox
	regist register
	EOF
}

@test "a word near no command gets no hint" {
	run -2 --separate-stderr amp frobnicate
	assert_equal "$stderr" "amp: 'frobnicate' is not an amp command. See 'amp --help'."
	run -2 --separate-stderr amp zz
	assert_equal "$stderr" "amp: 'zz' is not an amp command. See 'amp --help'."
}

@test "the hint of amp-<name> run under a name that is no command (a stale link)" {
	ln -s "$(command -v amp)" "$BATS_TEST_TMPDIR/amp-stauts"
	run -2 --separate-stderr "$BATS_TEST_TMPDIR/amp-stauts"
	assert_equal "$stderr" "amp: 'stauts' is not an amp command. See 'amp --help'.

The most similar command is
	status"
}

@test "a typo holding terminal control is shown escaped, and still gets its hint" {
	run -2 --separate-stderr amp $'stat\x1bus'
	[[ $stderr == "amp: 'stat\\x1bus' is not an amp command. See 'amp --help'."* ]] || fail "$stderr"
	[[ $stderr != *$'\x1b'* ]] || fail "raw escape in: $stderr"
}

@test "amp help groups the commands (write, read, enforce, share, administer), every shipped command once, within 80 columns" {
	run -0 amp help
	assert_line " write to the SSOT"
	assert_line " read it"
	assert_line " enforce the protocol"
	assert_line " share it"
	assert_line " administer it"
	local listed shipped
	listed=$(awk '/^   [a-z]/ { print $1 }' <<< "$output" | sort)
	shipped=$(ls "$AMP_SRC"/cmd/amp-*.c | sed 's|.*/amp-||; s|\.c$||' | sort)
	assert_equal "$listed" "$shipped"
	run awk 'length > 80' <<< "$output"
	assert_output ""
	run -0 amp --help
	run awk 'length > 80' <<< "$output"
	assert_output ""
	# the groups in that order
	run -0 bash -c "amp help | grep '^ [a-z]'"
	assert_output " write to the SSOT
 read it
 enforce the protocol
 share it
 administer it"
}

@test "amp help lists every exit status amp(1) documents" {
	run -0 amp help
	local code
	for code in $(sed -n '/^# EXIT STATUS/,/^# /s/^\*\([0-9]*\)\*$/\1/p' "$AMP_SRC/share/man/amp.1.scd"); do
		[[ $output == *" $code "* ]] || fail "exit $code is not in amp help"
	done
	[[ $output == *"6 amp"$'\n'"claim: another instance holds the task."* ]] || fail "$output"
}
