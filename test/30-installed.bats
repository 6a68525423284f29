#!/usr/bin/env bats
# Issue 30: what breaks outside the build tree.  amp as `make install` lays
# it out (amp in <prefix>/bin, its commands in <prefix>/libexec/amp), with
# only that bin/ on PATH: the hooks it writes run; the build's bin/ holds
# no stale program and the driver runs none; every program the suites call
# is one `make deps` installs; no test skips after make deps; and the
# suites' own teardown check (git fsck --strict) catches what it should.
# Under make installcheck the tree is AMP_INSTALLED_PREFIX; under make test
# this file installs the build tree into a DESTDIR of its own.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup_file() {
	if [ -n "${AMP_INSTALLED_PREFIX:-}" ]; then
		export INST=$AMP_INSTALLED_PREFIX
	else
		make -s -C "$AMP_SRC" BUILD="${AMP_TEST_BUILD:-$AMP_SRC/build}" BIN="$AMP_BIN" \
			DESTDIR="$BATS_FILE_TMPDIR/dest" install > "$BATS_FILE_TMPDIR/install.log" 2>&1 ||
			{ cat "$BATS_FILE_TMPDIR/install.log" >&3; return 1; }
		export INST=$BATS_FILE_TMPDIR/dest/usr/local
	fi
}

# Only the installed amp, and the system's programs, on PATH.
installed_path() {
	export PATH=$INST/bin:/usr/local/bin:/usr/bin:/bin
	unset AMP_EXEC_PATH AMP_SCHEMA_DIR
}

@test "installed: amp is in <prefix>/bin, its commands only in <prefix>/libexec/amp, and it runs them" {
	if [ -n "${AMP_INSTALLED_PREFIX:-}" ]; then
		# make installcheck: the suites' own PATH has no build tree in it
		[[ ":$PATH:" != *":$AMP_SRC/bin:"* ]] || fail "the build tree's bin/ is on PATH"
		assert_equal "$(command -v amp)" "$AMP_INSTALLED_PREFIX/bin/amp"
	fi
	installed_path
	assert_equal "$(command -v amp)" "$INST/bin/amp"
	run -1 command -v amp-hook
	assert_file_exist "$INST/libexec/amp/amp-hook"
	run -0 amp --version
	assert_output --partial "(AMP/1.0)"
	run -0 amp status --help
	assert_output --partial "usage: amp status"
}

@test "installed: the --server hooks exec the installed amp: a valid push is accepted, a bad one refused by amp's check" {
	installed_path
	make_ssot
	HUB=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$HUB"
	run -0 amp hook install --server --repo "$HUB"
	assert_line "installed $HUB/hooks/pre-receive"
	send_dispatch
	git remote add hub "$HUB"
	run git push hub 'refs/amp/*:refs/amp/*'
	assert_success
	refute_output --partial "not found"
	assert_equal "$(git -C "$HUB" rev-parse refs/amp/messages)" "$(git rev-parse refs/amp/messages)"
	# the hook runs the driver by its absolute path, which is there
	run -0 grep -F "'$INST/bin/amp' hook pre-receive" "$HUB/hooks/pre-receive"
	# a file that is no AMP record, committed by hand, is refused by amp
	local tip blob tree c
	tip=$(git rev-parse refs/amp/messages)
	blob=$(echo '{"not": "a record"}' | git hash-object -w --stdin)
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git read-tree "$tip"
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git update-index --add --cacheinfo "100644,$blob,$(task_path "$T")/junk.json"
	tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git write-tree)
	c=$(git commit-tree "$tree" -p "$tip" -m junk)
	git update-ref refs/amp/messages "$c"
	run git push hub 'refs/amp/*:refs/amp/*'
	assert_failure
	assert_output --partial "amp hook:"
	assert_equal "$(git -C "$HUB" rev-parse refs/amp/messages)" "$tip"
}

@test "installed: the --work hooks exec the installed amp: a commit on a feature branch is made, one on main refused" {
	installed_path
	make_ssot
	local ssot=$PWD work=$BATS_TEST_TMPDIR/work
	work_repo "$work" "$ssot"
	send_dispatch
	run -0 amp hook install --work --repo "$work"
	git -C "$work" checkout -q -b feature/watch-breath-v2
	AMP_ROLE=executor run git -C "$work" commit --allow-empty -m "on the feature branch"
	assert_success
	refute_output --partial "not found"
	assert_equal "$(git -C "$work" log -1 --format=%s)" "on the feature branch"
	git -C "$work" checkout -q main
	AMP_ROLE=executor run git -C "$work" commit --allow-empty -m "on main"
	assert_failure
	assert_output --partial "amp hook: error: main: the executor may not commit on protected branch 'main'"
	assert_equal "$(git -C "$work" log -1 --format=%s main)" initial
	run -0 grep -F "'$INST/bin/amp' hook pre-commit" "$work/.git/hooks/pre-commit"
}

@test "installed: amp help, the schemas and the bash completion come from the prefix" {
	installed_path
	run -0 env MANPAGER=cat MANWIDTH=80 MANPATH="$BATS_TEST_TMPDIR/none" amp help send
	assert_output --partial "amp-send - build, validate and commit a message to the SSOT"
	run -0 amp schema task_dispatch
	assert_output --partial '"$id"'
	run -0 bash -c 'source "$1" && declare -F _amp' _ "$INST/share/bash-completion/completions/amp"
}

# amp_variant FILE OLD NEW: a copy of the built amp at FILE, whose bytes
# OLD are replaced by NEW (as long; \0 is a NUL): another build of amp, as
# a link left from an older build is.
amp_variant() {
	/usr/bin/python3 - "$AMP_BIN/amp" "$1" "$2" "$3" <<-'PY'
	import sys
	data = open(sys.argv[1], "rb").read()
	old, new = (a.encode().replace(b"\\0", b"\0") for a in sys.argv[3:5])
	assert len(old) == len(new) and old in data, (old, new)
	open(sys.argv[2], "wb").write(data.replace(old, new))
	PY
	chmod +x "$1"
}

@test "the driver never runs another build of amp left next to it or on PATH, but runs a user's program there" {
	local d=$BATS_TEST_TMPDIR/d other=$BATS_TEST_TMPDIR/other
	mkdir -p "$d" "$other"
	cp "$AMP_BIN/amp" "$d/amp"
	# an older amp-send next to amp (bin/amp relinked without its links)
	amp_variant "$d/amp-send" "usage: amp send" "usage: OLD send"
	run -0 "$d/amp-send" --help
	assert_output --partial "usage: OLD send"
	run -0 "$d/amp" send --help
	assert_output --partial "usage: amp send"
	# a command since removed (here: the older build calls heartbeat
	# "heartbxat": every string that ends in "heartbeat", since the linker
	# may store the name as the tail of a longer one), next to amp and on
	# PATH: not an amp command
	amp_variant "$d/amp-heartbxat" 'heartbeat\0' 'heartbxat\0'
	run -0 "$d/amp-heartbxat" --help
	assert_output --partial "usage: amp heartbeat"
	run -2 "$d/amp" heartbxat --help
	assert_output "amp: 'heartbxat' is not an amp command. See 'amp --help'.

The most similar command is
	heartbeat"
	mv "$d/amp-heartbxat" "$other/"
	PATH=$other:$PATH run -2 "$d/amp" heartbxat --help
	assert_output "amp: 'heartbxat' is not an amp command. See 'amp --help'.

The most similar command is
	heartbeat"
	# a user's own amp-foo, next to amp or on PATH, still runs
	printf '#!/bin/sh\necho "foo: $*"\n' > "$d/amp-foo"
	printf '#!/bin/sh\necho "bar: $*"\n' > "$other/amp-bar"
	chmod +x "$d/amp-foo" "$other/amp-bar"
	run -0 "$d/amp" foo 1
	assert_output "foo: 1"
	PATH=$other:$PATH run -0 "$d/amp" bar 2
	assert_output "bar: 2"
	# $AMP_EXEC_PATH is the user's choice: whatever is there runs
	AMP_EXEC_PATH=$other run -0 "$d/amp" heartbxat --help
	assert_output --partial "usage: amp heartbeat"
}

@test "make bin/amp links every bin/amp-<command> to the new amp and removes the bin/amp-* of no command" {
	local bin=$BATS_TEST_TMPDIR/bin
	mkdir -p "$bin"
	cp "$BUILD_BIN/amp" "$bin/amp-gone"
	cp "$BUILD_BIN/amp" "$bin/amp-send"
	# under make asan the objects need the sanitizers' runtime to link
	run -0 make -s -C "$AMP_SRC" BUILD="${AMP_TEST_BUILD:-$AMP_SRC/build}" BIN="$bin" \
		${AMP_SANITIZER_REPORTS:+LDFLAGS=-fsanitize=address,undefined} "$bin/amp"
	assert_output --partial "rm -f $bin/amp-gone (no such command)"
	assert_file_not_exist "$bin/amp-gone"
	local c n=0
	for c in "$AMP_SRC"/cmd/amp-*.c; do
		c=$(basename "$c" .c)
		[ "$bin/$c" -ef "$bin/amp" ] || fail "$c is not a link to the new amp"
		n=$((n + 1))
	done
	assert_equal "$(find "$bin" -name 'amp-*' | wc -l)" "$n"
}

@test "every program the suites call is of a package make deps installs (jq, which 82-work-hooks runs, among them)" {
	run -0 "$AMP_SRC/test/deps-check"
	assert_output ""
	# without jq in the list, it is named
	run -1 "$AMP_SRC/test/deps-check" $(make -s -C "$AMP_SRC" deps-list | sed 's/ jq\b//')
	assert_output --partial "jq /usr/bin/jq jq"
}

@test "no test skips after make deps: each skip's condition holds, and there is no other skip" {
	# the skips of test/ (a new one belongs here, with what makes it hold)
	run -0 bash -c "grep -nw skip '$AMP_SRC'/test/*.bats '$AMP_SRC'/test/*.bash |
		grep -v -e '30-installed.bats:' -e '^[^:]*:[0-9]*:@test ' -e '^[^:]*:[0-9]*:[[:space:]]*#' -e '--skip='"
	assert_equal "${#lines[@]}" 4
	assert_line --regexp "/15-crosscheck.bats:[0-9]+:.*import jsonschema.* \|\| skip"
	# make asan's only: AddressSanitizer's malloc comes before LD_PRELOAD's
	assert_line --regexp "/39-oom.bats:[0-9]+:.*AMP_SANITIZER_REPORTS.* \|\| skip"
	assert_line --regexp "/93-man-install.bats:[0-9]+:.*rev-parse --git-dir .* \|\| skip"
	assert_line --regexp "/93-man-install.bats:[0-9]+:.*libgit2\.a\" \] \|\| skip"
	# python3-jsonschema (make deps) for 15-crosscheck
	run -0 /usr/bin/python3 -c 'import jsonschema'
	# libgit2-dev ships libgit2.a (Debian 12)
	run -0 dpkg -L libgit2-dev
	assert_line --regexp "/libgit2\.a$"
}

@test "the suites' teardown fails a test whose repository git fsck --strict refuses, unless exempted" {
	make_repo
	git commit -q --allow-empty -m one
	run -0 fsck_all_repos
	# a tree with the same name twice: git accepts to write it, not to check it
	local b t c
	b=$(echo x | git hash-object -w --stdin)
	t=$(printf '100644 blob %s\tf\n100644 blob %s\tf\n' "$b" "$b" | git mktree)
	c=$(git commit-tree "$t" -m dup)
	git update-ref refs/heads/dup "$c"
	run -1 fsck_all_repos
	assert_output --partial "git fsck --strict fails on $BATS_TEST_TMPDIR/repo/.git"
	assert_output --partial "duplicateEntries"
	# a bare one too, wherever it is under the test's directory
	git clone -q --bare "$BATS_TEST_TMPDIR/repo" "$BATS_TEST_TMPDIR/deep/er/hub.git"
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a duplicate tree entry, made above"
	run -1 fsck_all_repos
	assert_output --partial "git fsck --strict fails on $BATS_TEST_TMPDIR/deep/er/hub.git"
	fsck_exempt "$BATS_TEST_TMPDIR/deep/er/hub.git" "the same tree, cloned"
	run -0 fsck_all_repos
}

@test "test/run counts a bats run that exits non-zero without a failing test as a failure" {
	mkdir -p "$BATS_TEST_TMPDIR/suite"
	printf '@test "fine" { true; }\n' > "$BATS_TEST_TMPDIR/suite/a.bats"
	# a test process killed outright: bats says "Executed 1 instead of
	# expected 2 tests" and exits 1, with no "not ok" line
	printf '@test "killed" { kill -9 $$; }\n@test "after" { true; }\n' > "$BATS_TEST_TMPDIR/suite/b.bats"
	run -1 env -u AMP_SANITIZER_REPORTS AMP_TEST_BUILD="$BATS_TEST_TMPDIR/none" "$AMP_SRC/test/run" \
		"$BATS_TEST_TMPDIR/suite/a.bats" "$BATS_TEST_TMPDIR/suite/b.bats"
	assert_line "not ok - bats exited with status 1"
	refute_line --partial "not ok 2"
	assert_line "2 passed, 1 failed, 0 skipped"
	run -0 env -u AMP_SANITIZER_REPORTS AMP_TEST_BUILD="$BATS_TEST_TMPDIR/none" "$AMP_SRC/test/run" "$BATS_TEST_TMPDIR/suite/a.bats"
	assert_line "1 passed, 0 failed, 0 skipped"
}
