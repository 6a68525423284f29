#!/usr/bin/env bats
# Durable writes (issue 12): amp's writes are fsynced (objects, packs, refs
# and their directories, by libgit2) unless git config amp.fsync is false.
# strace counts the calls of a real amp send.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
}

# syncs CMD...: the fsync and fdatasync calls CMD (and its children) make.
syncs() {
	# LeakSanitizer cannot run under ptrace (make asan)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -y -e trace=fsync,fdatasync -o "$BATS_TEST_TMPDIR/trace" "$@" > /dev/null 2>&1
	grep -cE '^[0-9]+ +f(data)?sync\(' "$BATS_TEST_TMPDIR/trace" || true
}

@test "amp send fsyncs what it writes by default, and not with git config amp.fsync false" {
	n=$(syncs amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	[ "$n" -ge 4 ] # the pack, its index, objects/pack, the ref
	# the pack and its index under their temporary names, before the renames
	[ "$(grep -cE 'sync\([0-9]+<[^>]*/objects/pack/tmp_amp_pack_' "$BATS_TEST_TMPDIR/trace")" = 2 ]
	grep -qE 'sync\([0-9]+<[^>]*/objects/pack>' "$BATS_TEST_TMPDIR/trace"
	# the ref's new id under its lock name before the rename, then its
	# directory (amp moves the ref itself: update.c move_loose_ref)
	grep -qE 'sync\([0-9]+<[^>]*/refs/amp/messages\.lock>' "$BATS_TEST_TMPDIR/trace"
	grep -qE 'sync\([0-9]+<[^>]*/refs/amp>' "$BATS_TEST_TMPDIR/trace"
	git config amp.fsync false
	n=$(syncs amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	[ "$n" = 0 ]
	# both landed
	run -0 amp status --json
	assert_output --partial T-2026-045
}

@test "a bad amp.fsync is exit 2, naming the key" {
	git config amp.fsync maybe
	run -2 amp status
	assert_output --partial "amp.fsync"
}

@test "amp import fsyncs its packs, their indexes and the pack directory by default, and not with git config amp.fsync false" {
	git config amp.checkRepo false
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 16 "$BATS_TEST_TMPDIR/l.jsonl" /dev/null 0
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 16 "$BATS_TEST_TMPDIR/m.jsonl" /dev/null 0 100
	# the pack, its index, objects/pack, the ref and its directory
	n=$(syncs amp import "$BATS_TEST_TMPDIR/l.jsonl")
	[ "$n" -ge 5 ]
	git config amp.fsync false
	n=$(syncs amp import "$BATS_TEST_TMPDIR/m.jsonl")
	[ "$n" = 0 ]
	[ "$(git ls-tree -r refs/amp/messages tasks | wc -l)" = 32 ]
}
