#!/usr/bin/env bash
# Benchmark of the bash completion (never part of the tests) on an SSOT of
# 100,000 records (25,000 tasks of four messages; the completion reads
# tree entries only, so every record shares one blob): the time to
# complete every task id, the "<type>-<task_id>-" stems of a msg_id, and
# one task's msg_ids, median of 5 runs each.
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-completion.XXXXXX")
trap 'rm -rf "$work"' EXIT

git init -q "$work/repo" && cd "$work/repo"
amp init > /dev/null
{
	printf 'blob\nmark :1\ndata 3\n{}\n\n'
	printf 'commit refs/amp/messages\ncommitter amp <amp@amp.invalid> 1772116327 +0000\ndata 5\nbench\nfrom %s\n' \
		"$(git rev-parse refs/amp/messages)"
	awk 'BEGIN {
		split("task_dispatch task_result review_request review_verdict", t, " ")
		for (n = 0; n < 25000; n++) {
			num = sprintf("%05d", n); task = "T-2026-" num
			for (i = 1; i <= 4; i++)
				printf "M 100644 :1 tasks/2026/%s/%s/%06d.msg.%s-%s-%d.json\n", substr(num, 1, 3), task, i, t[i], task, 1772116327000 + n * 1000 + i
		}
	}'
} | git fast-import --quiet
echo "SSOT of $(git ls-tree -r refs/amp/messages | grep -c '\.msg\.') records in $(git ls-tree -d refs/amp/messages tasks/2026/ | wc -l) shards"

# complete_line LINE: the number of candidates amp.bash gives for LINE.
complete_line() {
	COMP_LINE=$1 COMP_POINT=${#1}
	read -ra COMP_WORDS <<< "$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_amp
	echo "${#COMPREPLY[@]}"
}
# shellcheck source=/dev/null
source "$src/completions/amp.bash"
for line in "amp status " "amp ack task_r" "amp ack task_result-T-2026-01234-"; do
	n=$(complete_line "$line") # and the usage parse, once a shell
	for ((i = 0; i < 5; i++)); do
		a=$(date +%s%N); complete_line "$line" > /dev/null; b=$(date +%s%N)
		echo $(((b - a) / 1000000))
	done | sort -n | sed -n 3p | { read -r ms; echo "  complete '$line': $n candidates, median $ms ms"; }
done
