#!/usr/bin/env bats
# Issue 35, pack maintenance at any size: amp gc packs what it chose (the
# small packs, as git repack --geometric=2 chooses, and the loose objects)
# without walking the history; writes keep rolling their packs up while a
# repack runs, so the pack count stays bounded whatever concurrent writers
# do, and no second repack starts as soon as one ends.  Behaviour here,
# never speed (make bench-1m measures that).

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	git config amp.checkRepo false
	mkdir -p .git/amp
}

packs() { ls .git/objects/pack/ | grep -c '\.pack$' || true; }

# send_n N FIRST: N dispatches into fresh tasks T-2026-<FIRST>...
send_n() {
	local i
	for ((i = 0; i < $1; i++)); do
		amp send task_dispatch --task "$(printf 'T-2026-%04d' $(($2 + i)))" \
			--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
}

# gen N FILE: N records of real traffic as JSON lines.
gen() {
	$PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" "$1" "$2" /dev/null 0 "${3:-0}"
}

# The biggest pack's name (pack-<hex>).
biggest_pack() {
	ls -S .git/objects/pack/*.pack | head -1 | sed 's|.*/\(pack-[0-9a-f]*\)\.pack|\1|'
}

# hold_gc_lock / release_gc_lock: this shell holds gc.lock, as a running
# repack does (fd 9; amp opens the file anew, so its flock finds it busy).
hold_gc_lock() { exec 9>> .git/amp/gc.lock && flock -n 9; }
release_gc_lock() { exec 9>&-; }

@test "amp gc --auto reads none of the packs it keeps: 21 writes' packs rolled up, the history's pack never opened; every record reads back" {
	git config amp.autoPack 0
	gen 400 "$BATS_TEST_TMPDIR/l.jsonl"
	amp import "$BATS_TEST_TMPDIR/l.jsonl" > /dev/null
	amp gc > /dev/null
	big=$(biggest_pack)
	send_n 21 5000
	[ "$(packs)" -ge 22 ]
	git config --unset amp.autoPack
	export GIT_TRACE_PACK_ACCESS=$BATS_TEST_TMPDIR/access
	run -0 amp gc --auto --json
	unset GIT_TRACE_PACK_ACCESS
	assert_equal "$(echo "$output" | json_get 'd["packed"]')" true
	# git read the small packs, and only them
	[ -s "$BATS_TEST_TMPDIR/access" ]
	run grep -c "$big" "$BATS_TEST_TMPDIR/access"
	assert_output 0
	[ -e ".git/objects/pack/$big.pack" ]
	[ "$(packs)" -le 3 ]
	assert_fsck_clean
	for ((i = 0; i < 21; i++)); do
		amp status "$(printf 'T-2026-%04d' $((5000 + i)))" > /dev/null
	done
	run -0 amp fsck
}

@test "8 concurrent writers while a repack holds gc.lock: their roll-ups keep the pack count at most 50 all along, none lost" {
	hold_gc_lock
	for w in 0 1 2 3 4 5 6 7; do
		send_n 8 $((6000 + w * 100)) &
	done
	# the count, sampled while the writers run
	: > "$BATS_TEST_TMPDIR/counts"
	while [ "$(jobs -r | wc -l)" -gt 0 ]; do
		packs >> "$BATS_TEST_TMPDIR/counts"
	done
	wait
	packs >> "$BATS_TEST_TMPDIR/counts"
	release_gc_lock
	max=$(sort -n "$BATS_TEST_TMPDIR/counts" | tail -1)
	echo "max $max"
	[ "$max" -le 50 ]
	[ "$(packs)" -le 20 ]
	[ "$(git ls-tree -r --name-only refs/amp/messages tasks | grep -c '\.msg\.')" = 64 ]
	run -0 amp fsck
}

@test "while a repack holds gc.lock and claims packs (gc.claimed), writes roll up the others and leave those; a claim nobody holds gc.lock for claims nothing" {
	git config amp.autoPack 0
	send_n 8 7000
	ls .git/objects/pack/ | sed -n 's/\.pack$//p' > .git/amp/gc.claimed
	[ "$(wc -l < .git/amp/gc.claimed)" -ge 8 ]
	git config --unset amp.autoPack
	hold_gc_lock
	send_n 12 7100
	release_gc_lock
	# each claimed pack is still there, the 12 new ones were rolled up
	while read -r p; do [ -e ".git/objects/pack/$p.pack" ]; done < .git/amp/gc.claimed
	[ "$(packs)" -lt $(($(wc -l < .git/amp/gc.claimed) + 12)) ]
	# no repack holds gc.lock now: the claim is stale, the next writes
	# take the packs it named
	send_n 8 7200
	gone=0
	while read -r p; do [ -e ".git/objects/pack/$p.pack" ] || gone=$((gone + 1)); done < .git/amp/gc.claimed
	[ "$gone" -ge 8 ]
	run -0 amp fsck
}

@test "no second repack right after one: the writes made while it ran are rolled up by the writes, and the first write after it starts no amp gc" {
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	hold_gc_lock
	send_n 30 8000
	release_gc_lock
	[ "$(packs)" -le 20 ]
	strace -f -qq -e trace=execve -o "$BATS_TEST_TMPDIR/exec" \
		amp send task_dispatch --task T-2026-8100 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	run grep -c 'amp-gc\|"gc"\|"repack"\|"pack-objects"' "$BATS_TEST_TMPDIR/exec"
	assert_output 0
	run -0 amp fsck
}

@test "amp import writes the trees a send of the same records writes: the same tree id after every record" {
	gen 48 "$BATS_TEST_TMPDIR/l.jsonl"
	git init -q "$BATS_TEST_TMPDIR/b"
	(cd "$BATS_TEST_TMPDIR/b" && amp init > /dev/null && git config amp.checkRepo false)
	amp import --repo "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/l.jsonl" > /dev/null
	while IFS= read -r line; do
		if echo "$line" | grep -q '"type":"ack"'; then
			id=$(echo "$line" | json_get 'd["ack_for"]')
			frm=$(echo "$line" | json_get 'd["from"]')
			AMP_NOW=$(echo "$line" | json_get 'd["timestamp"]') amp ack "$id" --from "$frm" > /dev/null
		else
			echo "$line" > "$BATS_TEST_TMPDIR/env.json"
			AMP_NOW=$(echo "$line" | json_get 'd["timestamp"]') \
				amp send --envelope "$BATS_TEST_TMPDIR/env.json" > /dev/null
		fi
	done < "$BATS_TEST_TMPDIR/l.jsonl"
	assert_equal "$(git -C "$BATS_TEST_TMPDIR/b" log --format=%T refs/amp/messages | sed '$d')" \
		"$(git log --format=%T refs/amp/messages | sed '$d')"
	[ "$(git log --format=%T refs/amp/messages | sed '$d' | wc -l)" = 48 ]
}
