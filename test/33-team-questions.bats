#!/usr/bin/env bats
# Issue 33, SPEC-022 feedback with deadlines: amp watch escalates a
# clarification question (amp ask) left unanswered past its ack_timeout_sec,
# once, naming the question, its asker and the task.  Time moves with
# AMP_NOW only.

bats_require_minimum_version 1.5.0
load helpers
load conversation
load enforcer

setup() {
	make_ssot
}

teardown() {
	fsck_teardown
}

# alice_acks: the coordinator dispatches $T at 0, executor alice ACKs at 5.
alice_acks() {
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
}

# question_escalations: the descriptions of the task's ack_timeout
# escalations that name no message (a question's), one per line.
question_escalations() {
	amp status "$T" --json | json_get "'\n'.join(e['description'] for e in d['escalations'] if e['escalation_type'] == 'ack_timeout' and not e['affected_msgs'])"
}

@test "amp watch escalates alice's question unanswered past its deadline once (ack_timeout naming the question, alice and the task); bob's answered one and a question still in time are not escalated" {
	alice_acks
	at 10
	QA=$(amp ask "$T" --agent alice --question 'Which API version?' --ack-timeout 600)
	at 20
	QB=$(amp ask "$T" --agent alice --question 'Which port?' --ack-timeout 600)
	at 30
	QC=$(amp ask "$T" --agent alice --question 'Which host?' --ack-timeout 6000)
	at 40
	amp answer "$T" --question "$QB" --answer 8080 --agent dave > /dev/null
	at 600
	run -0 amp watch --once
	assert_equal "$(question_escalations)" ""
	at 611
	run -0 amp watch --once
	assert_line --regexp "^escalated ack_timeout $T .*\(escalation-$T-[0-9]+\)$"
	run -0 question_escalations
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "^deadline missed: tasks/.*$QA\\.json: question $QA of task $T, asked by the executor instance alice at .*, had no answer by .* \\(1 s late\\)\\. The Coordinator answers it: amp answer $T --question $QA "
	# once: a later pass, and a fresh state, write no second one
	at 700
	run -0 amp watch --once
	rm .git/amp/watch.json
	run -0 amp watch --once
	run -0 question_escalations
	assert_equal "${#lines[@]}" 1
	run -0 amp fsck
}

@test "a question answered after its deadline passed but before amp watch ran is not escalated" {
	alice_acks
	at 10
	Q=$(amp ask "$T" --agent alice --question 'Which API version?' --ack-timeout 60)
	run -0 amp watch --once
	at 100
	amp answer "$T" --question "$Q" --answer v2 --agent dave > /dev/null
	at 200
	run -0 amp watch --once
	assert_equal "$(question_escalations)" ""
}
