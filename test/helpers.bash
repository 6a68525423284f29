# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Shared set-up for the bats suites: bats-support/assert/file, amp on PATH,
# and a private HOME so no test reads or writes the user's git config.
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

AMP_SRC=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
# AMP_INSTALLED_PREFIX (make installcheck): the suites run the amp installed
# there, with only its bin/ on PATH, and read its schemas and completions,
# never the build tree's bin/ or schemas/ (AMP_SRC is still the source, for
# the README and share/*.sh).  Otherwise the build tree's (AMP_BIN).
if [ -n "${AMP_INSTALLED_PREFIX:-}" ]; then
	AMP_BIN=$AMP_INSTALLED_PREFIX/bin
	AMP_SCHEMAS=$AMP_INSTALLED_PREFIX/share/amp/schemas
	AMP_BASH_COMPLETION=$AMP_INSTALLED_PREFIX/share/bash-completion/completions/amp
	AMP_ZSH_COMPLETION=$AMP_INSTALLED_PREFIX/share/zsh/site-functions
	PATH=$(tr ':' '\n' <<< "$PATH" | grep -vxF -e "$AMP_SRC/bin" -e "$AMP_SRC/bin/" | paste -sd:)
else
	AMP_BIN=${AMP_BIN:-$BATS_TEST_DIRNAME/../bin}
	AMP_SCHEMAS=$AMP_SRC/schemas
	AMP_BASH_COMPLETION=$AMP_SRC/completions/amp.bash
	AMP_ZSH_COMPLETION=$AMP_SRC/completions
fi
export AMP_BIN
PATH=$AMP_BIN:$PATH

# The build tree's programs, for the tests of the build itself (make
# bin/amp, make install), which run under make installcheck too: there
# AMP_BIN is the installed bin/ and make passes its own as AMP_TEST_BIN.
BUILD_BIN=${AMP_TEST_BIN:-$AMP_BIN}
FIXTURES=$BATS_TEST_DIRNAME/fixtures
export HOME=$BATS_TEST_TMPDIR/home GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1 TZ=UTC
unset AMP_REPO AMP_ROLE AMP_NOW
mkdir -p "$HOME"
# The suites run on the layout amp init writes by default (2, store.h
# "Layout"), the one users get; AMP_TEST_LAYOUT=1 runs them on layout 1.
# A test finds a record with task_path / record_path below, never by a
# layout's literal path.
[ -z "${AMP_TEST_LAYOUT:-}" ] || git config --global amp.layout "$AMP_TEST_LAYOUT"

# ssot_layout: the layout of refs/amp/messages's tree here, 1 or 2.
# shellcheck source=share/layout.bash
. "$AMP_SRC/share/layout.bash"

# init_layout: the layout amp init writes here (git config amp.layout, else
# amp's default, 2).
init_layout() {
	git config amp.layout || echo 2
}

# task_path TASK [LAYOUT]: TASK's directory in the tree of LAYOUT (default:
# that of refs/amp/messages), as amp_store_task_dir writes it.
task_path() {
	local n=${1:7} layout=${2:-$(ssot_layout)} s
	s=${n:0:${#n}-2}
	if [ "$layout" = 1 ]; then
		echo "tasks/${1:2:4}/$s/$1"
	elif [ ${#s} -le 2 ]; then
		echo "tasks/${1:2:4}/0/$s/$1"
	else
		echo "tasks/${1:2:4}/${s:0:${#s}-2}/${s: -2}/$1"
	fi
}

# record_path TASK NAME [LAYOUT]: where the record NAME (000001.msg.x.json)
# of TASK goes in LAYOUT (default: that of refs/amp/messages).
record_path() {
	local layout=${3:-$(ssot_layout)}
	if [ "$layout" = 1 ]; then
		echo "$(task_path "$1" 1)/$2"
	else
		echo "$(task_path "$1" 2)/${2:0:2}/${2:2:2}/$2"
	fi
}

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

# Every git repository the test made (the SSOT, hubs, clones, work
# repositories: each git directory under $BATS_TEST_TMPDIR) must pass
# `git fsck --strict`: what amp writes must be what git itself accepts.
# A test that damages a repository on purpose names it with fsck_exempt.
# Fails (printing fsck's report) on the first that does not pass.
fsck_all_repos() {
	local d out=$BATS_TEST_TMPDIR/fsck-strict.out
	while IFS= read -r d; do
		d=${d%/HEAD}
		if [ ! -d "$d/objects" ] || [ ! -d "$d/refs" ]; then
			continue
		fi
		fsck_exempted "$d" && continue
		git --git-dir="$d" fsck --strict --no-dangling > "$out" 2>&1 || {
			echo "# git fsck --strict fails on $d:"
			cat "$out"
			return 1
		}
	done < <(find "$BATS_TEST_TMPDIR" -name HEAD -type f -not -path '*/logs/*' -not -path '*/refs/*' 2> /dev/null)
	return 0
}

# fsck_exempt DIR REASON: fsck_all_repos skips the repository at DIR (a
# work tree or a git directory), which the test damaged on purpose.
fsck_exempt() {
	local d=$1
	[ ! -d "$d/.git" ] || d=$d/.git
	FSCK_EXEMPT="${FSCK_EXEMPT:-}$d"$'\n'
}

fsck_exempted() {
	local e
	while IFS= read -r e; do
		[ -n "$e" ] && [ "$(cd "$1" && pwd -P)" = "$(cd "$e" 2> /dev/null && pwd -P)" ] && return 0
	done <<< "${FSCK_EXEMPT:-}"
	return 1
}

# The suites' teardown unless a file has its own, which calls
# fsck_all_repos (through fsck_teardown or clones_teardown).
teardown() {
	fsck_all_repos
}
