#!/usr/bin/env bats
# Issue 30: what amp derives from the SSOT (<git dir>/amp/ and the
# dashboard's state) is keyed by the build that derived it (lib/store/cache.h)
# and read only when it is a regular file no bigger than the SSOT makes
# plausible; times past 2106, branch names that resolve to main, and what
# records say (reals, auto_suspended, the lock's description).

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	send_dispatch
}

teardown() {
	fsck_teardown
}

# The build id of the amp under test (32 hex digits; empty for a build
# that has none).
build_id() {
	sed -n 's/^#define AMP_BUILD_ID "\([0-9a-f]*\)"$/\1/p' "${AMP_TEST_BUILD:-$AMP_SRC/build}/build-id.h" 2>/dev/null
}

# other_build FILE...: each FILE as another build would have left it: the
# current build id in it replaced by another (and a record cache's CRC-32
# made good again), nothing else changed.
other_build() {
	$PY - "$(build_id)" "$@" <<'PY'
import struct, sys, zlib
bid = sys.argv[1].encode()
for path in sys.argv[2:]:
    data = open(path, 'rb').read()
    if bid:
        data = data.replace(bid, b'0' * len(bid))
    if data.startswith(b'AMPRECS1'):
        data = data[:-4] + struct.pack('<I', zlib.crc32(data[:-4]))
    open(path, 'wb').write(data)
PY
}

@test "a status cache of another build is not served: the listing is read from the records again" {
	expected=$(amp status --json)
	amp status --json > /dev/null
	# an older build derived another state name for the task, under the
	# same tree (the repro of issue 30: `amp status T` said one name, the
	# listing the other)
	sed -i "s/^\($T\t[0-9a-f]*\t\)[a-z_]*\t/\1renamed_state\t/" .git/amp/status.cache
	grep -q renamed_state .git/amp/status.cache
	other_build .git/amp/status.cache .git/amp/status.shards
	run -0 amp status --json
	assert_output "$expected"
	run -0 amp status
	refute_output --partial renamed
	# and the cache was written again, by this build
	run -1 grep -c renamed_state .git/amp/status.cache
	assert_output 0
}

@test "an inbox, agents or watch state of another build is derived again; the rescan escalates nothing twice" {
	amp send task_dispatch --task T-2026-045 --from coordinator --to executor --agent bob \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	expected=$(amp inbox executor --json)
	agents=$(amp agents --json)
	amp watch --once > /dev/null
	# what an older build derived: another sender, another last task, no
	# ACK timer for the dispatch
	sed -i 's/"from":"coordinator"/"from":"renamed"/' .git/amp/inbox.json
	sed -i 's/"last_task":"T-2026-045"/"last_task":"T-LIE"/' .git/amp/agents.json
	$PY - .git/amp/watch.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for t in s["tasks"].values():
    t["acks"] = []
json.dump(s, open(sys.argv[1], "w"))
PY
	grep -q renamed .git/amp/inbox.json
	grep -q T-LIE .git/amp/agents.json
	other_build .git/amp/inbox.json .git/amp/agents.json .git/amp/watch.json
	run -0 amp inbox executor --json
	assert_output "$expected"
	run -0 amp agents --json
	assert_output "$agents"
	# the dispatch's ACK deadline (5 min) passed: the timer is back
	at 400
	before=$(commit_count)
	run -0 amp watch --once --json
	assert_output --partial '"escalation_type":"ack_timeout"'
	assert_equal "$(commit_count)" $((before + 2))
	# another build again: a full rescan, and nothing escalated twice
	other_build .git/amp/watch.json
	run -0 amp watch --once --json
	refute_output --partial '"escalation_type"'
	assert_equal "$(commit_count)" $((before + 2))
}

@test "a notify state of another build keeps its start and each entry's attempts, and derives the rest again" {
	N=$BATS_TEST_TMPDIR/calls
	mkdir -p "$N"
	rec="env > $N/\$AMP_NOTIFY_ATTEMPT.env; [ ! -e $N/rc ]"
	amp watch --once --exec "$rec" 2> /dev/null
	E=$(amp escalate $T --from executor --type conflict --severity info --description "x")
	: > "$N/rc"
	at 10
	amp watch --once --exec "$rec" 2> /dev/null
	run json_get '[(p["msg_id"], p["attempts"], p["severity"]) for p in d["pending"]]' < .git/amp/notify.json
	assert_output "[[\"$E\", 1, \"info\"]]"
	tip=$(json_get 'd["tip"]' < .git/amp/notify.json)
	# an older build derived another severity
	sed -i 's/"severity":"info"/"severity":"bogus"/' .git/amp/notify.json
	other_build .git/amp/notify.json
	rm "$N/rc"
	at 20
	run --separate-stderr amp watch --once --json --exec "$rec"
	assert_success
	# no new start (nothing skipped, nothing replayed): the second attempt
	# of the one pending, reported with what the record says
	assert_equal "$stderr" ""
	assert_output --partial "\"msg_id\":\"$E\",\"task_id\":\"$T\",\"type\":\"escalation\",\"escalation_type\":\"conflict\",\"severity\":\"info\",\"attempt\":2"
	refute_output --partial bogus
	run bash -c "grep -E '^AMP_(MSG_ID|SEVERITY)=' '$N/2.env' | sort"
	assert_output "AMP_MSG_ID=$E
AMP_SEVERITY=info"
	run ls "$N"
	assert_output "1.env
2.env"
	run json_get '[d["tip"], d["pending"], d["build"]]' < .git/amp/notify.json
	assert_output "[\"$tip\", [], \"$(build_id)\"]"
}

@test "a record cache of another build is not read: the task's records are parsed from git and the file written again" {
	local i
	# a task of 70 records: dispatches of its subtask, each ACKed
	for ((i = 0; i < 35; i++)); do
		at $((i * 10))
		[ $i -eq 0 ] || send_dispatch
		amp ack "$D" --from executor > /dev/null
	done
	trace() {
		AMP_TRACE=1 send_dispatch 2>&1 | sed -n 's/^amp send: trace: //p'
	}
	trace > /dev/null
	[ -s .git/amp/records/$T ]
	run -0 trace
	assert_output --regexp 'records_cached=[1-9][0-9]$'
	other_build .git/amp/records/$T
	run -0 trace
	assert_output --regexp 'records_parsed=7[0-9] records_cached=0$'
	run -0 trace
	assert_output --regexp 'records_parsed=1 records_cached=7[0-9]$'
}

@test "a dashboard state of another build rebuilds every page" {
	out=$BATS_TEST_TMPDIR/site
	amp dashboard --out "$out" > /dev/null
	page=$out/tasks/$T.html
	[ -s "$page" ]
	echo "LIE" >> "$page"
	# the same build, the same tip: the page is left alone
	amp dashboard --out "$out" > /dev/null
	grep -q LIE "$page"
	other_build "$out/.amp-dashboard.json" "$out"/.amp-dashboard/*.json
	amp dashboard --out "$out" > /dev/null
	run -1 grep -c LIE "$page"
}

@test "the build id is a hash of the sources: any change to lib/, cmd/ or a schema changes it, a rebuild of the same tree does not" {
	src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	cp -r "$AMP_SRC/Makefile" "$AMP_SRC/lib" "$AMP_SRC/cmd" "$AMP_SRC/schemas" "$src/"
	id() {
		make -s -C "$src" build/build-id.h > /dev/null || return 1
		sed -n 's/^#define AMP_BUILD_ID "\([0-9a-f]\{32\}\)"$/\1/p' "$src/build/build-id.h"
	}
	first=$(id)
	[ ${#first} -eq 32 ]
	touch -d '1 hour ago' "$src/build/build-id.h"
	assert_equal "$(id)" "$first"
	# unchanged: not rewritten, so nothing recompiles
	[ "$(find "$src/build/build-id.h" -mmin +30)" ]
	sed -i 's/"rejected"/"rejected_renamed"/' "$src/lib/protocol/task.c"
	second=$(id)
	[ ${#second} -eq 32 ] && [ "$second" != "$first" ]
	echo ' ' >> "$src/schemas/message.schema.json"
	third=$(id)
	[ "$third" != "$second" ] && [ "$third" != "$first" ]
	echo '/* */' >> "$src/cmd/amp-status.c"
	[ "$(id)" != "$third" ]
}

@test "a FIFO or a symbolic link in place of a derived file is not waited on nor followed: inbox, status, agents, watch, gc and wait answer" {
	amp send task_dispatch --task T-2026-045 --from coordinator --to executor --agent bob \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	inbox=$(amp inbox executor --json)
	listing=$(amp status --json)
	agents=$(amp agents --json)
	# a lying status cache elsewhere, linked in place of the real one
	cp .git/amp/status.cache "$BATS_TEST_TMPDIR/lie"
	sed -i "s/^\($T\t[0-9a-f]*\t\)[a-z_]*\t/\1linked_state\t/" "$BATS_TEST_TMPDIR/lie"
	rm -rf .git/amp
	mkdir -p .git/amp/records
	for f in inbox.json status.shards notify.json watch.json agents.json records/$T pack-attributes; do
		mkfifo ".git/amp/$f"
	done
	ln -s "$BATS_TEST_TMPDIR/lie" .git/amp/status.cache
	run -0 timeout 20 amp inbox executor --json
	assert_output "$inbox"
	run -0 timeout 20 amp status --json
	assert_output "$listing"
	run -0 timeout 20 amp status $T
	run -0 timeout 20 amp agents --json
	assert_output "$agents"
	run -0 timeout 20 amp watch --once --exec true
	run -0 timeout 20 amp gc
	# wait honours its timeout (nothing for the reviewer)
	SECONDS=0
	run -5 timeout 20 amp wait reviewer --timeout 2
	[ "$SECONDS" -le 6 ]
	mkfifo .git/amp/status.cache.new && mv -f .git/amp/status.cache.new .git/amp/status.cache
	run -0 timeout 20 amp status --json
	assert_output "$listing"
}

@test "amp wait on a FIFO inbox cache ends on SIGTERM as a shell reports it" {
	rm -f .git/amp/inbox.json
	mkdir -p .git/amp
	mkfifo .git/amp/inbox.json
	amp wait reviewer --timeout 60 > /dev/null 2>&1 &
	pid=$!
	# the wait is past its set-up once its first inbox read is done: give
	# it that long, bounded
	for ((i = 0; i < 50; i++)); do
		grep -q inotify "/proc/$pid/fdinfo/"* 2>/dev/null && break
		sleep 0.1
	done
	kill -TERM $pid
	for ((i = 0; i < 50; i++)); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null; then
		kill -KILL $pid
		wait $pid || true
		fail "amp wait was still running 5 s after SIGTERM"
	fi
	rc=0
	wait $pid || rc=$?
	assert_equal "$rc" 143
}

@test "a derived file larger than the SSOT makes plausible is discarded unread and rebuilt" {
	expected=$(amp status --json)
	inbox=$(amp inbox executor --json)
	# 200 MB of garbage, far past 16 MiB + 16 times the packs
	for f in status.cache inbox.json; do
		$PY -c 'import sys; f = open(sys.argv[1], "wb"); f.truncate(200 << 20); f.seek(0); f.write(b"amp-status-cache 4\t")' \
			".git/amp/$f"
	done
	run -0 /usr/bin/time -f 'maxrss=%M' amp status --json
	[[ ${lines[-1]} =~ ^maxrss=([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -lt 65536 ]
	assert_equal "$(printf '%s\n' "${lines[@]:0:${#lines[@]}-1}")" "$expected"
	run -0 /usr/bin/time -f 'maxrss=%M' amp inbox executor --json
	[[ ${lines[-1]} =~ ^maxrss=([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -lt 65536 ]
	# rebuilt, small again
	[ "$(stat -c %s .git/amp/status.cache)" -lt 100000 ]
	[ "$(stat -c %s .git/amp/inbox.json)" -lt 100000 ]
	run -0 amp inbox executor --json
	assert_output "$inbox"
}

@test "a write dated past 2106-02-07T06:28:15Z is refused, not stored as 1970: amp watch does not escalate its own escalations" {
	AMP_NOW=2106-02-07T06:28:15Z amp send task_dispatch --task T-2106-001 --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	run -0 git log -1 --format='%at %ct' refs/amp/messages
	assert_output "4294967295 4294967295"
	before=$(commit_count)
	AMP_NOW=2106-02-07T06:28:16Z run -2 amp send task_dispatch --task T-2106-002 --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_output "amp send: error: 2106-02-07T06:28:16+00:00 is past 2106-02-07T06:28:15+00:00, the last time a commit can be dated (git, as libgit2 writes it, holds 32 bits): nothing was written"
	assert_equal "$(commit_count)" "$before"
	# the dispatch's ACK is overdue a century later: watch cannot write its
	# escalation, says why, and writes nothing, pass after pass
	for t in 2106-02-07T06:40:00Z 2106-02-07T07:40:00Z 2200-01-01T00:00:00Z; do
		AMP_NOW=$t run -4 amp watch --once
		assert_output --partial "is past 2106-02-07T06:28:15+00:00, the last time a commit can be dated"
		assert_equal "$(commit_count)" "$before"
	done
	AMP_NOW=4294967296 run -2 amp escalate $T --from executor --type conflict --severity info --description x
	assert_equal "$(commit_count)" "$before"
}

@test "a dispatch branch git would resolve to a remote's main or master is refused with exit 3 and a branch_violation; amp validate refuses it too" {
	# what an executor's git makes of origin/main in a repository with a
	# remote: the remote's main
	git init -q --bare "$BATS_TEST_TMPDIR/upstream.git"
	git -C "$BATS_TEST_TMPDIR/repo" commit -q --allow-empty -m base
	git push -q "$BATS_TEST_TMPDIR/upstream.git" HEAD:refs/heads/main
	git remote add origin "$BATS_TEST_TMPDIR/upstream.git"
	git fetch -q origin
	run -0 git rev-parse --symbolic-full-name origin/main
	assert_output refs/remotes/origin/main
	local n b
	n=0
	for b in origin/main Origin/MAIN refs/remotes/origin/master remotes/up/stream/main up/stream/Master feature/main origin/HEAD; do
		$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["branch"]=sys.argv[2]; print(json.dumps(p))' \
			"$BATS_TEST_TMPDIR/p/dispatch.json" "$b" > d.json
		run -3 amp send task_dispatch --task T-2026-045 --from coordinator --payload d.json
		assert_output --partial "\"$b\" names one"
		n=$((n + 1))
		assert_equal "$(escalation_count branch_violation T-2026-045)" $((n))
		$PY -c 'import json,sys; print(json.dumps({"msg_id": "task_dispatch-T-2026-045-1772116327000", "protocol_version": "AMP/1.0", "type": "task_dispatch", "from": "coordinator", "to": "executor", "task_id": "T-2026-045", "timestamp": sys.argv[1], "requires_ack": True, "payload": json.load(open("d.json"))}))' \
			"$AMP_NOW" > env.json
		run -1 amp validate env.json
		assert_output --partial "/payload/branch: must not be \"$b\": a protected branch"
	done
	run git ls-tree -r --name-only refs/amp/messages
	refute_output --partial "/000001.msg.task_dispatch-T-2026-045-"
}

@test "a real is stored and printed in the shortest form that reads back the same: --confidence 0.95 is 0.95" {
	dispatch_acked
	at 60
	review_round 0
	at 100
	V=$(amp verdict $T --decision approved --confidence 0.95 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	run -0 amp show "$V" --json
	assert_output --partial '"confidence": 0.95'
	refute_output --partial '0.9499'
	run -0 git cat-file -p "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep "msg.$V.json")"
	assert_output --partial '"confidence": 0.95'
	run -0 amp show "$V"
	assert_output --partial '"confidence": 0.95'
	run -0 amp status $T --json
	refute_output --partial '0.9499'
}


@test "the hallucination lock says what happened: rejects with an approval between them are not 'in a row'" {
	dispatch_acked
	reject_rounds 1 10
	# a round that is approved, then a new round of the subtask
	at 200; review_round 1
	at 250
	A=$(amp verdict $T --decision approved --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	amp ack "$A" --from coordinator > /dev/null
	# then subtask S2, rejected twice: the third reject of the task
	p=$BATS_TEST_TMPDIR/p
	sed 's/T-2026-044-S1/T-2026-044-S2/' "$p/dispatch.json" > "$p/s2.json" && cp "$p/s2.json" "$p/dispatch.json"
	cp "$p/result2.json" "$p/result.json"
	local i
	for ((i = 0; i < 2; i++)); do
		at $((300 + i * 100)); send_dispatch
		amp ack "$D" --from executor > /dev/null
		review_round $((1 + i))
		at $((350 + i * 100))
		V=$(amp verdict $T --decision rejected --confidence 0.9 --payload "$BATS_TEST_TMPDIR/p/reject.json")
		amp ack "$V" --from coordinator > /dev/null 2>&1 || true
	done
	run -0 amp status $T --json
	assert_output --partial '"state": "locked"'
	E=$(the_escalation hallucination_lock)
	run escalation_file "$E"
	assert_output --partial "3 rejected verdicts on this task, not in a row (the last 2 in a row, other verdicts between them) (amp.lockThreshold 3), the last $V"
	refute_output --partial "in a row (amp.lockThreshold"
}

@test "auto_suspended is true only when amp suspends: amp's own warnings say false, a critical escalation true" {
	at 400
	run -0 amp watch --once
	assert_output --partial "escalated ack_timeout $T"
	E=$(the_escalation ack_timeout)
	run -0 json_get '[d["payload"]["severity"], d["payload"]["triggered_by"], d["payload"]["auto_suspended"]]' < <(escalation_file "$E")
	assert_output '["warning", "system", false]'
	# nothing is suspended
	run -0 amp status $T --json
	assert_output --partial '"suspended": false'
	# a branch_violation of amp send: a warning, nothing suspended
	$PY -c 'import json,sys; p=json.load(open(sys.argv[1])); p["branch"]="main"; print(json.dumps(p))' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > d.json
	run -3 amp send task_dispatch --task T-2026-045 --from coordinator --payload d.json
	E=$(the_escalation branch_violation T-2026-045)
	run -0 json_get '[d["payload"]["severity"], d["payload"]["auto_suspended"]]' < <(escalation_file "$E")
	assert_output '["warning", false]'
	# an agent's warning still says it suspended its operation (AMP/1.0
	# §05: false is for info level only), and a critical one suspends
	E=$(amp escalate $T --from executor --type conflict --severity warning --description "stuck")
	run -0 json_get 'd["payload"]["auto_suspended"]' < <(escalation_file "$E")
	assert_output true
	E=$(amp escalate $T --from executor --type conflict --severity critical --description "stop")
	run -0 json_get 'd["payload"]["auto_suspended"]' < <(escalation_file "$E")
	assert_output true
	run -0 amp status $T --json
	assert_output --partial '"suspended": true'
}
