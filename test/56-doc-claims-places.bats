#!/usr/bin/env bats
# Issue 34: the README is a front page, and the reference it held lives in
# the man pages (share/man/) and share/doc/.  Every sentence that claims amp
# checks or guarantees something keeps its test: this suite follows each
# sentence to its place, so it fails when the sentence disappears or its
# test does; it keeps the README short and its links true, amp-config(7)
# complete, and runs the tutorial's team on a hub as written.

bats_require_minimum_version 1.5.0

load helpers
load enforcer

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# The claimed sentences: 'file | sentence | test file | test name'.  The
# sentence is matched as text (markup and line breaks do not count).
claims() {
	cat <<-'CLAIMS'
	share/man/amp.1.scd | first from $AMP_EXEC_PATH, then next to amp itself | 56-doc-claims.bats | amp looks for amp-<command> in AMP_EXEC_PATH before its own directory
	share/man/amp.1.scd | amp's own commands are built into amp itself, as git's builtins are | 00-driver.bats | amp's commands are one program: amp-<command> is a link to amp that runs its command, and amp runs it without a second program
	share/man/amp-config.7.scd | The messages ref and the error log ref. | 56-doc-claims.bats | git config amp.errorsRef moves the error log, and amp errors reads it there
	share/man/amp.1.scd | a bidirectional override or isolate (U+202A..U+202E, U+2066..U+2069) as \uHHHH, a byte that is not UTF-8 as \xHH, and a backslash as \\ | 56-doc-claims.bats | human output escapes bidi overrides and isolates, a tab, DEL and a backslash; --json keeps them
	share/man/amp.1.scd | the rejected messages, newest first, with their reasons | 56-doc-claims.bats | amp errors lists the rejected messages newest first
	README.md | Colour only on a terminal, never with NO_COLOR set | 56-doc-claims.bats | amp status colours only on a terminal, and never with NO_COLOR set
	share/doc/validator.md | code points, not bytes, whatever the locale | 56-doc-claims.bats | patterns match code points, not bytes, also when the locale is C
	share/man/amp.1.scd | Every command takes --repo DIR (default: the repository found from the current directory, as git finds it; bare repositories work) | 56-doc-claims.bats | without --repo, amp finds the repository from a subdirectory, as git does
	README.md | Errors go to stderr as amp <cmd>: error: <json pointer>: <reason>; results go to stdout. | 56-doc-claims.bats | results go to stdout and errors to stderr, never the other way
	share/man/amp-config.7.scd | ISO 8601 with offset, or 0..253402300799 s | 56-doc-claims.bats | AMP_NOW in Unix seconds is the same instant as its ISO 8601 form
	share/doc/validator.md | Remaining differences from ECMA-262: | 56-doc-claims.bats | amp validate refuses the pattern syntax validator.md lists, as a schema error
	share/doc/rules.md | A missing, corrupt or foreign state file (other ref, other amp.lockThreshold | 56-doc-claims.bats | watch rescans when amp.lockThreshold changes, and --json lines carry the six documented keys
	share/doc/rules.md | a refused one is logged on refs/amp/errors | 56-doc-claims.bats | a refused ACK is logged on the error log with its reason
	share/man/amp.1.scd | the commands that write (send, ack, verdict, escalate, resume, approve, abort, heartbeat) first check that amp init has been run | 56-doc-claims.bats | ack, verdict, resume, approve, abort and heartbeat also say to run amp init; a file name need not be UTF-8
	share/man/amp.1.scd | except the file names of --repo, --payload and --envelope | 56-doc-claims.bats | ack, verdict, resume, approve, abort and heartbeat also say to run amp init; a file name need not be UTF-8
	share/man/amp-protocol.7.scd | a refused message is never lost either: its bytes and reasons go to refs/amp/errors, and when that log cannot be written the sender is told | 56-doc-claims.bats | a refused envelope whose file name is not UTF-8 is logged, the name escaped
	share/doc/json.md | the newest message that was ACKed (or needs no ACK), not counting escalations and rejections | 56-doc-claims.bats | last_successful_msg_id: the newest ACKed message, never an escalation or a rejected verdict
	share/doc/rules.md | when it has not moved, only the timers are evaluated against AMP_NOW | 56-doc-claims.bats | a watch pass over an unchanged SSOT reads no object
	share/doc/rules.md | loops until SIGINT/SIGTERM and exits 0 | 56-doc-claims.bats | watch --interval stops on SIGINT too, and exits 0
	share/man/amp-protocol.7.scd | one table in lib/protocol/task.c (amp_transitions[]) says what each message and control record may do in each state | 56-doc-claims.bats | amp-protocol(7)'s transition table is amp_transitions[] of lib/protocol/task.c, row for row
	share/man/amp-sharing.7.scd | put valid-before="T" between the principal and the old key, and add a line for the new key with the same principal and valid-after="T" | 30-strict.bats | key rotation: commits of a key retired with valid-before verify at their commit time
	share/man/amp-sharing.7.scd | The documented order, on a clone that is in step with the hub (test/30-strict.bats follows it) | 30-strict.bats | strict mode in its documented order is clean
	share/doc/internals.md | share/git2-link.sh decides, by linking a small program with each, and caches its answer in build/libgit2/link | 93-man-install.bats | share/git2-link.sh: LIBGIT2=archive links Debian's libgit2.a, LIBGIT2=system the shared one
	share/doc/storage.md | a writer outside amp (git fetch, git update-ref) can still never be overwritten: amp rebuilds on what it wrote and tries again | test_store | test_outside_writer
	share/doc/storage.md | also writes the reflog entry (20 "amp moves its ref as git does") | 20-send.bats | amp moves its ref as git does
	share/man/amp-protocol.7.scd | Whatever amp accepts, amp can read back, ACK and show | 51-limits.bats | size: a record stored as exactly 1048576 bytes
	share/man/amp-tutorial.7.scd | the tour of README.md, run as written by test/57-readme-tour.bats | 57-readme-tour.bats | every shell block of the README's tour runs as written, and the task ends approved
	share/man/amp-tutorial.7.scd | test/56-doc-claims-places.bats runs the blocks of this section as written | 56-doc-claims-places.bats | the tutorial's team on a hub runs as written: three clones, the dispatch ACKed through the hub
	README.md | make demo # installs what is missing, builds, runs a whole task on a throw-away repository | 90-demo.bats | the demo runs a whole task to approved
	CLAIMS
}

@test "every claimed sentence is where its test says, and the test is there" {
	run -0 python3 "$AMP_SRC/test/doc-claims.py" claims "$AMP_SRC" < <(claims)
	assert_output --regexp '^[0-9]+ claims checked$'
	[ "${output%% *}" -ge 25 ]
}

@test "the claims check fails when a sentence is gone or its test is missing" {
	mkdir -p src/share/man src/test
	cp "$AMP_SRC/share/man/amp.1.scd" src/share/man/
	cp "$AMP_SRC/test/56-doc-claims.bats" src/test/
	line='share/man/amp.1.scd | first from $AMP_EXEC_PATH, then next to amp itself | 56-doc-claims.bats | amp looks for amp-<command> in AMP_EXEC_PATH before its own directory'
	run -0 python3 "$AMP_SRC/test/doc-claims.py" claims src <<< "$line"
	# the sentence rewritten
	sed -i 's/then next to \*amp\* itself/then beside *amp*/' src/share/man/amp.1.scd
	run -1 python3 "$AMP_SRC/test/doc-claims.py" claims src <<< "$line"
	assert_line --partial "share/man/amp.1.scd: the claim is gone: first from"
	# the test renamed
	cp "$AMP_SRC/share/man/amp.1.scd" src/share/man/
	sed -i 's/^@test "amp looks for amp-<command> in AMP_EXEC_PATH/@test "amp runs/' src/test/56-doc-claims.bats
	run -1 python3 "$AMP_SRC/test/doc-claims.py" claims src <<< "$line"
	assert_line --partial "56-doc-claims.bats: no test 'amp looks for amp-<command>"
}

@test "every test a promise of amp-protocol(7) or a hub of amp-sharing(7) names is a test of that file" {
	run -0 python3 "$AMP_SRC/test/doc-claims.py" held-by "$AMP_SRC" \
		"$AMP_SRC/share/man/amp-protocol.7.scd" "$AMP_SRC/share/man/amp-sharing.7.scd"
	assert_output --regexp '^[0-9]+ named tests checked$'
	[ "${output%% *}" -ge 40 ]
	# a name that is no test is caught
	sed 's/Held by: 25 "senders killed at random/Held by: 25 "senders shot at random/' \
		"$AMP_SRC/share/man/amp-protocol.7.scd" > amp-protocol.7.scd
	run -1 python3 "$AMP_SRC/test/doc-claims.py" held-by "$AMP_SRC" amp-protocol.7.scd
	assert_line --partial 'no test of 25 named "senders shot at random'
}

@test "the README is a front page: at most 300 lines, make demo and make test, and every man page it links exists" {
	local readme=$AMP_SRC/README.md link page n=0
	[ "$(wc -l < "$readme")" -le 300 ]
	grep -q '^make demo ' "$readme"
	grep -q '^make test ' "$readme"
	grep -q '^<!-- tour -->$' "$readme"
	# [name(N)](share/man/name.N.scd): the page exists, under the name shown
	while read -r link; do
		n=$((n + 1))
		page=${link#*](}
		page=${page%)}
		[ -f "$AMP_SRC/$page" ] || fail "README links $page, which does not exist"
		name=${link#[}
		name=${name%%]*}
		[ "share/man/${name%(*}.${name//[^0-9]/}.scd" = "$page" ] || fail "README shows $name for $page"
	done < <(grep -o '\[[a-z0-9-]*([0-9])\](share/man/[^)]*)' "$readme")
	[ "$n" -ge 5 ]
	# the four pages of the reference are linked
	for page in amp-tutorial.7 amp-protocol.7 amp-sharing.7 amp-config.7; do
		grep -qF "(share/man/$page.scd)" "$readme" || fail "README does not link $page"
	done
}

@test "amp-config(7) lists every git config key lib/ and cmd/ read, each with a default" {
	local key missing=""
	# gc.lock is the repack's lock file (storage.md), a name of that shape
	for key in $(grep -rhoE '"(amp|core|gc)\.[a-zA-Z]+"' "$AMP_SRC/lib" "$AMP_SRC/cmd" | tr -d '"' | grep -vx 'gc\.lock' | sort -u); do
		# a row of the CONFIGURATION table: the key, then its default
		sed -n '/^# CONFIGURATION/,/^# /p' "$AMP_SRC/share/man/amp-config.7.scd" |
			grep -A1 -E "^\|  \*$key\*" | grep -qE '^:  .' || missing="$missing $key"
		# and what it means
		sed -n '/^# MEANING/,/^# /p' "$AMP_SRC/share/man/amp-config.7.scd" | grep -qF "*$key*" ||
			missing="$missing $key(meaning)"
	done
	assert_equal "$missing" ""
}

@test "the tutorial's team on a hub runs as written: three clones, the dispatch ACKed through the hub" {
	run -0 python3 "$AMP_SRC/test/doc-claims.py" blocks "$AMP_SRC/share/man/amp-tutorial.7.scd" "; hub" "; /hub"
	script=$output
	[[ "$script" == *"amp hook install --server"* ]]
	cd "$BATS_TEST_TMPDIR"
	unset AMP_NOW AMP_ROLE AMP_REPO
	run -0 bash -euo pipefail -c "$script"
	assert_output --partial "T-2026-001  in_progress"
	# every clone and the hub hold the same SSOT, with the ACK in it
	local tip
	tip=$(git --git-dir=hub.git rev-parse refs/amp/messages)
	for clone in coordinator executor reviewer; do
		(cd $clone && amp sync > /dev/null)
		assert_equal "$(git -C $clone rev-parse refs/amp/messages)" "$tip"
	done
	# the reviewer's clone, which wrote nothing, sees the dispatch ACKed
	cd reviewer
	assert_equal "$(amp status T-2026-001 --json | json_get 'd["state"]')" in_progress
	assert_equal "$(amp status T-2026-001 --json | json_get 'd["messages"][0]["acked_by"]')" executor
}

@test "amp help tutorial, protocol and sharing show the section 7 guides, as amp help config does" {
	export MANPAGER=cat MANWIDTH=80
	mkdir -p "$BATS_TEST_TMPDIR/mp/man7"
	local guide
	for guide in "tutorial:one task from dispatch to approval" \
		"protocol:the SSOT, the task states and the rules" \
		"sharing:share the SSOT between clones"; do
		MANPATH=$BATS_TEST_TMPDIR/mp run amp help "${guide%%:*}"
		assert_success
		assert_output --partial "amp-${guide%%:*} - ${guide#*:}"
	done
	# a command is still section 1
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help sync
	assert_success
	assert_output --partial "amp-sync - "
}
