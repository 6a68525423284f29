#!/usr/bin/env bash
# share/bench-layout.sh (make bench): what a verdict, a send and an ACK
# into a task of 1,000 and 10,000 records cost against the same into a
# fresh task (6 records), in layout 1 (d39ab41's flat task directories)
# and layout 2 (fanned out, store.h "Layout"), side by side in one run:
# instructions counted by valgrind --tool=callgrind (deterministic, unlike
# wall time on a loaded machine), and the bytes of the trees each write
# adds; then a send into a new task of an SSOT of 100,000 tasks (a 1M-message
# SSOT's), where layout 1's year tree holds 1,000 entries.  The long tasks
# and the tasks are planted with git fast-import
# (share/gen-long-task.py); each command runs once warm (the status cache
# filled by an amp status, the task's record cache by a verdict undone
# before).
#   AMP_BIN=bin share/bench-layout.sh [OUT.md]
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${AMP_BIN:-$src/bin}" && pwd)
out=${1:-/dev/stdout}
export PATH=$bin:$PATH TZ=UTC AMP_NOW=2026-03-01T00:00:00+00:00
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" /tmp/amp-layout1-work/.git
git config --global user.name bench
git config --global user.email bench@example.invalid
command -v valgrind > /dev/null || { echo "bench-layout: valgrind is needed" >&2; exit 1; }

cat > "$work/dispatch.json" <<'JSON'
{"description": "bench", "repo": "/tmp/amp-layout1-work", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "T-2026-999999-S9", "description": "one", "estimated_lines": 1}],
 "acceptance_criteria": ["it works"], "risk_level": "low"}
JSON

# instructions CMD...: the instructions CMD executes (callgrind's total).
instructions() {
	valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" > "$work/cmd.out" 2> "$work/cg.err" ||
		{ cat "$work/cg.err" >&2; return 1; }
	sed -n 's/^summary: *//p' "$work/cg.out"
}

# new_tree_bytes: the bytes of the trees the tip commit added.
new_tree_bytes() {
	local total t
	total=$(git cat-file -s "refs/amp/messages^{tree}")
	for t in $(comm -13 <(git ls-tree -r -t refs/amp/messages^ | awk '$2 == "tree" { print $3 }' | sort -u) \
		<(git ls-tree -r -t refs/amp/messages | awk '$2 == "tree" { print $3 }' | sort -u)); do
		total=$((total + $(git cat-file -s "$t")))
	done
	echo "$total"
}

# measure LAYOUT N: "verdict_ir send_ir ack_ir verdict_bytes send_bytes ack_bytes"
measure() {
	local repo=$work/l$1-$2 task=T-2026-999999 m v s a vb sb ab
	git init -q "$repo"
	cd "$repo"
	git config amp.layout "$1"
	git config amp.checkRepo false
	git config amp.autoPack 0
	amp init > /dev/null
	python3 "$src/share/gen-long-task.py" "$1" "$2" "$task" "$(git rev-parse refs/amp/messages)" --review |
		git fast-import --quiet
	amp status "$task" > /dev/null
	amp status > /dev/null
	# warm: a verdict writes the task's record cache (amp status does not),
	# then the ref goes back to the planted task
	planted=$(git rev-parse refs/amp/messages)
	amp verdict "$task" --decision approved --confidence 0.9 --from reviewer > /dev/null
	git update-ref refs/amp/messages "$planted"
	v=$(instructions amp verdict "$task" --decision approved --confidence 0.9 --from reviewer)
	vb=$(new_tree_bytes)
	s=$(instructions amp send task_dispatch --task "$task" --from coordinator --to executor \
		--payload "$work/dispatch.json")
	m=$(cat "$work/cmd.out")
	sb=$(new_tree_bytes)
	a=$(instructions amp ack "$m" --from executor)
	ab=$(new_tree_bytes)
	echo "$v $s $a $vb $sb $ab"
	cd "$work"
}

# measure_tasks LAYOUT N: "send_ir new_tree_bytes year_tree_bytes" of a
# send into a new task of an SSOT of N tasks (one dispatch each).
measure_tasks() {
	local repo=$work/t$1-$2 s
	git init -q "$repo"
	cd "$repo"
	git config amp.layout "$1"
	git config amp.checkRepo false
	git config amp.autoPack 0
	amp init > /dev/null
	python3 "$src/share/gen-long-task.py" "$1" "$2" --tasks "$(git rev-parse refs/amp/messages)" |
		git fast-import --quiet
	amp status > /dev/null
	amp send task_dispatch --task T-2026-900001 --from coordinator --to executor \
		--payload "$work/dispatch.json" > /dev/null
	s=$(instructions amp send task_dispatch --task T-2026-900002 --from coordinator --to executor \
		--payload "$work/dispatch.json")
	echo "$s $(new_tree_bytes) $(git cat-file -s refs/amp/messages:tasks/2026)"
	cd "$work"
	rm -rf "$repo"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mi() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1e6 }'; }

{
	echo "| layout | records in the task | verdict Minstr (x fresh) | send Minstr (x fresh) | ACK Minstr (x fresh) | new tree bytes: verdict / send / ACK |"
	echo "|---|---|---|---|---|---|"
	for layout in 1 2; do
		read -r fv fs fa fvb fsb fab <<< "$(measure "$layout" 6)"
		echo "| $layout | 6 (fresh) | $(mi "$fv") | $(mi "$fs") | $(mi "$fa") | $fvb / $fsb / $fab |"
		for n in 1000 10000; do
			read -r v s a vb sb ab <<< "$(measure "$layout" "$n")"
			echo "| $layout | $n | $(mi "$v") ($(ratio "$v" "$fv")x) | $(mi "$s") ($(ratio "$s" "$fs")x) | $(mi "$a") ($(ratio "$a" "$fa")x) | $vb / $sb / $ab |"
		done
	done
	echo
	echo "| layout | tasks in the SSOT | send into a new task, Minstr | its new tree bytes | the year's tree, bytes |"
	echo "|---|---|---|---|---|"
	for layout in 1 2; do
		read -r s b y <<< "$(measure_tasks "$layout" 100000)"
		echo "| $layout | 100,000 (1M messages' worth) | $(mi "$s") | $b | $y |"
	done
} > "$out"
