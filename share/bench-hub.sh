#!/usr/bin/env bash
# Benchmark of one hub shared by many agents (never part of the tests): N
# simulated agents, each a clone of one bare hub on loopback (guarded by
# amp's server hook, served by `git daemon` and by a real sshd: test/hub.bash),
# each in a loop: send one message (a dispatch of a task of its own, which
# the hook checks), then `amp sync`, for a fixed wall time.  Per
# configuration:
#   msgs/s    records on the hub's ref when the time is up / the time;
#   latency   a probe writes a message on its clone, syncs (again until the
#             push is taken), and a second probe clone syncs until it sees
#             it: median and p90 of the time from the write;
#   retries   the `retries` of every successful `amp sync --json`: mean, max;
#   exit 4    syncs that gave up (amp.syncRetries, default 10, or a transport
#             error), out of all syncs;
#   lost      messages an agent's `amp send` reported that are not on the
#             hub after one last sync of every clone, one at a time (must be 0).
#   refs      with AMP_BENCH_HUB_SHARDS=S (default 1), agent I writes to
#             refs/amp/shard<I mod S>/messages (git config amp.ref), a
#             stand-in for sharding the SSOT by task: S refs, each its own
#             compare-and-swap, every clone fetching all of them.
# Environment: AMP_BENCH_HUB_AGENTS (default "8 32 128"),
# AMP_BENCH_HUB_PUSH (default "ref inbox": git config amp.syncPush of the
# agents), AMP_BENCH_HUB_BATCH (default 1: messages an agent sends between
# two syncs), AMP_BENCH_HUB_SECONDS (default 20), AMP_BENCH_HUB_TRANSPORTS (default
# "daemon ssh"; "ssh-mux" is ssh with the agents' connections multiplexed
# over one, ControlMaster).  The machine's cores are shared by every agent, the
# servers and git: the figures are what one loopback box sustains.
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
agents_list=${AMP_BENCH_HUB_AGENTS:-8 32 128}
seconds=${AMP_BENCH_HUB_SECONDS:-20}
transports=${AMP_BENCH_HUB_TRANSPORTS:-daemon ssh}
shards=${AMP_BENCH_HUB_SHARDS:-1}
pushes=${AMP_BENCH_HUB_PUSH:-ref inbox}
batch=${AMP_BENCH_HUB_BATCH:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-hub.XXXXXX")
HUB_BASE=$work
# shellcheck source=test/hub.bash
. "$src/test/hub.bash"
# stop_all: the servers, and the ssh masters of ssh-mux.
stop_all() {
	local m
	stop_servers
	for m in "$work"/mux-*; do [ -S "$m" ] && ssh -o ControlPath="$m" -O exit x 2> /dev/null; done
	return 0
}
trap 'stop_all; rm -rf "$work"' EXIT
export AMP_NOW=2026-03-01T00:00:00+00:00 HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.name bench
git config --global user.email bench@example.invalid
git init -q "$work/repo"
cat > "$work/d.json" <<JSON
{"description": "bench", "repo": "$work/repo", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "S1", "description": "s", "estimated_lines": 1}],
 "acceptance_criteria": ["ok"], "risk_level": "low"}
JSON

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
now_ns() { stamp REPLY; echo "$REPLY"; }

# shard_ref K: the messages ref of shard K.
shard_ref() { if [ "$shards" = 1 ]; then echo refs/amp/messages; else echo "refs/amp/shard$1/messages"; fi; }

# hub_ids: the msg_ids on the hub's messages refs, sorted.
hub_ids() {
	local k
	for ((k = 0; k < shards; k++)); do
		git -C "$HUB_BASE/hub.git" ls-tree -r --name-only "$(shard_ref $k)"
	done | sed -n 's#.*\.msg\.\(.*\)\.json$#\1#p' | sort
}
hub_records() { hub_ids | wc -l; }

# agent I END: clone c<I> sends dispatches of tasks T-2026-<I+1><NNNN> and
# syncs until the wall clock passes END (ns); msg_ids in sent, one line
# "<exit> <retries>" per sync in syncs.
agent() {
	local i=$1 end=$2 j=0 id out rc b
	cd "$work/c$i"
	: > sent; : > syncs
	while [ "$(now_ns)" -lt "$end" ]; do
		for ((b = 0; b < batch; b++)); do
			id=$(amp send task_dispatch --task "$(printf 'T-2026-%d%04d' $((i + 1)) $j)" \
				--from coordinator --to executor --payload "$work/d.json") && echo "$id" >> sent
			j=$((j + 1))
		done
		rc=0
		out=$(amp sync --json 2> /dev/null) || rc=$?
		echo "$rc $(echo "$out" | sed -n 's/.*"retries":\([0-9]*\).*/\1/p')" >> syncs
	done
}

# probe END: the latency probe, clones p (writer) and q (reader); one line
# of ms per message in latency.
probe() {
	local end=$1 j=0 id t0 t1
	: > "$work/latency"
	while [ "$(now_ns)" -lt "$end" ]; do
		cd "$work/p"
		stamp t0
		id=$(amp send task_dispatch --task "$(printf 'T-2026-9%04d' $j)" \
			--from coordinator --to executor --payload "$work/d.json") || return 0
		j=$((j + 1))
		until amp sync > /dev/null 2>&1; do [ "$(now_ns)" -lt "$end" ] || return 0; done
		cd "$work/q"
		until amp sync > /dev/null 2>&1 && amp show "$id" > /dev/null 2>&1; do
			[ "$(now_ns)" -lt "$end" ] || return 0
		done
		stamp t1
		echo $(((t1 - t0) / 1000000)) >> "$work/latency"
	done
}

# run TRANSPORT N: one configuration; prints its line of the table.
run() {
	local transport=$1 n=$2 push=$3 url i t0 t1 end pids="" base records lost=0 syncs
	stop_all
	rm -rf "$work"/hub.git "$work"/c* "$work"/p "$work"/q
	git init -q --bare "$work/hub.git"
	amp hook install --server --repo "$work/hub.git" > /dev/null
	case $transport in
	daemon) start_daemon --max-connections=0; url=$URL ;;
	ssh) HUB_SSH_OPTS='' start_sshd; url=$SSH_URL ;;
	ssh-mux)
		HUB_SSH_OPTS="-o ControlMaster=auto -o ControlPath=$work/mux-%C -o ControlPersist=120" start_sshd
		url=$SSH_URL ;;
	esac
	git clone -q "$work/hub.git" "$work/seed" 2> /dev/null
	for ((i = 0; i < shards; i++)); do
		git -C "$work/seed" config amp.ref "$(shard_ref $i)"
		(cd "$work/seed" && amp init > /dev/null && amp sync > /dev/null)
	done
	git -C "$work/seed" remote set-url origin "$url"
	# clones made from the path (fast), then pointed at the server
	for i in $(seq 0 $((n - 1))) p q; do
		git clone -q "$work/hub.git" "$work/c$i" 2> /dev/null
		git -C "$work/c$i" fetch -q origin 'refs/amp/*:refs/amp/*'
		git -C "$work/c$i" remote set-url origin "$url"
		case $i in
		p | q) git -C "$work/c$i" config amp.ref "$(shard_ref 0)" ;;
		*) git -C "$work/c$i" config amp.ref "$(shard_ref $((i % shards)))" ;;
		esac
		git -C "$work/c$i" config amp.syncPush "$push"
	done
	mv "$work/cp" "$work/p"; mv "$work/cq" "$work/q"
	rm -rf "$work/seed"
	base=$(hub_records)
	stamp t0
	end=$((t0 + seconds * 1000000000))
	for i in $(seq 0 $((n - 1))); do
		agent "$i" "$end" &
		pids="$pids $!"
	done
	probe "$end" &
	pids="$pids $!"
	# the records when the time is up (a sync under way may still land)
	while [ "$(now_ns)" -lt "$end" ]; do sleep 0.2; done
	records=$(($(hub_records) - base))
	stamp t1
	# an agent that failed shows in its counts, not by stopping the bench
	# shellcheck disable=SC2086 # one word per pid
	wait $pids || true
	# one last sync of every clone, one at a time, then nothing is lost
	for i in $(seq 0 $((n - 1))) ; do
		(cd "$work/c$i" && amp sync > /dev/null 2>&1) || echo "c$i: last sync failed" >&2
	done
	hub_ids > "$work/on-hub"
	for i in $(seq 0 $((n - 1))); do
		lost=$((lost + $(sort "$work/c$i/sent" | comm -23 - "$work/on-hub" | wc -l)))
	done
	syncs=$(cat "$work"/c*/syncs)
	awk -v t="$transport" -v p="$push" -v n="$n" -v refs="$shards" -v recs="$records" -v s="$(((t1 - t0) / 1000000))" \
		-v sent="$(cat "$work"/c*/sent | wc -l)" -v lost="$lost" \
		-v lat="$(sort -n "$work/latency" | awk '{ v[NR] = $1 } END { if (NR) printf "%d %d %d", v[int((NR + 1) / 2)], v[int(NR * 0.9) ? int(NR * 0.9) : 1], NR; else print "- - 0" }')" \
		'BEGIN { split(lat, l, " ") }
		{ all++; if ($1 == 4) gave++; else if ($1 != 0) other++; else { ok++; r += $2; if ($2 > m) m = $2 } }
		END { printf "| %-7s | %-5s | %3d | %4d | %5d | %6.1f | %5s | %5s | %4d | %5.2f | %3d | %4d / %-5d | %3d | %d |\n",
			t, p, n, refs, recs, recs / (s / 1000), l[1], l[2], l[3], ok ? r / ok : 0, m, gave, all, other, lost }' <<< "$syncs"
}

echo "one hub, N agents each sending $batch message(s) then syncing in a loop for ${seconds} s ($(nproc) cores)"
echo "| server  | push  | N   | refs | msgs  | msgs/s | lat50 | lat90 | n    | retr  | max | exit 4 / syncs | oth | lost |"
echo "| ------- | ----- | --- | ---- | ----- | ------ | ----- | ----- | ---- | ----- | --- | -------------- | --- | ---- |"
for transport in $transports; do
	for push in $pushes; do
		for n in $agents_list; do
			run "$transport" "$n" "$push"
		done
	done
done
echo "(lat: probe's ms from write to visible on a second clone, n probes; retr: mean retries per successful sync; lost: sent but not on the hub after a last sync of each clone)"
