#!/usr/bin/env bats
# Issue 33, SPEC-022 feedback with deadlines: amp watch escalates a
# clarification question (amp ask) left unanswered past its ack_timeout_sec,
# once, naming the question, its asker and the task; an answer (amp answer
# --ack-timeout) is acknowledged by its asker (amp ask --ack, an answer_ack
# record) or escalated the same way.  Time moves with AMP_NOW only.

bats_require_minimum_version 1.5.0
load helpers
load conversation
load enforcer
load transitions

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

# record TYPE: the newest control record of TYPE of task $T, as JSON.
record() {
	local path
	path=$(git ls-tree -r --name-only refs/amp/messages | grep "/$T/.*\.ctl\.$1-" | tail -1)
	git cat-file blob "refs/amp/messages:$path"
}

# question_escalations: the descriptions of the task's ack_timeout
# escalations that name no message (a question's), one per line.
question_escalations() {
	amp status "$T" --json | json_get "'\n'.join(e['description'] for e in d['escalations'] if e['escalation_type'] == 'ack_timeout' and not e['affected_msgs'])"
}

# still_one_escalation: a pass from a fresh watch state writes no second
# question or answer escalation, and amp fsck is clean.
still_one_escalation() {
	rm .git/amp/watch.json
	run -0 amp watch --once
	run -0 question_escalations
	assert_equal "${#lines[@]}" 1
	run -0 amp fsck
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
	still_one_escalation
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

@test "amp ask --ack: alice acknowledges dave's answer with an answer_ack record; bob, a second ACK and an answer the task does not hold are refused (exit 3); amp status shows the answer's ACK deadline and when it was acknowledged" {
	alice_acks
	at 10
	Q=$(amp ask "$T" --agent alice --question 'Which API version?')
	at 20
	run -0 amp answer "$T" --question "$Q" --answer v2 --agent dave --ack-timeout 300 --json
	A=$(json_get 'd["record"]' <<< "$output")
	assert_equal "$(json_get 'd["ack_timeout_sec"]' <<< "$output")" 300
	run -0 json_get 'd["type"], d["answers"], d["ack_timeout_sec"]' < <(record answer)
	assert_output "('answer', '$Q', 300)"
	run -3 amp ask "$T" --agent bob --ack "$A"
	assert_output --partial "answer $A of task $T is acknowledged by alice, who asked, not bob"
	refused "/acks: task $T holds no answer answer-1" "" amp ask "$T" --agent alice --ack answer-1
	run -2 amp ask "$T" --agent alice --ack "$A" --question why
	at 30
	run -0 amp ask "$T" --agent alice --ack "$A"
	K=$output
	run -0 json_get 'd["type"], d["from"], d["agent"], d["acks"]' < <(record answer_ack)
	assert_output "('answer_ack', 'executor', 'alice', '$A')"
	refused "/acks: answer $A of task $T is acknowledged already ($K)" "" amp ask "$T" --agent alice --ack "$A"
	run -0 amp status "$T" --json
	run -0 json_get '[(q["answer"]["ack_due"], q["answer"]["acked"]) for q in d["questions"]]' <<< "$output"
	assert_output '[["2026-02-26T14:37:27+00:00", "2026-02-26T14:32:37+00:00"]]'
	at 1000
	run -0 amp watch --once
	assert_equal "$(question_escalations)" ""
	run -0 amp fsck
}

@test "amp watch escalates an answer its asker did not acknowledge (amp ask --ack) past the answer's ack_timeout_sec once, naming the answer, the question, alice and the task" {
	alice_acks
	at 10
	Q=$(amp ask "$T" --agent alice --question 'Which API version?')
	at 20
	A=$(amp answer "$T" --question "$Q" --answer v2 --agent dave --ack-timeout 300)
	at 320
	run -0 amp watch --once
	assert_equal "$(question_escalations)" ""
	at 330
	run -0 amp watch --once
	assert_line --regexp "^escalated ack_timeout $T tasks/.*$A\\.json \\(escalation-$T-[0-9]+\\)$"
	run -0 question_escalations
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "^deadline missed: tasks/.*$A\\.json: answer $A to question $Q of task $T, given by the coordinator instance dave at .*, was not acknowledged by the executor instance alice that asked by .* \\(10 s late\\)\\. The asker acknowledges it: amp ask $T --ack $A "
	# a late acknowledgement is still taken; nothing is escalated again
	at 400
	amp ask "$T" --agent alice --ack "$A" > /dev/null
	still_one_escalation
}

@test "amp dashboard: the task page shows each instance's latest progress (percent, note, who, when) and the questions with their answers and state, every text escaped" {
	alice_acks
	amp claim "$T" --agent alice > /dev/null
	at 10
	amp progress "$T" --percent 30 --note 'first pass' --agent alice > /dev/null
	at 20
	amp progress "$T" --percent 60 --note '<script>alert(1)</script> & "half"' --agent alice > /dev/null
	at 30
	Q1=$(amp ask "$T" --agent alice --question '<img src=x onerror=alert(2)> which API?' --ack-timeout 600)
	at 40
	Q2=$(amp ask "$T" --agent alice --question 'Which port?' --ack-timeout 600)
	at 50
	A=$(amp answer "$T" --question "$Q2" --answer '<b>8080</b>' --agent dave --ack-timeout 300)
	at 60
	Q3=$(amp ask "$T" --agent alice --question 'Which host?')
	at 70
	amp answer "$T" --question "$Q3" --answer example.org --agent dave > /dev/null
	amp ask "$T" --agent alice --ack "$(amp status "$T" --json | json_get '[q["answer"]["record"] for q in d["questions"] if q["record"] == "'$Q3'"][0]')" > /dev/null
	out=$BATS_TEST_TMPDIR/site
	run -0 amp dashboard --out "$out"
	page=$out/tasks/$T.html
	run -0 grep -c '<h2>Progress</h2>' "$page"
	assert_output 1
	# the latest report of alice only, escaped
	run -0 grep -F '<tr><td>alice</td><td>-</td><td>60%</td><td>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;half&quot;</td><td>2026-02-26T14:32:27+00:00</td></tr>' "$page"
	run -0 grep -c '<tr><td>alice</td>' "$page"
	assert_output 1
	run -1 grep -F '<script>alert(1)' "$page"
	run -0 grep -F '<tr><td>&lt;img src=x onerror=alert(2)&gt; which API?</td><td>alice</td><td>-</td><td>2026-02-26T14:32:37+00:00</td><td><span class="overdue">unanswered</span>, answer due 2026-02-26T14:42:37+00:00</td><td>-</td><td>-</td><td>-</td></tr>' "$page"
	run -0 grep -F '<tr><td>Which port?</td><td>alice</td><td>-</td><td>2026-02-26T14:32:47+00:00</td><td>answered, acknowledgement due 2026-02-26T14:37:57+00:00</td><td>&lt;b&gt;8080&lt;/b&gt;</td><td>dave</td><td>2026-02-26T14:32:57+00:00</td></tr>' "$page"
	run -0 grep -F '<td>answered, acknowledged 2026-02-26T14:33:17+00:00</td><td>example.org</td><td>dave</td>' "$page"
	run -1 grep -F '<img src=x' "$page"
	run -1 grep -F '<b>8080' "$page"
}
