#!/usr/bin/env bats
# Packed storage (issue 12): each amp write is a pack of its own; amp gc
# rolls packs and loose objects into bigger packs (git repack -d
# --geometric=2), and every write starts it on its own past 20 packs or
# once git gc --auto's estimate of loose objects passes amp.autoPack.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

loose() { git count-objects -v | awk '$1 == "count:" { print $2 }'; }
packs() { git count-objects -v | awk '$1 == "packs:" { print $2 }'; }

# A loose object in objects/17, where the estimate looks (git gc --auto's
# sample directory): found by hashing, not by luck.
plant_in_17() {
	content=$($PY -c '
import hashlib
i = 0
while True:
    s = "amp pack test %d\n" % i
    b = s.encode()
    if hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest().startswith("17"):
        print(s, end=""); break
    i += 1')
	printf '%s\n' "$content" | git hash-object -w --stdin > /dev/null
	[ -n "$(ls .git/objects/17)" ]
}

# ref_delta_pack TEXT: a pack of two similar blobs, one a REF_DELTA
# against the other (git pack-objects without --delta-base-offset), and
# no loose copy of them; prints the pack's name.
ref_delta_pack() {
	local big
	big=$(printf '%s\n' "$1" | awk '{ for (i = 0; i < 120; i++) print $0 " line " i }')
	{ printf '%s\n' "$big" | git hash-object -w --stdin
	  printf '%s\nand one more line\n' "$big" | git hash-object -w --stdin
	} | git pack-objects -q .git/objects/pack/pack
	git prune-packed
}

# blobs_pack N TAG: a pack of N distinct blobs, each whole, no loose copy;
# prints the pack's name.
blobs_pack() {
	local i
	for ((i = 0; i < $1; i++)); do
		echo "$2 blob $i" > "$BATS_TEST_TMPDIR/b$i"
		echo "$BATS_TEST_TMPDIR/b$i"
	done | git hash-object -w --stdin-paths | git pack-objects -q .git/objects/pack/pack
	git prune-packed
}

# flip_byte FILE OFFSET: damages FILE (a read-only pack or index) there.
flip_byte() {
	chmod u+w "$1"
	$PY -c 'import sys; f = open(sys.argv[1], "r+b"); o = int(sys.argv[2]); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 0x40]))' "$1" "$2"
}

# tiny_packs: the packs of at most 64 objects (8 of them start amp's own
# roll-up)
tiny_packs() {
	local p n k=0
	for p in .git/objects/pack/*.idx; do
		n=$(git show-index < "$p" | wc -l)
		[ "$n" -gt 64 ] || k=$((k + 1))
	done
	echo "$k"
}

# start_writers W N: W writers in the background, N messages each into
# tasks of their own; a failed send is written to $BATS_TEST_TMPDIR/fail.
start_writers() {
	local w
	for ((w = 1; w <= $1; w++)); do
		( for ((i = 0; i < $2; i++)); do
			amp send task_dispatch --task "$(printf 'T-2026-%d%02d' "$w" "$i")" --from coordinator \
				--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null ||
				echo "send failed" >> "$BATS_TEST_TMPDIR/fail"
		done ) &
	done
}

send_n() {
	local i
	for ((i = 0; i < $1; i++)); do
		amp send task_dispatch --task "$(printf 'T-2026-%03d' $((100 + i)))" \
			--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
}

@test "a write is one pack with its index: no loose object, no fan-out directory; git reads it" {
	git config amp.autoPack 0
	before=$(packs)
	send_n 3
	[ "$(loose)" = 0 ]
	[ "$(packs)" = $((before + 3)) ]
	[ -z "$(find .git/objects -mindepth 1 -maxdepth 1 -name '??')" ]
	for p in .git/objects/pack/*.pack; do
		git verify-pack "${p%.pack}.idx"
		[ "$(stat -c %a "$p")" = 444 ]
		[ "$(basename "$p")" = "pack-$(tail -c 20 "$p" | od -An -tx1 | tr -d ' \n').pack" ]
	done
	git fsck --full --strict --no-dangling
	run -0 amp fsck
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 3 ]
}

@test "a write's pack holds each object whole; amp gc stores their trees as deltas" {
	git config amp.autoPack 0
	for ((i = 0; i < 6; i++)); do
		amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
	deltas() { for p in .git/objects/pack/*.idx; do git verify-pack -v "$p"; done | awk '$2 == "tree" && NF == 7' | wc -l; }
	[ "$(deltas)" = 0 ]
	run -0 amp gc
	[ "$(deltas)" -gt 0 ]
}

@test "a send into a task directory made out of git's order by hand writes it back in order" {
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a tree out of git's order, planted on purpose, stays in the history"
	send_dispatch
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	# the task's directory with its three entries reversed (git mktree
	# would sort them), then the trees above it and a commit, by hand
	local rdir
	# the directory holding the records (the task's, or in layout 2 its 00/00/)
	rdir=$(dirname "$(record_path "$T" 000001.x.json)")
	$PY - "$rdir" <<'PYEOF'
import subprocess, sys
def git(*args, inp=None):
    return subprocess.run(["git", *args], input=inp, capture_output=True, check=True).stdout
ref, path = "refs/amp/messages", sys.argv[1].split("/")
raw = b""
for line in reversed(git("ls-tree", ref + ":" + sys.argv[1]).decode().splitlines()):
    meta, name = line.split("\t", 1)
    mode, _, oid = meta.split()
    raw += mode.encode() + b" " + name.encode() + b"\0" + bytes.fromhex(oid)
sub = git("hash-object", "-t", "tree", "--literally", "-w", "--stdin", inp=raw).decode().strip()
for depth in range(len(path) - 1, -1, -1):
    lines = []
    for line in git("ls-tree", ref + ":" + "/".join(path[:depth])).decode().splitlines():
        meta, name = line.split("\t", 1)
        if name == path[depth]:
            line = "040000 tree %s\t%s" % (sub, name)
        lines.append(line)
    sub = git("mktree", inp=("\n".join(lines) + "\n").encode()).decode().strip()
commit = git("commit-tree", sub, "-p", ref, "-m", "the task directory out of order").decode().strip()
git("update-ref", ref, commit)
PYEOF
	git ls-tree --name-only "refs/amp/messages:$rdir" > "$BATS_TEST_TMPDIR/names"
	! LC_ALL=C sort -c "$BATS_TEST_TMPDIR/names" 2> /dev/null || false
	amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	git ls-tree --name-only "refs/amp/messages:$rdir" > "$BATS_TEST_TMPDIR/names"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/names")" = 4 ]
	LC_ALL=C sort -c "$BATS_TEST_TMPDIR/names"
}

@test "amp gc never stores a record as a delta (reading one applies no delta chain); other blobs still are" {
	git config amp.autoPack 0
	send_n 12
	# a user's files of the same shape, outside tasks/: git's choice
	one=$(git ls-tree -r --name-only refs/amp/messages | grep -m1 '\.msg\.')
	mkdir -p "$BATS_TEST_TMPDIR/w/notes"
	for ((i = 0; i < 12; i++)); do
		git show "refs/amp/messages:$one" | sed "s/T-2026-/N-$i-/g" > "$BATS_TEST_TMPDIR/w/notes/n$i.json"
	done
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/index git --work-tree="$BATS_TEST_TMPDIR/w" add notes
	tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/index git write-tree)
	git update-ref refs/heads/notes "$(git commit-tree -m notes "$tree")"
	for round in 1 2; do
		run -0 amp gc
		# objects in two packs the second time: the geometric roll-up too
		[ "$round" = 2 ] || send_n 12
	done
	records=$(git ls-tree -r refs/amp/messages | awk '$4 ~ /^tasks\// { print $3 }')
	[ "$(echo "$records" | wc -l)" -ge 24 ]
	run -0 git cat-file --batch-check='%(deltabase)' <<< "$records"
	refute_output --regexp '[1-9a-f]'
	run -0 git cat-file --batch-check='%(deltabase)' < <(git ls-tree -r refs/heads/notes | awk '{ print $3 }')
	assert_output --regexp '[1-9a-f]'
	run -0 amp fsck
}

@test "amp gc never writes through a link planted where its attributes file goes" {
	send_n 2
	echo keep > "$BATS_TEST_TMPDIR/target"
	mkdir -p .git/amp
	ln -s "$BATS_TEST_TMPDIR/target" .git/amp/pack-attributes
	run -0 amp gc
	[ "$(cat "$BATS_TEST_TMPDIR/target")" = keep ]
	[ -L .git/amp/pack-attributes ]
	run -0 amp fsck
}

@test "writes alone keep the pack count bounded: past 20 packs a write rolls them up" {
	git config amp.autoPackDetach false
	send_n 30
	[ "$(packs)" -le 21 ]
	[ "$(packs)" -lt "$(git rev-list --count refs/amp/messages)" ]
	[ "$(loose)" = 0 ]
	run -0 amp fsck
}

@test "amp gc rolls the packs of the writes and every loose object into one pack; every record reads back the same, amp fsck clean" {
	send_n 5
	for ((i = 0; i < 25; i++)); do echo "loose $i" | git hash-object -w --stdin > /dev/null; done
	before_status=$(amp status --json)
	[ "$(loose)" -ge 25 ]
	[ "$(packs)" -ge 5 ]
	run -0 amp gc --json
	[ "$(echo "$output" | json_get 'd["packed"]')" = true ]
	[ "$(echo "$output" | json_get 'd["after"]["loose"]')" = 0 ]
	[ "$(echo "$output" | json_get 'd["after"]["packs"]')" = 1 ]
	[ "$(echo "$output" | json_get 'd["before"]["loose"]')" -ge 25 ]
	[ "$(echo "$output" | json_get 'd["before"]["packs"]')" -ge 5 ]
	[ "$(loose)" = 0 ]
	[ "$(packs)" = 1 ]
	[ "$(amp status --json)" = "$before_status" ]
	run -0 amp fsck
	# and the store takes writes as before
	send_n 1
	run -0 amp gc
	assert_output --regexp '^amp gc: [0-9]+ loose objects .* -> 0 loose'
}

@test "a write past amp.autoPack packs on its own (amp.autoPackDetach false: in the foreground)" {
	send_n 2
	plant_in_17
	git config amp.autoPack 1
	git config amp.autoPackDetach false
	[ "$(loose)" = 1 ]
	send_n 1
	[ "$(loose)" = 0 ]
	[ "$(packs)" -ge 1 ]
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 3 ]
	run -0 amp fsck
}

@test "more than 20 packs (what writes, imports and fetches leave) are rolled up by the next write, however few loose objects" {
	git config amp.autoPackDetach false
	n=$(packs)
	# packs amp's own roll-up leaves to git: each holds a REF_DELTA
	for ((i = 0; i < 21; i++)); do
		ref_delta_pack "pack $i" > /dev/null
	done
	[ "$(packs)" = $((n + 21)) ]
	send_n 1
	[ "$(packs)" -le 2 ]
	[ "$(loose)" = 0 ]
	run -0 amp fsck
	# and amp gc --auto sees the same
	for ((i = 0; i < 21; i++)); do
		echo "again $i" | git hash-object -w --stdin | git pack-objects -q .git/objects/pack/pack > /dev/null
	done
	run -0 amp gc --auto --json
	[ "$(echo "$output" | json_get 'd["packed"]')" = true ]
}

@test "an import is followed by the repack its packs call for" {
	git config amp.autoPackDetach false
	for ((i = 0; i < 21; i++)); do
		echo "pack $i" | git hash-object -w --stdin | git pack-objects -q .git/objects/pack/pack > /dev/null
	done
	git config amp.checkRepo false
	$PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 8 "$BATS_TEST_TMPDIR/l.jsonl" /dev/null 0
	run -0 amp import "$BATS_TEST_TMPDIR/l.jsonl"
	[ "$(packs)" -le 2 ]
}

@test "by default the repack runs detached: the send returns, the loose objects go soon after" {
	git config --unset amp.autoPackDetach
	plant_in_17
	git config amp.autoPack 1
	send_n 1
	# waiting is what is tested: the detached amp gc --auto finishes
	for ((i = 0; i < 100; i++)); do
		[ "$(loose)" = 0 ] && break
		sleep 0.1
	done
	[ "$(loose)" = 0 ]
	# its lock is free again: a foreground gc does not wait
	run -0 timeout 10 amp gc
}

@test "amp.autoPack 0, or gc.auto 0 with amp.autoPack unset, turns it off; amp.autoPack wins over gc.auto" {
	plant_in_17
	git config amp.autoPackDetach false
	git config amp.autoPack 0
	send_n 1
	[ "$(loose)" -gt 0 ]
	git config --unset amp.autoPack
	git config gc.auto 0
	send_n 1
	[ "$(loose)" -gt 0 ]
	git config amp.autoPack 1
	send_n 1
	[ "$(loose)" = 0 ]
}

@test "one repack at a time: amp gc --auto skips while another holds gc.lock, and runs once it is free" {
	send_n 1
	plant_in_17
	git config amp.autoPack 1
	mkdir -p .git/amp
	run -0 flock .git/amp/gc.lock amp gc --auto --json
	[ "$(echo "$output" | json_get 'd["packed"]')" = false ]
	[ "$(loose)" -gt 0 ]
	run -0 amp gc --auto --json
	[ "$(echo "$output" | json_get 'd["packed"]')" = true ]
	[ "$(loose)" = 0 ]
}

@test "amp gc --auto does nothing under the limit" {
	send_n 1
	n=$(loose)
	run -0 amp gc --auto --json
	[ "$(echo "$output" | json_get 'd["packed"]')" = false ]
	[ "$(loose)" = "$n" ]
	run -0 amp gc --auto
	assert_output "amp gc: nothing to do"
}

@test "a bad amp.autoPack is exit 2 for amp gc, naming the key; a write still lands (maintenance never fails a write)" {
	git config amp.autoPack -1
	run -2 amp gc
	assert_output --partial "git config amp.autoPack"
	git config amp.autoPack lots
	run -2 amp gc --auto
	assert_output --partial "git config amp.autoPack"
	git config amp.autoPack 100000001
	run -2 amp gc
	assert_output --partial "out of range"
	plant_in_17
	run -0 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
}

@test "writers racing repacks lose nothing: 4 writers x 10 messages while amp gc runs in a loop" {
	git config amp.autoPack 0
	( for ((i = 0; i < 30; i++)); do amp gc > /dev/null || echo "gc failed" >> "$BATS_TEST_TMPDIR/fail"; done ) &
	gc_pid=$!
	start_writers 4 10
	wait
	[ ! -e "$BATS_TEST_TMPDIR/fail" ]
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 40 ]
	run -0 amp fsck
	run -0 amp gc
	[ "$(loose)" = 0 ]
	run -0 amp fsck
	: "$gc_pid"
}

@test "with amp.fsync (the default) the pack and its index are fsynced before loose objects go; not with amp.fsync false" {
	send_n 2
	# LeakSanitizer cannot run under ptrace (make asan)
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	strace -f -qq -y -e trace=fsync,fdatasync -o "$BATS_TEST_TMPDIR/trace" amp gc > /dev/null
	# git fsyncs them under temporary names, then renames them into place
	grep -qE 'f(data)?sync\([0-9]+<[^>]*/objects/pack/tmp_pack_[^>]*>' "$BATS_TEST_TMPDIR/trace"
	grep -qE 'f(data)?sync\([0-9]+<[^>]*/objects/pack/tmp_idx_[^>]*>' "$BATS_TEST_TMPDIR/trace"
	send_n 2
	git config amp.fsync false
	strace -f -qq -y -e trace=fsync,fdatasync -o "$BATS_TEST_TMPDIR/trace" amp gc > /dev/null
	! grep -qE 'f(data)?sync\([0-9]+<[^>]*/objects/pack/' "$BATS_TEST_TMPDIR/trace"
}

@test "amp gc: usage errors exit 2" {
	run -2 amp gc extra
	assert_output --partial "usage: amp gc"
	run -2 amp gc --bogus
	run -0 amp gc --help
	assert_output --partial "usage: amp gc"
}

@test "every 8 small packs, a write rolls them into one in its own process, no git run: git verify-pack, git fsck and amp fsck clean, every record the same" {
	git config amp.autoPackDetach false
	send_n 4
	before=$(amp status --all --json)
	records=$(git ls-tree -r refs/amp/messages | sort)
	[ "$(packs)" -ge 4 ]
	[ "$(packs)" -lt 8 ]
	# the next writes reach 8 packs: one of them rolls them up
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	rolled=
	for ((i = 0; i < 8; i++)); do
		n=$(packs)
		strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/exec" \
			amp send task_dispatch --task "$(printf 'T-2026-%03d' $((200 + i)))" \
			--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
		if [ "$(packs)" -le "$n" ]; then
			rolled=1
			sent=$((4 + i + 1))
			# no process but the send itself
			[ "$(grep -c 'execve(' "$BATS_TEST_TMPDIR/exec")" = 1 ]
			break
		fi
	done
	[ -n "$rolled" ]
	[ "$(packs)" -le 2 ]
	[ "$(loose)" = 0 ]
	for p in .git/objects/pack/*.idx; do git verify-pack "$p"; done
	git fsck --full --strict --no-dangling
	run -0 amp fsck
	# what was there before reads back the same
	for t in $(echo "$before" | json_get '" ".join(t["task_id"] for t in d["tasks"])'); do
		[ "$(echo "$before" | json_get "[t for t in d['tasks'] if t['task_id'] == '$t'][0]['state']")" = \
		  "$(amp status "$t" --json | json_get 'd["state"]')" ]
	done
	diff <(echo "$records") <(git ls-tree -r refs/amp/messages | sort | grep -F -f <(echo "$records"))
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = "$sent" ]
}

@test "a roll-up copies deltas as they are, their base distance written anew; packs it cannot copy stay for git: a REF_DELTA, a .keep, a damaged pack or index" {
	fsck_exempt "$BATS_TEST_TMPDIR/repo" "a pack and an index damaged on purpose"
	git config amp.autoPack 0
	# OFS_DELTA packs, as git makes them: similar blobs
	$PY - "$BATS_TEST_TMPDIR" <<'PY'
import random, sys
random.seed(7)
base = "".join(random.choice("abcdefgh ") for _ in range(3000))
for i in range(4):
    open(f"{sys.argv[1]}/blob{i}", "w").write(base + f" variant {i}\n")
PY
	for k in 1 2 3 4 5 6 7 8; do
		for i in 0 1 2 3; do
			echo "round $k" >> "$BATS_TEST_TMPDIR/blob$i"
			git hash-object -w "$BATS_TEST_TMPDIR/blob$i"
		done > "$BATS_TEST_TMPDIR/ids$k"
		git pack-objects -q --delta-base-offset .git/objects/pack/pack < "$BATS_TEST_TMPDIR/ids$k" > /dev/null
	done
	git prune-packed
	ofs_deltas() { for p in .git/objects/pack/*.idx; do git verify-pack -v "$p"; done | awk '$2 == "blob" && NF == 7' | wc -l; }
	[ "$(ofs_deltas)" -ge 8 ]
	ref=.git/objects/pack/pack-$(ref_delta_pack "a ref delta").pack
	kept=.git/objects/pack/pack-$(blobs_pack 1 kept).pack
	touch "${kept%.pack}.keep"
	# damaged: one byte of an entry flipped
	bad=.git/objects/pack/pack-$(blobs_pack 1 "damaged pack").pack
	flip_byte "$bad" 14
	cp "$bad" "$BATS_TEST_TMPDIR/bad.pack"
	# and an index damaged where no lookup looks (a CRC of its table)
	badidx=.git/objects/pack/pack-$(blobs_pack 1 "damaged index").idx
	flip_byte "$badidx" $((8 + 1024 + 20))
	cp "$badidx" "$BATS_TEST_TMPDIR/bad.idx"
	git config --unset amp.autoPack
	git config amp.autoPackDetach false
	deltas_before=$(ofs_deltas)
	send_n 1
	# the OFS_DELTA packs and amp's are one pack now, deltas kept
	[ "$(ofs_deltas)" = "$deltas_before" ]
	[ "$(packs)" = 5 ]
	for p in .git/objects/pack/*.idx; do
		[ "$p" = "${bad%.pack}.idx" ] || [ "$p" = "$badidx" ] || git verify-pack "$p"
	done
	# every blob reads back byte for byte
	for k in 1 2 3 4 5 6 7 8; do
		while read -r id; do git cat-file -p "$id" | git hash-object --stdin | grep -qx "$id"; done < "$BATS_TEST_TMPDIR/ids$k"
	done
	[ -e "$ref" ] && [ -e "$kept" ] && [ -e "${kept%.pack}.keep" ]
	cmp "$bad" "$BATS_TEST_TMPDIR/bad.pack"
	cmp "$badidx" "$BATS_TEST_TMPDIR/bad.idx"
	run -0 amp fsck
}

@test "a roll-up leaves the packs already in a geometric progression: 8 writes' packs are rolled, a pack of 500 objects beside them stays" {
	git config amp.autoPack 0
	big=$(blobs_pack 500 big)
	[ -e ".git/objects/pack/pack-$big.pack" ]
	send_n 8
	git config --unset amp.autoPack
	send_n 1
	[ -e ".git/objects/pack/pack-$big.pack" ]
	[ "$(packs)" = 2 ]
	run -0 amp fsck
}

@test "a fetch's packs (100 objects or more) start no roll-up by themselves" {
	git config amp.autoPack 0
	for ((k = 0; k < 10; k++)); do blobs_pack 120 "fetch $k" > /dev/null; done
	git config --unset amp.autoPack
	n=$(packs)
	send_n 2
	[ "$(packs)" = $((n + 2)) ]
}

@test "a repository with a multi-pack-index is left to git: no roll-up, git reads every object" {
	git config amp.autoPack 0
	send_n 8
	git multi-pack-index write
	git config --unset amp.autoPack
	n=$(packs)
	send_n 1
	[ "$(packs)" = $((n + 1)) ]
	git multi-pack-index verify
	git fsck --full --strict --no-dangling
	run -0 amp fsck
}

@test "amp.autoPack 0 turns the roll-up off; while another holds rollup.lock a write skips it, and the next one rolls up" {
	git config amp.autoPack 0
	git config amp.autoPackDetach false
	send_n 10
	[ "$(packs)" -ge 10 ]
	git config --unset amp.autoPack
	mkdir -p .git/amp
	n=$(packs)
	flock .git/amp/rollup.lock amp send task_dispatch --task T-2026-300 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	[ "$(packs)" = $((n + 1)) ]
	amp send task_dispatch --task T-2026-301 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	[ "$(packs)" -le 2 ]
	run -0 amp fsck
}

@test "a write past 20 packs starts no amp gc while a repack holds gc.lock; once it is free, it does" {
	git config amp.autoPack 0
	for ((i = 0; i < 21; i++)); do
		ref_delta_pack "pack $i" > /dev/null
	done
	git config --unset amp.autoPack
	git config --unset amp.autoPackDetach
	mkdir -p .git/amp
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	flock .git/amp/gc.lock strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/exec" \
		amp send task_dispatch --task T-2026-400 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	! grep -q 'amp-gc\|"gc"' "$BATS_TEST_TMPDIR/exec" || false
	[ "$(packs)" -gt 20 ]
	strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/exec" \
		amp send task_dispatch --task T-2026-401 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	grep -q 'amp-gc\|"gc"' "$BATS_TEST_TMPDIR/exec"
	# the detached repack finishes
	for ((i = 0; i < 100; i++)); do
		[ "$(packs)" -le 2 ] && break
		sleep 0.1
	done
	[ "$(packs)" -le 2 ]
}

@test "writers and readers racing roll-ups lose nothing: 4 writers x 12 messages, amp status and git cat-file reading all along" {
	( while [ ! -e "$BATS_TEST_TMPDIR/done" ]; do
		amp status --all > /dev/null || echo "status failed" >> "$BATS_TEST_TMPDIR/fail"
		git cat-file --batch-all-objects --batch-check > /dev/null ||
			echo "cat-file failed" >> "$BATS_TEST_TMPDIR/fail"
	done ) &
	reader=$!
	start_writers 4 12
	wait $(jobs -p | grep -vx "$reader")
	touch "$BATS_TEST_TMPDIR/done"
	wait "$reader"
	[ ! -e "$BATS_TEST_TMPDIR/fail" ]
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.msg\.')" = 48 ]
	# the writes rolled their packs up as they went
	[ "$(tiny_packs)" -lt 8 ]
	git fsck --full --strict --no-dangling
	run -0 amp fsck
}

@test "a roll-up fsyncs the new pack and its index (amp.fsync), renames both in, and only then deletes the old packs, each index before its pack" {
	git config amp.autoPack 0
	send_n 8
	git config --unset amp.autoPack
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	strace -f -qq -y -e trace=fsync,rename,unlink -o "$BATS_TEST_TMPDIR/trace" \
		amp send task_dispatch --task T-2026-500 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	[ "$(packs)" -le 2 ]
	# the pass: the last fsync and rename of a tmp_amp_pack file come
	# before the first unlink of a pack; every .idx before its .pack
	awk '
		/fsync\(.*tmp_amp_pack_/ { synced++ }
		/rename\(.*tmp_amp_pack_.*\.idx"/ { placed = NR }
		/unlink\(.*\/pack-[0-9a-f]*\.(idx|pack)"/ {
			if (!placed || NR < placed) bad = "deleted before the new pack was in"
			match($0, /pack-[0-9a-f]*\.(idx|pack)/); f = substr($0, RSTART, RLENGTH)
			split(f, a, "."); if (a[2] == "idx") idx[a[1]] = 1; else if (!idx[a[1]]) bad = "pack before its index"
			unlinked++
		}
		END { if (synced < 2 || !unlinked || bad) { print synced, unlinked, bad; exit 1 } }
	' "$BATS_TEST_TMPDIR/trace"
	run -0 amp fsck
}

@test "packs with a .promisor, .mtimes or .bitmap beside them stay for git; the others are rolled up" {
	git config amp.autoPack 0
	send_n 8
	for ext in promisor mtimes bitmap; do
		p=.git/objects/pack/pack-$(blobs_pack 1 "$ext")
		touch "$p.$ext"
		echo "$p" >> "$BATS_TEST_TMPDIR/marked"
	done
	git config --unset amp.autoPack
	send_n 1
	while read -r p; do [ -e "$p.pack" ] && [ -e "$p.idx" ]; done < "$BATS_TEST_TMPDIR/marked"
	[ "$(packs)" = 4 ]
}
