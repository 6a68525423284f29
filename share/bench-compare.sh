#!/usr/bin/env bash
# bench-compare.sh OLD_BIN NEW_BIN: two builds of amp side by side in one
# run, for a change that must not move the figures (issue 31: "send, status
# and watch within 5% of before").  One SSOT of AMP_BENCH_SIZE messages
# (share/gen-traffic.py, default 10,000) is imported once and copied for
# each build, so that each keeps its own derived files (a build keys them by
# its id: sharing one SSOT would rebuild them at every switch).  Then, for
# AMP_BENCH_ROUNDS rounds (default 20), each build in turn, the order
# swapped every round: amp send into a fresh task, amp status TASK, amp
# status, amp status --all, amp inbox executor, amp watch --once on an
# unchanged SSOT.  Prints a markdown table of the medians (ms) and the new
# build's figure over the old one's.  Run by `make bench-compare BASE=<rev>`.
set -eu
[ $# = 2 ] || { echo "usage: bench-compare.sh OLD_BIN NEW_BIN" >&2; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
size=${AMP_BENCH_SIZE:-10000}
rounds=${AMP_BENCH_ROUNDS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@amp.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@amp.invalid
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.2f", NR ? v[int((NR + 1) / 2)] / 1000 : 0 }'; }

cat > "$work/dispatch.json" <<'JSON'
{"description": "bench", "repo": "/srv/bench", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
 "acceptance_criteria": ["it works"], "risk_level": "low"}
JSON
git init -q "$work/ssot"
(
	cd "$work/ssot"
	"$old/amp" init > /dev/null
	git config amp.checkRepo false
	git config amp.autoPack 0
	python3 "$src/share/gen-traffic.py" $((size * 2)) "$work/lines" /dev/null \
		"$(git rev-parse refs/amp/messages)"
	"$old/amp" import "$work/lines" > /dev/null
	"$old/amp" gc > /dev/null
)
task=$(git -C "$work/ssot" ls-tree -r --name-only refs/amp/messages tasks | sed -n '1s|.*/\(T-[0-9-]*\)/.*|\1|p')
for b in old new; do
	cp -a "$work/ssot" "$work/$b"
	bin=$old; [ $b = new ] && bin=$new
	# warm: each build derives its own caches once, untimed
	(cd "$work/$b" && "$bin/amp" status --all && "$bin/amp" inbox executor && "$bin/amp" watch --once) > /dev/null 2>&1 || true
done

cases=(send status_task status status_all inbox watch_once)
seq=0
run_case() { # BUILD CASE: one timed run, its microseconds appended
	local b=$1 c=$2 bin=$old t0 t1 fresh
	[ "$b" = new ] && bin=$new
	cd "$work/$b"
	case $c in
	send) printf -v fresh T-2030-%06d $((seq += 1))
		stamp t0; "$bin/amp" send task_dispatch --task "$fresh" --from coordinator \
			--payload "$work/dispatch.json" > /dev/null; stamp t1 ;;
	status_task) stamp t0; "$bin/amp" status "$task" > /dev/null; stamp t1 ;;
	status) stamp t0; "$bin/amp" status > /dev/null; stamp t1 ;;
	status_all) stamp t0; "$bin/amp" status --all > /dev/null; stamp t1 ;;
	inbox) stamp t0; "$bin/amp" inbox executor > /dev/null; stamp t1 ;;
	watch_once) "$bin/amp" watch --once > /dev/null 2>&1 || true
		stamp t0; "$bin/amp" watch --once > /dev/null 2>&1 || true; stamp t1 ;;
	esac
	echo $(((t1 - t0) / 1000)) >> "$work/$b.$c"
}
for ((r = 0; r < rounds; r++)); do
	order="old new"; [ $((r % 2)) = 1 ] && order="new old"
	for c in "${cases[@]}"; do
		for b in $order; do run_case "$b" "$c"; done
	done
done
echo "| $size messages, median of $rounds | old ms | new ms | new / old |"
echo "|---|---|---|---|"
for c in "${cases[@]}"; do
	o=$(median "$work/old.$c") n=$(median "$work/new.$c")
	awk -v c="$c" -v o="$o" -v n="$n" 'BEGIN { printf "| %s | %s | %s | %.3f |\n", c, o, n, (o > 0 ? n / o : 0) }'
done
