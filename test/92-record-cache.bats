#!/usr/bin/env bats
# A task of AMP_RECCACHE_MIN_RECORDS (64) records or more keeps its records
# parsed in <git dir>/amp/records/<task id>, keyed by blob id (lib/store/reccache.h,
# issue 12: a send into a long task must not parse every record again).
# What amp prints must be what parsing the records prints, whatever state
# the file is in.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

cache=.git/amp/records/T-2026-044

# A task of 69 records: a dispatch (ACKed), a result and a review request
# (each ACKed), a verdict with a confidence, then 31 dispatches of a second
# subtask, each ACKed: every JSON type (true, false, null, integers, a real,
# nested arrays and objects) is in it.
long_task() {
	local i
	dispatch_acked
	at 60; review_round 0
	at 100
	V=$(amp verdict $T --decision approved --confidence 0.93 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	sed 's/T-2026-044-S1/T-2026-044-S2/' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/s2.json"
	for ((i = 0; i < 31; i++)); do
		at $((200 + i * 10))
		D=$(send_s2)
		at $((200 + i * 10 + 5))
		amp ack "$D" --from executor > /dev/null
	done
}

# send_s2: a new round of the second subtask; prints its msg_id.
send_s2() {
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/s2.json"
}

setup_file() {
	# One task built once, copied by each test (its 69 writes take a while).
	cd "$BATS_FILE_TMPDIR" || return 1
	BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR make_ssot
	BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR long_task
	echo "$V" > "$BATS_FILE_TMPDIR/verdict_id"
	[ "$(git ls-tree -r --name-only "refs/amp/messages:$(task_path "$T")" | wc -l)" -eq 69 ]
	rm -rf "$BATS_FILE_TMPDIR/repo/$cache"
}

setup() {
	cp -a "$BATS_FILE_TMPDIR/repo" "$BATS_TEST_TMPDIR/repo"
	cp -a "$BATS_FILE_TMPDIR/p" "$BATS_TEST_TMPDIR/p"
	cd "$BATS_TEST_TMPDIR/repo" || return 1
	V=$(cat "$BATS_FILE_TMPDIR/verdict_id")
	at 600
}

# reads: what the commands that read the whole task print.
reads() {
	amp status $T --json
	amp show "$V" --context --json
	amp status $T
}

# reads_u: the same, and message $U.
reads_u() {
	reads
	amp show "$U" --json
}

# trace_send: the counts a send into the task reports (AMP_TRACE).
trace_send() {
	AMP_TRACE=1 send_s2 2>&1 > /dev/null | sed -n 's/^amp send: trace: //p'
}

@test "a long task's records are parsed once: the next send parses only what is new" {
	[ ! -e "$cache" ]
	run -0 trace_send
	assert_output --regexp 'records_parsed=69 records_cached=0$'
	[ -s "$cache" ]
	# the dispatch just written is the one record not in the cache
	run -0 trace_send
	assert_output --regexp 'records_parsed=1 records_cached=69$'
	# the file is written again once 16 records came from git, not before
	cp "$cache" "$BATS_TEST_TMPDIR/before"
	for ((i = 3; i < 16; i++)); do
		send_s2 > /dev/null
	done
	run -0 trace_send
	assert_output --regexp 'records_parsed=15 records_cached=69$'
	cmp "$cache" "$BATS_TEST_TMPDIR/before"
	run -0 trace_send
	assert_output --regexp 'records_parsed=16 records_cached=69$'
	! cmp -s "$cache" "$BATS_TEST_TMPDIR/before" || false
	run -0 trace_send
	assert_output --regexp 'records_parsed=1 records_cached=85$'
}

@test "what amp prints of a long task is the same with its record cache as without" {
	expected=$(reads)
	[[ $expected == *'"confidence": 0.93'* ]]
	[[ $expected == *'"criteria_met": ['* ]]
	[ -s "$cache" ]
	run -0 reads
	assert_output "$expected"
	# after a new record: that one from git, the others from the cache
	send_s2 > /dev/null
	cached=$(reads)
	rm -f "$cache"
	run -0 reads
	assert_output "$cached"
	# text beyond ASCII, decoded from the cache as parsed from git
	$PY - "$BATS_TEST_TMPDIR/p/s2.json" "$BATS_TEST_TMPDIR/p/u.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["description"] = "na\u00efve \U0001F600 \u00fc \u2028 \\ \" \u0007 <b>"
json.dump(d, open(sys.argv[2], "w"))
PY
	U=$(amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/u.json")
	rm -f "$cache"
	expected=$(reads_u)
	[[ $expected == *'"description": "naïve 😀 ü'* ]]
	run -0 reads_u
	assert_output "$expected"
	# every record of it came from the cache
	run -0 trace_send
	assert_output --regexp 'records_parsed=0 records_cached=7[0-9]$'
}

@test "a record cache that is not amp's, damaged, cut short or empty is ignored and written again" {
	expected=$(reads)
	[ -s "$cache" ]
	cp "$cache" "$BATS_TEST_TMPDIR/good"
	size=$(stat -c %s "$cache")
	for damage in garbage flip cut empty magic; do
		cp "$BATS_TEST_TMPDIR/good" "$cache"
		case $damage in
		garbage) echo 'not a record cache' > "$cache" ;;
		flip) printf '\x7f' | dd of="$cache" bs=1 seek=$((size / 2)) conv=notrunc status=none ;;
		cut) truncate -s $((size - 100)) "$cache" ;;
		empty) : > "$cache" ;;
		magic) printf 'AMPRECS9' | dd of="$cache" bs=1 seek=0 conv=notrunc status=none ;;
		esac
		run -0 reads
		assert_output "$expected"
		# written again, whole: the next read parses nothing from git
		cmp "$cache" "$BATS_TEST_TMPDIR/good"
	done
}

@test "an entry that is not JSON amp could parse is read from git instead" {
	expected=$(reads)
	[ -s "$cache" ]
	# A file with a valid checksum whose every entry lies: a string that
	# is not UTF-8 (a stray byte, a key cut short, a surrogate, an overlong
	# form, past U+10FFFF, a sequence cut short), a NUL, a duplicate member,
	# nesting past 32, a value that is not an object, trailing bytes, an
	# unknown tag.
	git ls-tree -r "refs/amp/messages:$(task_path "$T")" | awk '{print $3}' > "$BATS_TEST_TMPDIR/blobs"
	$PY - "$cache" "$BATS_TEST_TMPDIR/blobs" <<'PY'
import struct, sys, zlib
def s(b): return b'"' + bytes([len(b)]) + b
def obj(*members): return b'{' + bytes([len(members)]) + b''.join(bytes([len(k)]) + k + v for k, v in members)
lies = [obj((b'a', s(b'\xff'))), obj((b'a', s(b'x\x00y'))), obj((b'a', b'n'), (b'a', b't')),
        b'{\x01\x01a' * 40 + b'n', s(b'not an object'), obj((b'a', b'n')) + b'n', obj((b'a', b'?')),
        obj((b'\xc3', b'n')), obj((b'a', s(b'\xed\xa0\x80'))), obj((b'a', s(b'\xc0\xaf'))),
        obj((b'a', s(b'\xf4\x90\x80\x80'))), obj((b'a', s(b'\xe2\x82')))]
blobs = [l.strip() for l in open(sys.argv[2])]
build = open(sys.argv[1], 'rb').read()[8:40]  # the build that wrote it (lib/store/cache.h)
body = b''
for i, blob in enumerate(blobs):
    v = lies[i % len(lies)]
    body += bytes.fromhex(blob) + struct.pack('<I', len(v)) + v
data = b'AMPRECS1' + build + struct.pack('<I', len(blobs)) + body
open(sys.argv[1], 'wb').write(data + struct.pack('<I', zlib.crc32(data)))
PY
	run -0 trace_send
	assert_output --regexp 'records_parsed=69 records_cached=0$'
	run -0 amp status $T --json
	[[ $output == *'"confidence": 0.93'* || $output == *'"state": "approved"'* ]]
	run -0 amp show "$V" --context --json
	assert_output --partial '"confidence": 0.93'
}

@test "a task shorter than 64 records has no record cache" {
	amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp status T-2026-045 --json > /dev/null
	[ ! -e .git/amp/records/T-2026-045 ]
	run -0 trace_send
	[ -e "$cache" ]
}

@test "a reader killed while writing the cache (or amp status its caches) leaves a temporary file that a write sweeps after an hour" {
	mkdir -p .git/amp/records
	: > .git/amp/records/T-2026-044.4242.tmp
	touch -d '2 hours ago' .git/amp/records/T-2026-044.4242.tmp
	# and amp status killed while saving its caches
	: > .git/amp/status.cache.4243.tmp
	: > .git/amp/status.shards.4244.tmp
	: > .git/amp/status.shards.4245.tmp
	touch -d '2 hours ago' .git/amp/status.cache.4243.tmp .git/amp/status.shards.4244.tmp
	rm -f .git/amp/objects-swept
	send_s2 > /dev/null
	[ ! -e .git/amp/records/T-2026-044.4242.tmp ]
	[ ! -e .git/amp/status.cache.4243.tmp ]
	[ ! -e .git/amp/status.shards.4244.tmp ]
	# a young one may be a live reader's
	[ -e .git/amp/status.shards.4245.tmp ]
}

@test "a record whose blob is lost after it was cached is still read from the cache; amp fsck reports the loss" {
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a blob removed on purpose"
	expected=$(reads)
	[ -s "$cache" ]
	loosen_objects
	blob=$(git rev-parse "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages "$(task_path "$T")/" | grep '/000002\.ack\.')")
	rm -f ".git/objects/${blob:0:2}/${blob:2}"
	! git cat-file -e "$blob" 2>/dev/null || false
	run -0 reads
	assert_output "$expected"
	run amp fsck
	[ "$status" -ne 0 ]
	assert_output --partial "$(dirname "$(record_path "$T" 000002.x.json)")/000002.ack."
	assert_output --partial "cannot read blob $blob"
}
