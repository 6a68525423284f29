#!/usr/bin/env bats
# amp sync's join re-checks the rules that depend on order (issue 10): when
# two clones both answered one review_request, both ACKed one message or
# both escalated one cause, the join keeps the first in the remote's order
# and sets the other aside after a "superseded" marker -- kept byte for
# byte, in force nowhere, shown by amp status and git log.  The hub runs the
# server hook throughout, so every joined history also passes it.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load hub
load clones

setup() {
	clones_setup
}

teardown() {
	clones_teardown
}

# marker_pairs GITDIR TASK: "<marker's record field> <name of the next
# file>" for every superseded marker of TASK, read by git.
marker_pairs() {
	local dir files i
	dir=$(git -C "$1" ls-tree -r --name-only refs/amp/messages | grep "/$2/" | head -1 | xargs dirname)
	mapfile -t files < <(git -C "$1" ls-tree --name-only "refs/amp/messages:$dir")
	for ((i = 0; i < ${#files[@]}; i++)); do
		case ${files[$i]} in
		*.ctl.superseded-*)
			printf '%s %s\n' "$(git -C "$1" cat-file blob "refs/amp/messages:$dir/${files[$i]}" |
				json_get 'd["record"]')" "${files[$((i + 1))]}" ;;
		esac
	done
}

@test "two reviewers answering one review_request on two clones: the first verdict in the hub's order stands, the other is set aside, with what was built on it" {
	two_verdicts
	# the coordinator on b ACKs the verdict it sees there
	at 102
	run -0 on b amp ack "$V2" --from coordinator
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"replayed":4,"superseded":2,'
	run -0 on b amp sync
	assert_output --regexp '^up to date with origin'
	run -0 on a amp sync
	# every side holds the same history, V2 and its ACK kept byte for byte
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/messages
	assert_output --regexp "\.msg\.$V2\.json"
	assert_output --regexp "\.ack\.$V2\.json"
	# each marker names the very file after it
	run -0 marker_pairs "$HUB" $T
	assert_line --index 0 --regexp "^([0-9]{6}\.msg\.$V2\.json) \1$"
	assert_line --index 1 --regexp "^([0-9]{6}\.ack\.$V2\.json) \1$"
	# in force: V1 alone; the task is approved with the first verdict
	for c in a b; do
		run -0 on $c amp status $T --json
		run -0 json_get '[d["state"], d["subtasks"][0]["verdict"], [m["msg_id"] for m in d["messages"] if m["type"] == "review_verdict"]]' <<< "$output"
		assert_output "[\"approved\", \"$V1\", [\"$V1\"]]"
		run -0 on $c amp status $T --json
		run -0 json_get '[(s["kind"], s["id"], s["from"], s["by"]) for s in d["superseded"]]' <<< "$output"
		assert_output "[[\"message\", \"$V2\", \"reviewer\", \"$V1\"], [\"ack\", \"$V2\", \"coordinator\", null]]"
	done
	run -0 on b amp status $T
	assert_line --regexp "^superseded review_verdict $V2 from reviewer, by $V1: .*$Q.*"
	assert_line --regexp "^superseded ack $V2 from coordinator: "
	# git log says it too, on the commit that brought each
	run -0 git -C "$HUB" log --format=%B refs/amp/messages
	assert_output --partial "Amp-Superseded: message $V2 by $V1"
	assert_output --partial "Amp-Superseded: ack $V2"
	run -0 on a amp show "$V2"
	assert_line --regexp "^ack         required within 1m: none: superseded by $V1: "
	# the verdict in force is still the one the coordinator must ACK
	run -0 on a amp inbox coordinator --json
	assert_output --partial "$V1"
	refute_output --partial "$V2"
}

@test "two clones' watchers escalating one ACK timeout: one escalation stands, the other is set aside (once per cause)" {
	dispatched_on_both
	at 400
	run -0 on a amp watch --once
	assert_output --partial "escalated ack_timeout"
	at 460
	run -0 on b amp watch --once
	assert_output --partial "escalated ack_timeout"
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":1,'
	run -0 on a amp sync
	for c in a b; do
		run -0 on $c escalations
		run -0 json_get '[(e["escalation_type"], e["affected_msgs"]) for e in d]' <<< "$output"
		assert_output "[[\"ack_timeout\", [\"$D\"]]]"
		run -0 on $c amp status $T --json
		run -0 json_get '[(s["type"], s["from"], s["reason"]) for s in d["superseded"]]' <<< "$output"
		assert_output --regexp "^\[\[\"escalation\", \"system\", \"escalation-$T-[0-9]+ escalated $D first \(once per cause\)\"\]\]$"
	done
	# a later watcher on either side sees the cause as escalated
	at 500
	run -0 on b amp watch --once
	refute_output --partial escalated
}

@test "watchers escalating one cause at the same instant write the same record: the join keeps one, sets nothing aside" {
	dispatched_on_both
	at 400
	on a amp watch --once > /dev/null
	on b amp watch --once > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"replayed":0,"superseded":0,'
	run -0 on b escalations
	run -0 json_get 'len(d)' <<< "$output"
	assert_output 1
}

@test "two executors ACKing one dispatch on two clones: the first ACK stands, the second is set aside" {
	dispatched_on_both
	at 5
	on a amp ack "$D" --from executor > /dev/null
	at 7
	on b amp ack "$D" --from executor > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":1,'
	run -0 on b amp status $T --json
	run -0 json_get '[d["messages"][0]["acked_at"], [(s["kind"], s["id"], s["by"], s["timestamp"]) for s in d["superseded"]]]' <<< "$output"
	assert_output "[\"2026-02-26T14:32:12+00:00\", [[\"ack\", \"$D\", \"$D\", \"2026-02-26T14:32:14+00:00\"]]]"
}

@test "a record set aside by a join whose push failed moves with its marker when the join is done again" {
	two_verdicts
	run -0 on a amp sync
	# the hub refuses b's push once: b's join (with V2 set aside) stays local
	mv "$HUB/hooks/pre-receive" "$HUB/hooks/pre-receive.off"
	printf '#!/bin/sh\necho closed for maintenance >&2\nexit 1\n' > "$HUB/hooks/pre-receive"
	chmod +x "$HUB/hooks/pre-receive"
	run -4 on b amp sync
	assert_output --partial "closed for maintenance"
	run -0 on b amp status $T --json
	run -0 json_get '[s["id"] for s in d["superseded"]]' <<< "$output"
	assert_output "[\"$V2\"]"
	mv "$HUB/hooks/pre-receive.off" "$HUB/hooks/pre-receive"
	# meanwhile a writes more: b must join again
	at 110
	on a amp ack "$V1" --from coordinator > /dev/null
	run -0 on a amp sync
	run -0 on b amp sync --json
	assert_output --partial '"superseded":0,'
	run -0 on a amp sync
	[ "$(git -C a rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	[ "$(git -C b rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	run -0 marker_pairs "$HUB" $T
	assert_output --regexp "^([0-9]{6}\.msg\.$V2\.json) \1$"
	run -0 on a amp status $T --json
	run -0 json_get '[d["state"], [s["id"] for s in d["superseded"]]]' <<< "$output"
	assert_output "[\"approved\", [\"$V2\"]]"
}

@test "the hub's hook refuses a superseded marker that sets aside a record already in force" {
	cd a
	send_dispatch
	at 5
	amp ack "$D" --from executor > /dev/null
	amp sync > /dev/null
	# by hand: a marker naming the ACK, committed after it
	f=$(git ls-tree -r --name-only refs/amp/messages | grep "\.ack\.$D\.json")
	seq=$(basename "$f" | cut -c1-6)
	cat > marker.json <<JSON
{"protocol_version": "AMP/1.0", "type": "superseded", "task_id": "$T", "from": "system",
 "timestamp": "$AMP_NOW", "record": "$(basename "$f")", "reason": "hostile"}
JSON
	blob=$(git hash-object -w marker.json)
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git read-tree refs/amp/messages
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git update-index --add --cacheinfo \
		"100644,$blob,$(dirname "$f")/$(printf '%06d' $((10#$seq + 1))).ctl.superseded-x.json"
	tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git write-tree)
	git update-ref refs/amp/messages "$(git commit-tree "$tree" -p refs/amp/messages -m hostile)"
	# it does not reach back: the ACK stays in force
	run -0 amp status $T --json
	run -0 json_get '[d["messages"][0]["ack_state"], d["superseded"]]' <<< "$output"
	assert_output '["acked", []]'
	# and a marker that names the ACK as the next record is refused on push
	run -1 git push -q origin refs/amp/messages
	assert_output --partial "is not the next record of this commit"
}

@test "diverged error logs are joined as a union: each clone's refusals reach the hub and the other clone" {
	on b amp sync > /dev/null
	echo '{"not": "a message"}' > bad.json
	at 20
	run -1 on a amp send task_dispatch --task $T --from coordinator --payload ../bad.json
	at 30
	run -1 on b amp send task_dispatch --task $T --from coordinator --payload ../bad.json
	run -0 on a amp sync --json
	assert_output --partial '"errors_synced":true'
	run -0 on b amp sync
	run -0 on a amp sync
	for c in a b; do
		[ "$(git -C $c rev-parse refs/amp/errors)" = "$(git -C "$HUB" rev-parse refs/amp/errors)" ]
		run -0 on $c amp errors --json
		run -0 json_get '[e["time"] for e in d["errors"] if e["command"] == "send"]' <<< "$output"
		assert_output '["2026-02-26T14:32:37+00:00", "2026-02-26T14:32:27+00:00"]'
	done
	# b's refusal was replayed onto a's: linear history, its author kept
	run -0 git -C "$HUB" rev-list --merges --count refs/amp/errors
	assert_output 0
}

@test "an error log directory both clones hold with other content keeps both" {
	on b amp sync > /dev/null
	echo '{"not": "a message"}' > bad.json
	at 20
	run -1 on a amp send task_dispatch --task $T --from coordinator --payload ../bad.json
	f=$(git -C a ls-tree -r --name-only refs/amp/errors | grep reasons.json)
	# b holds the same path with other bytes (by hand, as a damaged log would)
	(cd b && echo '{"other": true}' > ../other.json &&
		blob=$(git hash-object -w ../other.json) &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git read-tree refs/amp/errors &&
		GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git update-index --add --cacheinfo "100644,$blob,$f" &&
		tree=$(GIT_INDEX_FILE=$BATS_TEST_TMPDIR/idx git write-tree) &&
		git update-ref refs/amp/errors "$(git commit-tree "$tree" -p refs/amp/errors -m other)")
	run -0 on a amp sync
	run -0 on b amp sync
	run -0 git -C "$HUB" ls-tree -r --name-only refs/amp/errors
	assert_line "$f"
	assert_line "$(dirname "$f")~1/reasons.json"
	run -0 git -C "$HUB" cat-file blob "refs/amp/errors:$(dirname "$f")~1/reasons.json"
	assert_output '{"other": true}'
	run -0 git -C "$HUB" cat-file blob "refs/amp/errors:$f"
	assert_output --partial '"command": "send"'
}

@test "a join refuses a local record whose file name is not UTF-8, naming it, instead of leaving it out" {
	dispatched_on_both
	at 5
	on b amp ack "$D" --from executor > /dev/null
	on b amp sync > /dev/null
	# clone a holds a hand-made record no list of records could name
	local dir local_tip hub_tip
	dir=$(cd a && dirname "$(record_path "$T" 000002.msg.x.json)")
	(cd a && echo '{"hello": "world"}' | plant "$dir/000002.msg.task_dispatch-$T-"$'\xff\xfe'".json" 2> /dev/null)
	local_tip=$(git -C a rev-parse refs/amp/messages)
	hub_tip=$(git -C hub.git rev-parse refs/amp/messages)
	run on a amp sync
	assert_failure 1
	assert_output --partial "$dir/000002.msg.task_dispatch-$T-"'\\xff\\xfe'".json: a file name that is not UTF-8, in a local commit"
	# nothing moved: the local history keeps it, the hub has nothing new
	[ "$(git -C a rev-parse refs/amp/messages)" = "$local_tip" ]
	[ "$(git -C hub.git rev-parse refs/amp/messages)" = "$hub_tip" ]
}
