#!/usr/bin/env bats
# Issue 30: names git treats specially never become a path of the SSOT
# (agent names refused at the command line, such entries refused by the
# hook and reported by amp fsck, so that hubs and clones with fsckObjects
# keep syncing); the first `amp watch --exec` pass notifies the escalations
# it wrote; an entry below tasks/ that is not a task is reported and
# skipped by every command that lists tasks, which list the rest.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	# the hand-made commits, in clones
	git config --global user.name tester
	git config --global user.email tester@example.invalid
}

teardown() {
	fsck_teardown
}

# The names git refuses as a directory, and "..." whose author name git
# refuses (only dots).
SPECIAL=(. .. ... .git .GIT .Git. .git.. .gitmodules .GITMODULES .gitmodules. .gitattributes
	.GitAttributes .gitignore .mailmap)

@test "register refuses every name git treats specially with exit 2, naming --agent and the rule, and writes nothing" {
	local before n
	before=$(git rev-parse refs/amp/messages)
	for n in "${SPECIAL[@]}"; do
		run --separate-stderr amp register --agent "$n" --role executor
		[ "$status" = 2 ] || fail "$n: exit $status ($stderr)"
		[[ $stderr == "amp register: error: --agent: '$n' is not an agent name: "* ]] || fail "$n: $stderr"
	done
	run --separate-stderr amp register --agent .gitmodules --role executor
	assert_equal "$stderr" "amp register: error: --agent: '.gitmodules' is not an agent name: is .gitmodules to git (gitmodulesBlob)"
	run --separate-stderr amp register --agent .GIT --role executor
	assert_equal "$stderr" "amp register: error: --agent: '.GIT' is not an agent name: is .git to git (hasDotgit)"
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
	# names that only look alike are names
	run amp register --agent gitmodules --role executor
	assert_success
	run amp register --agent a..b --role executor
	assert_success
	run git ls-tree --name-only refs/amp/messages:agents
	assert_output $'a..b\ngitmodules'
}

@test "every way of naming the instance refuses such a name: --agent of send, ack, claim and ready, AMP_AGENT, git config amp.agent" {
	local before
	send_dispatch
	before=$(git rev-parse refs/amp/messages)
	run --separate-stderr amp send task_dispatch --task T-2026-045 --from coordinator --to executor --agent .gitattributes --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_equal "$status" 2
	assert_equal "$stderr" "amp send: error: --agent: '.gitattributes' is not an agent name: is .gitattributes to git (gitattributesBlob)"
	run --separate-stderr amp ack "$D" --from executor --agent .git
	assert_equal "$status" 2
	assert_equal "$stderr" "amp ack: error: --agent: '.git' is not an agent name: is .git to git (hasDotgit)"
	run --separate-stderr amp claim $T --from executor --agent ..
	assert_equal "$status" 2
	assert_equal "$stderr" "amp claim: error: --agent: '..' is not an agent name: is \"..\" (hasDotdot)"
	run --separate-stderr amp ready --agent .mailmap
	assert_equal "$status" 2
	[[ $stderr == "amp ready: error: --agent '.mailmap' is not an agent name: is .mailmap to git"$'\n'usage:* ]] || fail "$stderr"
	run --separate-stderr env AMP_AGENT=.gitignore amp ack "$D" --from executor
	assert_equal "$status" 2
	assert_equal "$stderr" "amp ack: error: AMP_AGENT: '.gitignore' is not an agent name: is .gitignore to git"
	git config amp.agent .GITMODULES.
	run --separate-stderr amp ack "$D" --from executor
	assert_equal "$status" 2
	assert_equal "$stderr" "amp ack: error: git config amp.agent: '.GITMODULES.' is not an agent name: is .gitmodules to git (gitmodulesBlob)"
	git config --unset amp.agent
	assert_equal "$(git rev-parse refs/amp/messages)" "$before"
}

# plant_register CLONE AGENT: commits by hand, in CLONE, a register record of
# AGENT (a name amp itself refuses) in its place, as a writer without amp's
# checks would; sets BAD to its path.
plant_register() {
	local ms=1772116327000 blob
	(
		cd "$1" || exit 1
		printf '{\n  "protocol_version": "AMP/1.0",\n  "type": "register",\n  "from": "executor",\n  "agent": "%s",\n  "roles": [\n    "executor"\n  ],\n  "timestamp": "2026-02-26T14:32:07.000+00:00"\n}\n' "$2" > "$BATS_TEST_TMPDIR/reg.json"
		blob=$(git hash-object -w "$BATS_TEST_TMPDIR/reg.json")
		echo "agents/$2/register-$ms-${blob:0:12}.json" > "$BATS_TEST_TMPDIR/reg.path"
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/reg.idx git read-tree refs/amp/messages
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/reg.idx git update-index --add --cacheinfo "100644,$blob,$(cat "$BATS_TEST_TMPDIR/reg.path")"
		tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/reg.idx git write-tree)
		rm -f "$BATS_TEST_TMPDIR/reg.idx"
		git update-ref refs/amp/messages "$(GIT_AUTHOR_NAME=$2 git commit-tree "$tree" -p refs/amp/messages \
			-m "register $2 executor" -m "Amp-Type: register
Amp-Register: $2
Amp-Agent: $2")"
	)
	BAD=$(cat "$BATS_TEST_TMPDIR/reg.path")
}

@test "a hand-made commit adding agents/.gitmodules is refused by amp's hook and reported by amp fsck" {
	local hub=$BATS_TEST_TMPDIR/hub.git before new
	git init -q --bare "$hub"
	amp hook install --server --repo "$hub" > /dev/null
	git push -q "$hub" 'refs/amp/*:refs/amp/*'
	git clone -q "$hub" "$BATS_TEST_TMPDIR/bad" 2> /dev/null
	git -C "$BATS_TEST_TMPDIR/bad" fetch -q origin 'refs/amp/*:refs/amp/*'
	plant_register "$BATS_TEST_TMPDIR/bad" .gitmodules
	fsck_exempt "$BATS_TEST_TMPDIR/bad" "holds the hand-made .gitmodules entry the hook must refuse"
	before=$(git -C "$hub" rev-parse refs/amp/messages)
	new=$(git -C "$BATS_TEST_TMPDIR/bad" rev-parse refs/amp/messages)
	git -C "$BATS_TEST_TMPDIR/bad" cat-file -e "refs/amp/messages:$BAD"
	run git -C "$BATS_TEST_TMPDIR/bad" push origin 'refs/amp/messages:refs/amp/messages'
	assert_failure
	assert_output --partial "amp hook: refused refs/amp/messages: commit ${new:0:7}: agents/.gitmodules: a name git refuses (git fsck; a hub or clone with fsckObjects refuses the push or fetch): is .gitmodules to git (gitmodulesBlob)"
	assert_equal "$(git -C "$hub" rev-parse refs/amp/messages)" "$before"
	run --separate-stderr amp fsck --repo "$BATS_TEST_TMPDIR/bad"
	assert_equal "$status" 3
	assert_line "amp fsck: ${new:0:7}: agents/.gitmodules: a name git refuses (git fsck; a hub or clone with fsckObjects refuses the push or fetch): is .gitmodules to git (gitmodulesBlob)"
	# git agrees
	run git -C "$BATS_TEST_TMPDIR/bad" fsck --strict
	assert_output --partial gitmodulesBlob
}

@test "amp fsck names every variant git's fsck refuses: NTFS short names and trailing dots, HFS+ ignorable code points, any case" {
	local names=(. .. .gitattributes .GITMODULES. 'GIT~1' '.git. .' 'gitmod~1' 'GI7EBA~1' 'gi7d29~1' '.git::$INDEX_ALLOCATION'
		$'.g\u200cit' $'.git\uFEFF' $'\u200e.mailmap' '.gitignore ' 'x\.git') n bad=$BATS_TEST_TMPDIR/bad blob tree
	git clone -q . "$bad" 2> /dev/null
	fsck_exempt "$bad" "holds every name git's fsck refuses, for amp fsck to name"
	git -C "$bad" fetch -q origin 'refs/amp/*:refs/amp/*'
	blob=$(echo '{}' | git -C "$bad" hash-object -w --stdin)
	for n in "${names[@]}"; do
		tree=$(printf '100644 blob %s\tf.json\n' "$blob" | git -C "$bad" mktree)
		tree=$(git -C "$bad" ls-tree refs/amp/messages | { cat; printf '040000 tree %s\t%s\n' "$tree" "$n"; } | git -C "$bad" mktree)
		git -C "$bad" update-ref refs/amp/messages "$(git -C "$bad" commit-tree "$tree" -p refs/amp/messages -m planted)"
		run amp fsck --repo "$bad"
		[ "$status" = 3 ] || fail "[$n]: exit $status: $output"
		assert_line --regexp "^amp fsck: [0-9a-f]{7}: .*: a name git refuses \\(git fsck; a hub or clone with fsckObjects refuses the push or fetch\\): is "
		git -C "$bad" update-ref refs/amp/messages refs/amp/messages~1
	done
	# names git accepts are not reported as such
	for n in .git-x gitmodules '.gitmodules~' 'GIT~5'; do
		tree=$(git -C "$bad" ls-tree refs/amp/messages | { cat; printf '100644 blob %s\t%s\n' "$blob" "$n"; } | git -C "$bad" mktree)
		git -C "$bad" update-ref refs/amp/messages "$(git -C "$bad" commit-tree "$tree" -p refs/amp/messages -m planted)"
		run amp fsck --repo "$bad"
		refute_output --partial "a name git refuses"
		git -C "$bad" update-ref refs/amp/messages refs/amp/messages~1
	done
}

@test "a hub with receive.fsckObjects and a clone with transfer.fsckObjects keep syncing after the refusal" {
	local hub=$BATS_TEST_TMPDIR/hub.git
	git init -q --bare "$hub"
	git -C "$hub" config receive.fsckObjects true
	amp hook install --server --repo "$hub" > /dev/null
	git remote add hub "$hub"
	git config amp.remote hub
	amp sync > /dev/null
	git clone -q "$hub" "$BATS_TEST_TMPDIR/b" 2> /dev/null
	git -C "$BATS_TEST_TMPDIR/b" config transfer.fsckObjects true
	(cd "$BATS_TEST_TMPDIR/b" && git config user.name b && git config user.email b@example.invalid && amp sync > /dev/null)
	run amp register --agent .gitmodules --role executor --sync
	assert_equal "$status" 2
	run amp register --agent .gitattributes --role executor --sync
	assert_equal "$status" 2
	run amp register --agent alice --role executor --sync
	assert_success
	run amp sync
	assert_success
	cd "$BATS_TEST_TMPDIR/b"
	run amp sync
	assert_success
	run amp register --agent bob --role reviewer --sync
	assert_success
	cd "$BATS_TEST_TMPDIR/repo"
	run amp sync
	assert_success
	run git ls-tree --name-only refs/amp/messages:agents
	assert_output $'alice\nbob'
	run git fsck --strict --no-dangling
	assert_success
	run git -C "$hub" fsck --strict --no-dangling
	assert_success
}

# ---- defect 7: the first --exec pass ---------------------------------------

# The recorder (as 72-notify's): each call's stdin in $N/<k>.json, its
# AMP_MSG_ID in $N/<k>.id.
recorder() {
	N=$BATS_TEST_TMPDIR/calls
	mkdir -p "$N"
	export N
	cat > "$BATS_TEST_TMPDIR/notify.sh" <<'SH'
k=$(($(ls "$N" | grep -c '\.json$') + 1))
cat > "$N/$k.json"
printf '%s\n' "$AMP_MSG_ID" > "$N/$k.id"
SH
	REC="sh $BATS_TEST_TMPDIR/notify.sh"
}

# called_ids: the AMP_MSG_ID of every call, in order.
called_ids() {
	cat "$N"/*.id 2> /dev/null | cat
}

@test "the first amp watch --exec pass notifies the escalation it wrote itself, and so does a pass after notify.json is lost" {
	local e1 e2
	recorder
	send_dispatch
	at 400
	[ ! -e .git/amp/notify.json ]
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	e1=$(sed -n 's#.*/[0-9]*\.msg\.\(escalation-[^/]*\)\.json$#\1#p' <(git show --name-only --format= refs/amp/messages))
	[ -n "$e1" ] || fail "no escalation written"
	assert_line "escalated ack_timeout $T $D ($e1)"
	assert_line "notified escalation ack_timeout $T ($e1)"
	assert_equal "$(called_ids)" "$e1"
	run json_get 'd["msg_id"]' < "$N/1.json"
	assert_output "$e1"
	# notify.json lost: the next pass starts before what it writes
	rm .git/amp/notify.json
	D2=$(amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	at 800
	run --separate-stderr amp watch --once --exec "$REC"
	assert_success
	e2=$(sed -n 's#.*/[0-9]*\.msg\.\(escalation-[^/]*\)\.json$#\1#p' <(git show --name-only --format= refs/amp/messages))
	assert_line "escalated ack_timeout T-2026-045 $D2 ($e2)"
	assert_line "notified escalation ack_timeout T-2026-045 ($e2)"
	assert_equal "$(called_ids)" "$e1"$'\n'"$e2"
	run json_get '[d["tip"], d["pending"]]' < .git/amp/notify.json
	assert_output "[\"$(git rev-parse refs/amp/messages)\", []]"
}

# ---- defect 8: an entry below tasks/ that is not a task --------------------

# plant_junk PATH: commits by hand a file at PATH of the SSOT (as a sync
# from a hub without amp's hook brings one).
plant_junk() {
	echo '{}' | plant "$1"
}

# shard: the directory of the shard of $T (and of T-2026-046).
shard() {
	dirname "$(task_path "$T")"
}

# (printf it with the command and the shard of $T: tasks/2026/0/ in layout 1)
JUNK="amp %s: error: %s/junk: not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped"

@test "a directory that is not a task: status, status --all, inbox, ready, agents and dashboard report it, skip it, exit 4 and list the rest" {
	local c out
	send_dispatch
	amp register --agent alice --role executor > /dev/null
	plant_junk "$(shard)/junk/x.json"
	for c in status "status --all" "inbox executor" ready agents "dashboard --out $BATS_TEST_TMPDIR/dash"; do
		# twice: a cache made by the first run reports it too
		for _ in 1 2; do
			# shellcheck disable=SC2086
			run --separate-stderr amp $c
			[ "$status" = 4 ] || fail "amp $c: exit $status ($stderr)"
			out=$(printf "$JUNK" "${c%% *}" "$(shard)")
			assert_equal "$stderr" "$out"
		done
	done
	run --separate-stderr amp status
	assert_line --regexp "^$T +dispatched"
	run --separate-stderr amp status --all
	assert_line --regexp "^$T +dispatched"
	run --separate-stderr amp inbox executor
	assert_line --partial "$D"
	run --separate-stderr amp ready
	assert_line --regexp "^$T  P2  dispatched"
	run --separate-stderr amp agents
	assert_line --regexp "^alice  roles executor"
	[ -e "$BATS_TEST_TMPDIR/dash/tasks/$T.html" ] || ls "$BATS_TEST_TMPDIR/dash/tasks" | grep -q "$T" || fail "no page for $T"
	# amp fsck: a finding (exit 3)
	run amp fsck
	assert_equal "$status" 3
	assert_line --partial "$(shard)/junk/x.json: not a record in its task's directory"
}

@test "a task out of its place and a file among the tasks are reported and skipped the same way" {
	send_dispatch
	local away
	away=$(dirname "$(shard)")/7/T-2026-046
	plant_junk "$away/000001.msg.x.json"
	plant_junk "$(shard)/stray.json"
	run --separate-stderr amp ready
	assert_equal "$status" 4
	assert_line --regexp "^$T  P2  dispatched"
	assert_equal "$stderr" "amp ready: error: $(shard)/stray.json: not a task's directory but a file: skipped
amp ready: error: $away: task T-2026-046 out of its place ($(task_path T-2026-046)): skipped"
}

@test "amp watch reports a directory that is not a task on the pass that brings it, and enforces the rest" {
	send_dispatch
	plant_junk "$(shard)/junk/x.json"
	at 400
	run --separate-stderr amp watch --once
	assert_equal "$status" 4
	assert_equal "$stderr" "$(printf "$JUNK" watch "$(shard)")"
	assert_line --regexp "^escalated ack_timeout $T $D "
	# later passes: nothing new to say
	run --separate-stderr amp watch --once
	assert_success
	assert_equal "$stderr" ""
}

@test "such a directory synced from a hub without amp's hook does not blind amp ready or amp agents on the clone" {
	local hub=$BATS_TEST_TMPDIR/plain.git
	send_dispatch
	amp register --agent alice --role executor > /dev/null
	plant_junk "$(shard)/junk/x.json"
	git init -q --bare "$hub"
	git push -q "$hub" 'refs/amp/*:refs/amp/*'
	git clone -q "$hub" "$BATS_TEST_TMPDIR/c" 2> /dev/null
	cd "$BATS_TEST_TMPDIR/c"
	git config user.name c
	git config user.email c@example.invalid
	amp sync > /dev/null 2>&1 || true
	assert_equal "$(git rev-parse refs/amp/messages)" "$(git -C "$hub" rev-parse refs/amp/messages)"
	run --separate-stderr amp ready
	assert_equal "$status" 4
	assert_line --regexp "^$T  P2  dispatched"
	assert_equal "$stderr" "$(printf "$JUNK" ready "$(shard)")"
	run --separate-stderr amp agents
	assert_equal "$status" 4
	assert_line --regexp "^alice  roles executor"
	assert_equal "$stderr" "$(printf "$JUNK" agents "$(shard)")"
	cd "$BATS_TEST_TMPDIR/repo"
}
