#!/usr/bin/env bash
# Benchmark of amp sync (never part of the tests), over `git daemon` and
# over a real sshd on loopback (test/hub.bash: a bare hub guarded by amp's
# hooks; two clones, A and B), for each transport:
#   1. one message: A sends, `amp sync` on A (fetch, push), then on B
#      (fetch, fast-forward): the time of each, median of 10 rounds;
#   2. 1,000 queued messages on A (written offline, one commit each): A's
#      sync that pushes them all, and B's that fetches them;
#   3. 1,000 queued on each of A and B: B's sync replays its 1,000 records
#      onto A's (fetch, replay, push).
# AMP_BENCH_SYNC_TRANSPORTS (default "daemon ssh").
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-sync.XXXXXX")
HUB_BASE=$work
# shellcheck source=test/hub.bash
. "$src/test/hub.bash"
trap 'stop_servers; rm -rf "$work"' EXIT
export AMP_NOW=2026-03-01T00:00:00+00:00 HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.name bench
git config --global user.email bench@example.invalid

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
# ms CMD...: wall time of one run of CMD, in ms.
ms() { local a b; stamp a; "$@" > /dev/null; stamp b; awk -v d=$((b - a)) 'BEGIN { printf "%.1f\n", d / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

git init -q "$work/repo"
cat > "$work/d.json" <<JSON
{"description": "bench", "repo": "$work/repo", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "T-2026-044-S1", "description": "s", "estimated_lines": 1}],
 "acceptance_criteria": ["ok"], "risk_level": "low"}
JSON
run() {
	local transport=$1 url
	cd "$work"
	stop_servers
	rm -rf "$work/hub.git" "$work/a" "$work/b" "$work"/one.*
	git init -q --bare "$work/hub.git"
	amp hook install --server --repo "$work/hub.git" > /dev/null
	# start_daemon's arguments are extra git daemon options: none here.
	# shellcheck disable=SC2119
	case $transport in
	daemon) start_daemon; url=$URL ;;
	ssh) start_sshd; url=$SSH_URL ;;
	esac
	for c in a b; do git clone -q "$url" "$work/$c" 2> /dev/null; done
	cd "$work/a" && amp init > /dev/null && amp sync > /dev/null
	cd "$work/b" && amp sync > /dev/null

	# send CLONE FIRST COUNT: COUNT dispatches to tasks T-2026-<FIRST..>.
	send() {
		local i
		cd "$work/$1"
		for ((i = $2; i < $2 + $3; i++)); do
			amp send task_dispatch --task "T-2026-$i" --from coordinator --to executor \
				--payload "$work/d.json" > /dev/null
		done
	}

	for r in $(seq 10); do
		send a $((100 + r)) 1
		cd "$work/a"; ms amp sync >> "$work/one.a"
		cd "$work/b"; ms amp sync >> "$work/one.b"
	done
	printf '%-6s one message:    ' "$transport"; printf 'sync on A (push) %s ms, on B (fetch) %s ms  (median of 10)\n' \
		"$(median < "$work/one.a")" "$(median < "$work/one.b")"

	send a 1000 1000
	cd "$work/a"; push=$(ms amp sync)
	cd "$work/b"; fetch=$(ms amp sync)
	printf '%-6s 1,000 queued:   ' "$transport"; printf 'sync on A (push) %s ms, on B (fetch) %s ms\n' "$push" "$fetch"

	send a 3000 1000
	send b 5000 1000
	cd "$work/a"; amp sync > /dev/null
	cd "$work/b"; replay=$(ms amp sync)
	printf '%-6s 1,000 each:     ' "$transport"; printf 'sync on B (fetch 1,000, replay 1,000, push) %s ms\n' "$replay"
	cd "$work/a"; amp sync > /dev/null
	[ "$(git -C "$work/a" rev-parse refs/amp/messages)" = "$(git -C "$work/hub.git" rev-parse refs/amp/messages)" ]
	echo "records on the hub: $(git -C "$work/hub.git" ls-tree -r --name-only refs/amp/messages | grep -c '^tasks/')"
}

for transport in ${AMP_BENCH_SYNC_TRANSPORTS:-daemon ssh}; do
	run "$transport"
done
