#!/usr/bin/env bash
# Benchmark of one hub shared by many agents (make bench-hub; never part of
# the tests): N agents, each a clone of one hub on loopback guarded by amp's
# server hook, each in a loop: send one message (a dispatch of a task of
# its own, which the hook checks), then one `amp sync`, for a fixed wall
# time.  The hub is a bare repository served by `git daemon`, by a real
# private sshd (test/hub.bash), or by Debian's gitolite3 behind its own
# sshd with a key per agent (as test/32-hubs.bats sets it up).
# Per configuration:
#   msgs/s    records on the hub's ref when the time is up / the time (the
#             time starts after one sync of every clone, which opens its
#             ssh master: the figures are an agent's steady state);
#   latency   a probe writes a message on its clone, syncs (again until the
#             push is taken), and a second probe clone syncs until it sees
#             it: median and p90 of the time from the write;
#   retries   the `retries` of every successful `amp sync --json`: mean, max;
#   gave up   syncs that gave up (exit 4: amp.syncRetries, default 10, or a
#             transport error), out of all syncs;
#   join      inbox mode: the hub's post-receive hook's trace (AMP_TRACE)
#             of each inbox's join: median and p90 ms it waited for the
#             ref's writers' lock (never for another join: a push that
#             finds one under way leaves its inbox to it), median ms of the
#             join itself;
#   pend      inbox mode: syncs that ended with their push not joined yet
#             ("pending", after amp.syncRetries fetches again; not lost);
#   lost      messages an agent's `amp send` reported that are not on the
#             hub after one last sync of every clone, one at a time (must be 0).
#   refs      with AMP_BENCH_HUB_SHARDS=S (default 1), agent I writes to
#             refs/amp/shard<I mod S>/messages (git config amp.ref), a
#             stand-in for sharding the SSOT by task: S refs, each its own
#             compare-and-swap, every clone fetching all of them.
# Environment: AMP_BENCH_HUB_AGENTS (default "8 32 128");
# AMP_BENCH_HUB_MODES (default "strict+ref inbox"): each a push mode (git
# config amp.syncPush of the agents: ref or inbox), "strict+" before it
# for strict mode (amp.requireSigned on the hub and every clone, a key per
# agent in the allowed signers); AMP_BENCH_HUB_TRANSPORTS (default "daemon
# ssh gitolite"); AMP_BENCH_HUB_SSH_CONTROL (default true: git config
# amp.sshControl of the agents, one ssh connection per clone kept open;
# false: a connection per git run); AMP_BENCH_HUB_BATCH (default 1:
# messages an agent sends between two syncs); AMP_BENCH_HUB_SECONDS
# (default 20).  The machine's cores are shared by every agent, the servers
# and git: the figures are what one loopback box sustains.
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
agents_list=${AMP_BENCH_HUB_AGENTS:-8 32 128}
seconds=${AMP_BENCH_HUB_SECONDS:-20}
transports=${AMP_BENCH_HUB_TRANSPORTS:-daemon ssh gitolite}
shards=${AMP_BENCH_HUB_SHARDS:-1}
modes=${AMP_BENCH_HUB_MODES:-strict+ref inbox}
batch=${AMP_BENCH_HUB_BATCH:-1}
control=${AMP_BENCH_HUB_SSH_CONTROL:-true}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-hub.XXXXXX")
HUB_BASE=$work
# shellcheck source=test/hub.bash
. "$src/test/hub.bash"
# stop_masters: the ssh masters the clones' amp sync left (amp.sshControl).
stop_masters() {
	local m
	for m in "$work"/c*/.git/amp/ssh/* "$work"/[pq]/.git/amp/ssh/* "$work"/seed/.git/amp/ssh/*; do
		[ -S "$m" ] && ssh -o ControlPath="$m" -O exit x 2> /dev/null
	done
	return 0
}
# stop_gitolite: the sshd in front of gitolite, if any.
stop_gitolite() {
	local f=$work/gl-sshd/sshd.pid
	[ -f "$f" ] || return 0
	kill "$(cat "$f")" 2> /dev/null || true
	rm -f "$f"
}
stop_all() {
	stop_masters
	stop_servers
	stop_gitolite
}
trap 'stop_all; rm -rf "$work"' EXIT
# AMP_TRACE: the hub's hooks trace their joins (passed on by ssh)
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 AMP_TRACE=1
mkdir -p "$HOME"
git config --global user.name bench
git config --global user.email bench@example.invalid
git config --global init.defaultBranch main
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
		git -C "$hub" ls-tree -r --name-only "$(shard_ref $k)"
	done | sed -n 's#.*\.msg\.\(.*\)\.json$#\1#p' | sort
}
hub_records() { hub_ids | wc -l; }

# agent I END: clone c<I> sends dispatches of tasks T-2026-<I+1><NNNN> and
# syncs until the wall clock passes END (ns); msg_ids in sent, one line
# "<exit> <retries>" per sync in syncs.
agent() {
	local i=$1 end=$2 j=0 id out rc b
	cd "$work/c$i"
	: > sent; : > syncs; : > refetched
	while [ "$(now_ns)" -lt "$end" ]; do
		for ((b = 0; b < batch; b++)); do
			id=$(amp send task_dispatch --task "$(printf 'T-2026-%d%04d' $((i + 1)) $j)" \
				--from coordinator --to executor --payload "$work/d.json" 2>> send.err) && echo "$id" >> sent
			j=$((j + 1))
		done
		rc=0
		out=$(amp sync --json 2>> sync.err) || rc=$?
		echo "$rc $(echo "$out" | sed -n 's/.*"retries":\([0-9]*\).*/\1/p') $(echo "$out" | sed -n 's/.*"pending":true.*/1/p')" >> syncs
		echo "$out" | sed -n 's/.*"refetched":\([0-9]*\).*/\1/p' >> refetched
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
			--from coordinator --to executor --payload "$work/d.json" 2> /dev/null) || return 0
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

# pct: the median and p90 of the numbers on stdin, one a line ("- -": none).
pct() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%d %d", v[int((NR + 1) / 2)], v[int(NR * 0.9) ? int(NR * 0.9) : 1]; else print "- -" }'; }

# keys N: an ed25519 key per agent (a<I>, p, q) and the admin's, made
# once, and the allowed signers of strict mode: each agent an instance of
# the coordinator ("a<I>@coordinator"), the admin every role.
keys() {
	local k
	mkdir -p "$work/keys"
	for k in admin p q $(seq -f 'a%g' 0 $(($1 - 1))); do
		[ -f "$work/keys/$k" ] || ssh-keygen -q -t ed25519 -N '' -C "$k" -f "$work/keys/$k"
	done
	{
		printf 'admin %s\n' "$(cut -d' ' -f1,2 "$work/keys/admin.pub")"
		for k in p q $(seq -f 'a%g' 0 $(($1 - 1))); do
			printf '%s@coordinator %s\n' "$k" "$(cut -d' ' -f1,2 "$work/keys/$k.pub")"
		done
	} > "$work/allowed_signers"
}

# ssh_for KEY: the ssh command of a gitolite clone holding $work/keys/KEY.
ssh_for() {
	echo "ssh -F /dev/null -i $work/keys/$1 -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
}

# start_gitolite N STRICT: gitolite3 in $work/gitolite behind a private
# sshd, one key per agent, amp's hooks as repo-specific hooks, and a
# repository "amp" whose rules let the agents push amp's refs and their
# inboxes (test/32-hubs.bats, share/doc/hub-gitolite.md).  Sets url, hub.
start_gitolite() {
	local n=$1 strict=$2 gl=$work/gitolite d=$work/gl-sshd p port
	rm -rf "$gl" "$d" "$work/ga"
	mkdir -p "$gl/local/hooks/repo-specific" "$d"
	HOME=$gl gitolite setup -pk "$work/keys/admin.pub" > /dev/null 2>&1
	# shellcheck disable=SC2016 # gitolite.rc's own Perl, $ENV{HOME} literally
	sed -i -e "s/GIT_CONFIG_KEYS  *=>  *'',/GIT_CONFIG_KEYS => 'amp\\\\..* receive\\\\.autogc',/" \
		-e 's/# LOCAL_CODE  *=>  *"$ENV{HOME}\/local",/LOCAL_CODE => "$ENV{HOME}\/local",/' \
		-e "s/# 'repo-specific-hooks',/'repo-specific-hooks',/" "$gl/.gitolite.rc"
	for p in pre-receive post-receive; do
		printf '#!/bin/sh\nexec %s hook %s\n' "$(command -v amp)" "$p" > "$gl/local/hooks/repo-specific/amp-$p"
		chmod +x "$gl/local/hooks/repo-specific/amp-$p"
	done
	ssh-keygen -q -t ed25519 -N '' -C gitolite-host -f "$d/host_key"
	port=$(free_port)
	[ "$(id -u)" != 0 ] || mkdir -p /run/sshd
	sshd_config "$port" "$d" "$gl/.ssh/authorized_keys" "SetEnv HOME=$gl AMP_TRACE=1" > "$d/config"
	/usr/sbin/sshd -f "$d/config" -E "$d/log" 3>&-
	url=ssh://$(id -un)@127.0.0.1:$port
	GIT_SSH_COMMAND="$(ssh_for admin)" wait_for_url "$url/gitolite-admin"
	git -c core.sshCommand="$(ssh_for admin)" clone -q "$url/gitolite-admin" "$work/ga" 2> /dev/null
	cp "$work"/keys/*.pub "$work/ga/keydir/"
	mkdir -p "$work/ga/amp"
	cp "$work/allowed_signers" "$work/ga/amp/allowed_signers"
	{
		echo 'repo gitolite-admin'
		echo '    RW+     =   admin'
		echo 'repo amp'
		echo '    RW refs/amp/messages$ refs/amp/errors$ = @all'
		echo '    RW+ refs/amp-in/ = @all'
		echo '    R       =   @all'
		[ "$strict" = 0 ] || {
			echo '    config amp.requireSigned = true'
			echo "    config amp.allowedSigners = $gl/.gitolite/amp/allowed_signers"
		}
		echo '    config receive.autogc = false'
		echo '    option hook.pre-receive = amp-pre-receive'
		echo '    option hook.post-receive = amp-post-receive'
	} > "$work/ga/conf/gitolite.conf"
	git -C "$work/ga" add -A
	git -C "$work/ga" commit -q -m "amp: the bench's repository, keys and rules"
	git -C "$work/ga" -c core.sshCommand="$(ssh_for admin)" push -q origin master 2> /dev/null
	url=$url/amp
	hub=$gl/repositories/amp.git
}

# setup_clone DIR KEY PUSH STRICT: a clone's settings: where it pushes,
# strict mode with KEY, one ssh connection kept open.
setup_clone() {
	local c=$1 key=$2 push=$3 strict=$4
	git -C "$c" config amp.syncPush "$push"
	git -C "$c" config amp.sshControl "$control"
	git -C "$c" config amp.checkRepo false
	[ "$transport" != gitolite ] || git -C "$c" config core.sshCommand "$(ssh_for "$key")"
	[ "$strict" = 0 ] || {
		git -C "$c" config amp.requireSigned true
		git -C "$c" config amp.allowedSigners "$work/allowed_signers"
		git -C "$c" config amp.signingKey "$work/keys/$key"
		git -C "$c" config amp.syncVerify false # the hub's hook checked it
	}
}

# run TRANSPORT N MODE: one configuration; prints its line of the table.
run() {
	local n=$2 mode=$3 push=${3#strict+} strict=0 i d t0 t1 end pids="" base records lost=0 syncs
	transport=$1
	[ "$mode" = "$push" ] || strict=1
	# strict mode takes the time from the clock
	if [ "$strict" = 1 ]; then unset AMP_NOW; else export AMP_NOW=2026-03-01T00:00:00+00:00; fi
	stop_all
	# start_sshd exports the ssh command of its own key, which would
	# override the gitolite clones' core.sshCommand
	unset GIT_SSH_COMMAND
	rm -rf "$work"/hub.git "$work"/c* "$work"/p "$work"/q "$work"/seed
	keys "$n"
	hub=$work/hub.git
	if [ "$transport" = gitolite ]; then
		start_gitolite "$n" "$strict"
		git -c core.sshCommand="$(ssh_for admin)" clone -q "$url" "$work/seed" 2> /dev/null
	else
		git init -q --bare "$hub"
		amp hook install --server --repo "$hub" > /dev/null
		[ "$strict" = 0 ] || {
			git -C "$hub" config amp.requireSigned true
			git -C "$hub" config amp.allowedSigners "$work/allowed_signers"
		}
		case $transport in
		daemon) start_daemon --max-connections=0; url=$URL ;;
		ssh) start_sshd; url=$SSH_URL ;;
		esac
		git clone -q "$hub" "$work/seed" 2> /dev/null
		git -C "$work/seed" remote set-url origin "$url"
	fi
	setup_clone "$work/seed" admin ref "$strict"
	for ((i = 0; i < shards; i++)); do
		git -C "$work/seed" config amp.ref "$(shard_ref $i)"
		(cd "$work/seed" && amp init > /dev/null && amp sync > /dev/null)
	done
	# clones made from the path (fast), then pointed at the server
	for i in $(seq 0 $((n - 1))) p q; do
		git clone -q "$hub" "$work/c$i" 2> /dev/null
		git -C "$work/c$i" fetch -q origin 'refs/amp/*:refs/amp/*'
		git -C "$work/c$i" remote set-url origin "$url"
		case $i in
		p | q) git -C "$work/c$i" config amp.ref "$(shard_ref 0)"; setup_clone "$work/c$i" "$i" "$push" "$strict" ;;
		*) git -C "$work/c$i" config amp.ref "$(shard_ref $((i % shards)))"; setup_clone "$work/c$i" "a$i" "$push" "$strict" ;;
		esac
	done
	mv "$work/cp" "$work/p"; mv "$work/cq" "$work/q"
	# warm-up, outside the window: one sync of every clone, so that each
	# opens its ssh master (amp.sshControl) as an agent at work has
	for i in $(seq 0 $((n - 1))) p q; do
		[ -d "$work/c$i" ] && d=$work/c$i || d=$work/$i
		(cd "$d" && amp sync > /dev/null 2>&1) &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # one word per pid
	wait $pids || true
	pids=""
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
		(cd "$work/c$i" && amp sync > /dev/null 2>> sync.err) || echo "c$i: last sync failed: $(tail -1 "$work/c$i/sync.err")" >&2
	done
	hub_ids > "$work/on-hub"
	for i in $(seq 0 $((n - 1))); do
		lost=$((lost + $(sort "$work/c$i/sent" | comm -23 - "$work/on-hub" | wc -l)))
	done
	syncs=$(cat "$work"/c*/syncs)
	cat "$work"/c*/sync.err | sed -n 's/.*amp hook: trace: join of [^ ]*\/messages: waited_ms=\([0-9]*\) joined_ms=\([0-9]*\).*/\1 \2/p' > "$work/joins"
	join="$(cut -d' ' -f1 "$work/joins" | pct) $(cut -d' ' -f2 "$work/joins" | pct | cut -d' ' -f1)"
	awk -v t="$transport" -v p="$mode" -v n="$n" -v refs="$shards" -v recs="$records" -v s="$(((t1 - t0) / 1000000))" \
		-v lost="$lost" -v join="$join" \
		-v lat="$(pct < "$work/latency") $(wc -l < "$work/latency")" \
		'BEGIN { split(lat, l, " "); split(join, jn, " ") }
		{ all++; if ($1 == 4) gave++; else if ($1 != 0) other++; else { ok++; r += $2; if ($2 > m) m = $2; pend += ($3 == 1) } }
		END { printf "| %-8s | %3d | %-12s | %4d | %5d | %6.1f | %5s | %5s | %4d | %5.2f | %3d | %4d / %-5d | %3d | %4d | %5s | %5s | %5s | %d |\n",
			t, n, p, refs, recs, recs / (s / 1000), l[1], l[2], l[3], ok ? r / ok : 0, m, gave, all, other, pend, jn[1], jn[2], jn[3], lost }' <<< "$syncs"
	# inbox: how often a sync fetched again for a join under way
	[ "$push" != inbox ] || cat "$work"/c*/refetched | awk '{ s += $1; n++ } END { if (n) printf "    refetched: %.2f fetches again per sync (inbox: waiting for the join under way)\n", s / n }' >&2
	# why syncs failed, once per reason: amp's, and git's own words (a push
	# or fetch that exited 128 says why only there; a reset one was tried
	# again, and counts here whether or not the sync gave up)
	cat "$work"/c*/sync.err 2> /dev/null | sed -n -e 's/^amp sync: error: //p' -e 's/^\(fatal\|error\): /git: &/p' |
		sed 's/[0-9a-f]\{7,\}/H/g; s/:[0-9]\{2,5\}\//:PORT\//g' | sort | uniq -c | sort -rn | head -6 | sed 's/^/    /' >&2
}

echo "one hub, N agents each sending $batch message(s) then syncing in a loop for ${seconds} s ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), amp.sshControl $control)"
echo "| server   | N   | mode         | refs | msgs  | msgs/s | lat50 | lat90 | n    | retr  | max | gave up / syncs | oth | pend | wait50 | wait90 | join50 | lost |"
echo "| -------- | --- | ------------ | ---- | ----- | ------ | ----- | ----- | ---- | ----- | --- | -------------- | --- | ---- | ------ | ------ | ------ | ---- |"
for transport in $transports; do
	for mode in $modes; do
		for n in $agents_list; do
			run "$transport" "$n" "$mode"
		done
	done
done
echo "(lat: probe's ms from write to visible on a second clone, n probes; retr: mean retries per successful sync; gave up: syncs that exited 4; oth: other failures; pend: syncs whose push the hub's join had not taken yet; wait, join: ms an inbox's join on the hub waited for the ref's writers and took itself; lost: sent but not on the hub after a last sync of each clone)"
