#!/usr/bin/env bats
# Issue 12: amp import FILE|-, a log of records (JSON lines) committed in
# one process and one ref update, each checked as if sent in order.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# export_log REPO: every record of REPO's SSOT, in commit order, as JSON lines.
export_log() {
	local c f
	for c in $(git -C "$1" rev-list --reverse refs/amp/messages); do
		git -C "$1" diff-tree --root --no-commit-id -r --name-only --diff-filter=A "$c" |
			grep '^tasks/' | while read -r f; do
				git -C "$1" show "$c:$f" | $PY -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))'
			done
	done
}

# gen N FILE [TASK0]: N records of real traffic as JSON lines (whole
# tasks: N rounded up to a multiple of 8).
gen() {
	$PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" "$1" "$2" /dev/null 0 "${3:-0}"
}

# An SSOT of its own in $BATS_TEST_TMPDIR/b, for imports; prints its path.
other_ssot() {
	git init -q "$BATS_TEST_TMPDIR/b" && (cd "$BATS_TEST_TMPDIR/b" && amp init > /dev/null)
	echo "$BATS_TEST_TMPDIR/b"
}

# dispatch then result, with no ACK of the dispatch between them.
result_before_ack() {
	send_dispatch
	at 10
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json" 2>/dev/null) || true
}

@test "a whole conversation imported equals the same conversation sent: same records, same states, amp fsck clean" {
	dispatch_acked
	at 60; review_round 0
	at 120
	V=$(amp send review_verdict --task $T --from reviewer --context-ref "$Q" --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	# a late ACK: amp writes an ack_timeout escalation with it
	at 4000; amp ack "$V" --from coordinator > /dev/null
	export_log . > "$BATS_TEST_TMPDIR/log.jsonl"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/log.jsonl")" -eq 9 ]
	b=$(other_ssot)
	run amp import --repo "$b" "$BATS_TEST_TMPDIR/log.jsonl" --json
	assert_success
	# 8 records written; the escalation amp wrote with the late ACK is
	# written again with it, and its own line is then a duplicate
	assert_equal "$(echo "$output" | json_get 'd["imported"]')" 8
	assert_equal "$(echo "$output" | json_get 'd["duplicates"]')" 1
	assert_equal "$(echo "$output" | json_get 'd["escalations"]')" 1
	assert_equal "$(echo "$output" | json_get 'd["tip"]')" "$(git -C "$b" rev-parse refs/amp/messages)"
	assert_equal "$(git -C "$b" ls-tree -r refs/amp/messages tasks)" "$(git ls-tree -r refs/amp/messages tasks)"
	assert_equal "$(amp status --repo "$b" $T --json)" "$(amp status $T --json)"
	# one commit per record, as amp send writes them: the author is the
	# sender, the author time the record's
	assert_equal "$(git -C "$b" log --format='%an %at %s' refs/amp/messages | sed '$d')" \
		"$(git log --format='%an %at %s' refs/amp/messages | sed '$d')"
	(cd "$b" && run amp fsck && assert_success && assert_output --partial clean)
	# imported again: every line is already there
	run amp import --repo "$b" "$BATS_TEST_TMPDIR/log.jsonl" --json
	assert_success
	assert_output '{"format":{"name":"import","version":1},"imported":0,"duplicates":9,"escalations":0,"tip":"'"$(git -C "$b" rev-parse refs/amp/messages)"'"}'
}

@test "a result before the dispatch's ACK is refused naming the line and the field, nothing written" {
	gen 8 "$BATS_TEST_TMPDIR/log.jsonl"
	# drop the dispatch's ACK (line 2)
	sed -i 2d "$BATS_TEST_TMPDIR/log.jsonl"
	before=$(git rev-parse refs/amp/messages); errors=$(error_count)
	git config amp.checkRepo false
	run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_failure 3
	assert_output --partial "amp import: error: line 2: /"
	assert_output --partial "nothing was imported"
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
	assert_equal "$(error_count)" "$errors"
}

@test "a record that breaks the schema is refused with exit 1 naming the line and the field, nothing written" {
	gen 8 "$BATS_TEST_TMPDIR/log.jsonl"
	$PY - "$BATS_TEST_TMPDIR/log.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.loads(lines[2]); d["payload"]["completion_status"] = "done-ish"
lines[2] = json.dumps(d)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
	git config amp.checkRepo false
	before=$(git rev-parse refs/amp/messages)
	run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_failure 1
	assert_output --partial "amp import: error: line 3: /payload/completion_status: "
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
}

@test "amp import - reads stdin; blank lines are skipped" {
	gen 16 "$BATS_TEST_TMPDIR/log.jsonl"
	git config amp.checkRepo false
	before=$(commit_count)
	run amp import - --json < <(sed 's/$/\n/' "$BATS_TEST_TMPDIR/log.jsonl")
	assert_success
	assert_equal "$(echo "$output" | json_get 'd["imported"]')" 16
	assert_equal "$(commit_count)" $((before + 16))
	assert_equal "$(amp status T-2026-0001 --json | json_get 'd["state"]')" approved
}

@test "a task's timestamps going backwards are refused naming the line, nothing written" {
	gen 8 "$BATS_TEST_TMPDIR/log.jsonl"
	# the result (line 3) one minute before the dispatch's ACK (line 2)
	sed -i '3s/"timestamp":"2026-02-26T14:33:07+00:00"/"timestamp":"2026-02-26T14:32:00+00:00"/' "$BATS_TEST_TMPDIR/log.jsonl"
	grep -q '14:32:00' "$BATS_TEST_TMPDIR/log.jsonl"
	git config amp.checkRepo false
	before=$(git rev-parse refs/amp/messages)
	run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_failure 3
	assert_output --partial "amp import: error: line 3: /timestamp: 2026-02-26T14:32:00+00:00 is earlier than task_dispatch-T-2026-0000-1772116327000 (2026-02-26T14:32:12+00:00), already in task T-2026-0000"
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
	# in the future of this machine's clock: refused too
	gen 8 "$BATS_TEST_TMPDIR/log.jsonl"
	AMP_NOW=2026-02-26T14:00:00+00:00 run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_failure 3
	assert_output --partial "line 1: /timestamp: 2026-02-26T14:32:07+00:00 is 1927 s ahead of this machine's clock"
	# historical timestamps are fine: a year later, well past amp.maxClockSkew
	AMP_NOW=2027-02-26T14:00:00+00:00 run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_success
}

@test "an empty input imports nothing and leaves the ref alone" {
	before=$(git rev-parse refs/amp/messages)
	run amp import /dev/null --json
	assert_success
	assert_output '{"format":{"name":"import","version":1},"imported":0,"duplicates":0,"escalations":0,"tip":"'"$before"'"}'
	printf '\n  \n' | amp import -
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
}

@test "a line past the 1 MiB record limit is refused, nothing written" {
	gen 8 "$BATS_TEST_TMPDIR/log.jsonl"
	sed -i 3,8d "$BATS_TEST_TMPDIR/log.jsonl"
	$PY -c 'import json; print(json.dumps({"pad": "x" * (1 << 20)}))' >> "$BATS_TEST_TMPDIR/log.jsonl"
	git config amp.checkRepo false
	before=$(git rev-parse refs/amp/messages)
	run amp import "$BATS_TEST_TMPDIR/log.jsonl"
	assert_failure 1
	assert_output --partial "amp import: error: line 3: more than 1048576 bytes"
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
}

@test "amp send during an import loses nothing: both land, the history stays linear" {
	gen 800 "$BATS_TEST_TMPDIR/log.jsonl"
	git config amp.checkRepo false
	before=$(commit_count)
	amp import "$BATS_TEST_TMPDIR/log.jsonl" > "$BATS_TEST_TMPDIR/import.out" &
	pid=$!
	for i in 1 2 3 4 5; do
		amp send task_dispatch --task T-2026-90$i --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
	wait $pid
	assert_equal "$(commit_count)" $((before + 805))
	assert_equal "$(git rev-list --min-parents=2 --count refs/amp/messages)" 0
	[ "$(amp status T-2026-0099 --json | json_get 'd["state"]')" = approved ]
	for i in 1 2 3 4 5; do
		git ls-tree -r --name-only refs/amp/messages | grep -q "T-2026-90$i/\(00/00/\)\?000001.msg.task_dispatch"
	done
	amp fsck | grep -q clean
}

@test "amp import: usage errors exit 2" {
	run amp import
	assert_failure 2
	assert_output --partial "usage: amp import"
	run amp import a b
	assert_failure 2
	run amp import --bogus x
	assert_failure 2
	run amp import "$BATS_TEST_TMPDIR/none.jsonl"
	assert_failure 4
}

@test "an imported year-old log reads back clean: amp watch escalates none of it as a wrong clock, commits are dated by their records" {
	gen 16 "$BATS_TEST_TMPDIR/old.jsonl"
	git config amp.checkRepo false
	# months after the records (gen-traffic dates them 2026-02-26)
	export AMP_NOW=2026-11-01T00:00:00Z
	run amp import "$BATS_TEST_TMPDIR/old.jsonl"
	assert_success
	run amp watch --once --json
	assert_success
	refute_output --partial 'amp watch cannot use'
	[ "$(git log --format=%s refs/amp/messages | grep -c '^escalation')" -eq 0 ]
	# each commit's committer time is its record's (to the second)
	c=$(git log --format='%H %ct' refs/amp/messages | sed -n 1p)
	f=$(git diff-tree --no-commit-id -r --name-only ${c%% *} | sed -n 1p)
	ts=$(git show "${c%% *}:$f" | json_get 'd["timestamp"]')
	[ "$(date -u -d "$ts" +%s)" = "${c##* }" ]
}

@test "an import's packs are git's own format: git fsck --full --strict clean, each index byte for byte what git index-pack makes of its pack, trees stored as deltas against the newer version (the tip's whole), commits then trees then blobs" {
	gen 400 "$BATS_TEST_TMPDIR/l.jsonl"
	export AMP_NOW=2026-11-01T00:00:00Z # after the last record
	git config amp.checkRepo false
	git config amp.autoPack 0
	ls .git/objects/pack/pack-*.idx > "$BATS_TEST_TMPDIR/init-packs" # amp init's
	run -0 amp import "$BATS_TEST_TMPDIR/l.jsonl"
	run -0 git fsck --full --strict
	refute_output --partial error
	n=0
	for idx in .git/objects/pack/pack-*.idx; do
		grep -qxF "$idx" "$BATS_TEST_TMPDIR/init-packs" && continue
		n=$((n + 1))
		pack=${idx%.idx}.pack
		# named by the pack's checksum, as git names its packs
		[ "$(tail -c 20 "$pack" | od -An -tx1 | tr -d ' \n')" = "$(basename "$pack" .pack | sed 's/^pack-//')" ]
		git index-pack -o "$BATS_TEST_TMPDIR/again.idx" "$pack" > /dev/null
		cmp "$idx" "$BATS_TEST_TMPDIR/again.idx"
		rm -f "$BATS_TEST_TMPDIR/again.idx"
		# a tree that gained one entry is a delta against its parent's
		git verify-pack -v "$idx" | awk '$2 == "tree" && NF == 7 { d++ } END { exit !(d > 100) }'
		# the tip's trees are whole, the older versions deltas against
		# the newer (as git chooses): reading the tip costs no delta
		git verify-pack -v "$idx" > "$BATS_TEST_TMPDIR/verify"
		for t in $(git rev-parse 'refs/amp/messages^{tree}') \
			 $(git ls-tree -r -d refs/amp/messages | awk '{ print $3 }'); do
			grep -q "^$t tree " "$BATS_TEST_TMPDIR/verify"
			! grep -qE "^$t tree( +[0-9]+){3} +[0-9]+ [0-9a-f]{40}" "$BATS_TEST_TMPDIR/verify" || false
		done
		# commits, then trees, then blobs, as git orders a pack
		[ "$(git verify-pack -v "$idx" | awk '$2 ~ /^(commit|tree|blob)$/ { print $5, $2 }' |
			sort -n | awk '{ print $2 }' | uniq | paste -sd ' ')" = "commit tree blob" ]
		[ "$(stat -c %a "$pack")" = 444 ]
	done
	[ "$n" = 1 ]
	# every record reads back as imported
	[ "$(git ls-tree -r refs/amp/messages tasks | wc -l)" = 400 ]
	(run -0 amp fsck && assert_output --partial clean)
}

@test "a long import writes a pack per 2,000 commits, laid end to end into one when it ends: three runs of commits, trees, blobs in one pack" {
	gen 4008 "$BATS_TEST_TMPDIR/l.jsonl"
	export AMP_NOW=2026-11-01T00:00:00Z # after the last record
	git config amp.checkRepo false
	git config amp.autoPack 0
	n=$(ls .git/objects/pack/*.pack | wc -l) # amp init's
	run -0 amp import "$BATS_TEST_TMPDIR/l.jsonl"
	[ "$(ls .git/objects/pack/*.pack | wc -l)" = $((n + 1)) ]
	idx=$(ls -S .git/objects/pack/*.idx | head -1)
	[ "$(git verify-pack -v "$idx" | awk '$2 ~ /^(commit|tree|blob)$/ { print $5, $2 }' |
		sort -n | awk '{ print $2 }' | uniq | paste -sd ' ')" = \
	  "commit tree blob commit tree blob commit tree blob" ]
	run -0 git fsck --full
	[ "$(git rev-list --count refs/amp/messages)" = 4009 ]
}
