#!/usr/bin/env bats
# make bench cannot rot (issue 12): share/bench-table.sh runs at one tiny
# size, every figure of its table is a number, no writer lost a message,
# and the plot is a PNG.  Speed itself is never asserted here.

bats_require_minimum_version 1.5.0

load helpers

@test "the bench table runs at a tiny size: every row has a number per size, 0 lost, a PNG plot" {
	out=$BATS_TEST_TMPDIR/bench
	run -0 env AMP_BIN="$AMP_BIN" AMP_BENCH_SIZES="24 40" AMP_BENCH_ROUNDS=2 AMP_BENCH_SLOW_ROUNDS=1 \
		AMP_BENCH_LONG_RECORDS=40 AMP_BENCH_WRITERS_EACH=3 AMP_BENCH_OUT="$out" "$BATS_TEST_DIRNAME/../share/bench-table.sh"
	assert_output --partial "| figure | 24 msgs | 40 msgs |"
	table=$out/table.md
	[ -s "$table" ]
	# 20 figures, each with a number and its unit in both columns
	for row in "amp send, fresh task, fsync off" "plumbing script, one record" \
		"libgit2 loop in one process (floor)" "amp send into a 1,000-record task" \
		"amp status (tasks not finished), warm caches" "amp status --all, warm cache" "amp watch --once --full" "peak RSS: send" \
		"peak RSS: log, the whole history" "peak RSS: fsck" "peak RSS: agents, no cache" \
		"peak RSS: dashboard, first pass" \
		"disk per message after amp gc" "amp import" "git fast-import, same records" \
		"first amp status (nothing derived yet)" "first amp inbox executor" "first amp watch --once" \
		"amp fsck" "amp log -n 20, warm" "amp show, the oldest message, warm" \
		"peak RSS: amp import" "peak RSS: git fast-import"; do
		grep -F "| $row | " "$table" | grep -qE '\| [0-9.]+ [a-zA-Z/]+ \| [0-9.]+ [a-zA-Z/]+ \|$' ||
			{ echo "row missing or not numeric: $row"; cat "$table"; false; }
	done
	[ "$(grep -cE '^\| [a-z]' "$table")" -ge 22 ]
	grep -qE '^\| msgs/s in all \(median of 5 passes\) \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$' "$table"
	grep -qE '^\| lost \(all passes\) \| 0 \| 0 \| 0 \| 0 \|$' "$table"
	# issue 35's targets, each judged against this run's figures
	grep -qF '| target (issue 35) | this run | |' "$table"
	grep -qE '^\| amp import at least 1.0x git fast-import \(msgs/s, 40 msgs\) \| [0-9.]+x \| (met|missed.*) \|$' "$table"
	grep -qE "^\| every amp command's peak memory at most 64 MB at 40 msgs \| [0-9.]+ MB \([a-z_]+\) \| (met|missed.*) \|$" "$table"
	grep -qF '| first runs, fsck, watch --full, gc --auto and disk against 100k | not measured' "$table"
	# the data behind the plot: one line per size
	[ "$(grep -vc '^#' "$out/cost.dat")" = 2 ]
	[ "$(head -c 8 "$out/cost.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
}
