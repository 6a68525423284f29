#!/usr/bin/env bats
# Running out of memory: amp fails with exit 4 and says so, never crashes,
# never prints a record other than the one stored, never takes an
# allocation that failed for a fact about the SSOT, and leaves no cache
# that a later run reads wrong.  Allocations are refused by
# test/failalloc.c, an LD_PRELOAD library that fails the chosen calls of a
# size range, as a process near its memory limit sees them (large ones
# refused while small ones still succeed).

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup_file() {
	cc -std=c11 -O2 -shared -fPIC -o "$BATS_FILE_TMPDIR/failalloc.so" \
		"$BATS_TEST_DIRNAME/failalloc.c" -ldl
}

setup() {
	# AddressSanitizer's own malloc comes before any LD_PRELOAD's
	[ -z "${AMP_SANITIZER_REPORTS:-}" ] || skip "allocations cannot be refused under make asan"
	make_ssot
	T=T-2026-044
}

# refusing FROM SPAN MIN MAX CMD...: runs CMD with the calls of MIN..MAX
# bytes numbered FROM..FROM+SPAN-1 refused; sets rc, and CMD's output in
# $BATS_TEST_TMPDIR/out and its errors in $BATS_TEST_TMPDIR/err.
refusing() {
	local from=$1 span=$2 min=$3 max=$4
	shift 4
	rc=0
	AMP_FAIL_FROM=$from AMP_FAIL_SPAN=$span AMP_FAIL_MIN=$min AMP_FAIL_MAX=$max \
		LD_PRELOAD="$BATS_FILE_TMPDIR/failalloc.so" "$@" \
		> "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" || rc=$?
}

# calls MIN MAX CMD...: how many calls of MIN..MAX bytes CMD makes.
calls() {
	local min=$1 max=$2
	shift 2
	AMP_FAIL_COUNT=1 AMP_FAIL_MIN=$min AMP_FAIL_MAX=$max \
		LD_PRELOAD="$BATS_FILE_TMPDIR/failalloc.so" "$@" 2>&1 >/dev/null |
		sed -n 's/^failalloc: //p'
}

# same_or_failed WANT WHAT: the run above printed WANT's bytes, or failed
# with exit 4 saying it ran out of memory.  Counts the failures in oom.
same_or_failed() {
	if [ $rc -eq 0 ]; then
		cmp -s "$1" "$BATS_TEST_TMPDIR/out" ||
			fail "$2: exit 0 with other output: $(diff "$1" "$BATS_TEST_TMPDIR/out" | cut -c1-200 | head -4)"
	else
		[ $rc -eq 4 ] || fail "$2: exit $rc: $(head -c 300 "$BATS_TEST_TMPDIR/err")"
		grep -Eqi "out of memory|cannot allocate memory" "$BATS_TEST_TMPDIR/err" ||
			fail "$2: exit 4 without saying memory ran out: $(head -c 300 "$BATS_TEST_TMPDIR/err")"
		oom=$((oom + 1))
	fi
}

@test "amp show while its large allocations fail prints the message as stored or fails with exit 4: jansson's lexer, which drops a byte when an append fails, and a blob read that failed for memory are never taken for the record" {
	python3 - "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/big.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["description"] = "d" * 60000
print(json.dumps(doc))
PY
	D=$(amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/big.json")
	amp show "$D" > "$BATS_TEST_TMPDIR/want"
	n=$(calls 32768 1000000 amp show "$D")
	[ "$n" -ge 4 ]
	oom=0
	for ((k = 0; k < n; k++)); do
		for span in 1 2 3; do
			refusing $k $span 32768 1000000 amp show "$D"
			same_or_failed "$BATS_TEST_TMPDIR/want" "refusing calls $k..$((k + span - 1)) of 32 KiB or more"
		done
	done
	[ $oom -gt 0 ]
}

@test "amp status while libgit2's object cache cannot grow lists every task or fails with exit 4: libgit2 hands back its raw cache entry for the tree, which amp refuses instead of reading it as one, and no cache it leaves is read wrong" {
	aborted_tasks 1000 400
	amp status --all > "$BATS_TEST_TMPDIR/want"
	state=$(git rev-parse --git-common-dir)/amp
	oom=0
	# the cache's hash map grows by powers of two: 4, 8 and 16 KiB here
	for size in 4096 8192 16384; do
		rm -f "$state"/status.*
		n=$(calls $size $size amp status --all)
		for ((k = 0; k < n; k++)); do
			rm -f "$state"/status.*
			refusing $k 1 $size $size amp status --all
			same_or_failed "$BATS_TEST_TMPDIR/want" "refusing call $k of $size bytes"
			# what that run left is read right
			run -0 amp status --all
			[ "$output" = "$(cat "$BATS_TEST_TMPDIR/want")" ] || fail "after refusing call $k of $size bytes: $output"
		done
	done
	[ $oom -gt 0 ]
}

@test "an amp-layout that cannot be read for memory is reported as such, not as a newer amp's layout" {
	send_dispatch
	state=$(git rev-parse --git-common-dir)/amp
	said=0
	# amp-layout holds "2\n": libgit2 allocates its 2 bytes and a NUL
	for k in 0 1 2 3 4; do
		rm -f "$state"/status.*
		refusing $k 1 3 3 amp status
		! grep -q "newer amp" "$BATS_TEST_TMPDIR/err" || fail "refusing call $k of 3 bytes: $(cat "$BATS_TEST_TMPDIR/err")"
		if grep -q "cannot read amp-layout: Out of memory" "$BATS_TEST_TMPDIR/err"; then
			[ $rc -eq 4 ]
			said=1
		fi
	done
	[ $said -eq 1 ]
	# a layout amp does not know still says so
	export GIT_INDEX_FILE=$BATS_TEST_TMPDIR/index
	git read-tree refs/amp/messages
	git update-index --cacheinfo "100644,$(printf '3\n' | git hash-object -w --stdin),amp-layout"
	git update-ref refs/amp/messages "$(git commit-tree -p refs/amp/messages -m layout "$(git write-tree)")"
	unset GIT_INDEX_FILE
	rm -f "$state"/status.*
	run -4 amp status
	assert_output --partial "a newer amp's SSOT"
}
