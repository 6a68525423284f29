#!/usr/bin/env bats
# amp watch writes each escalation with the time of its write, not the time
# its pass began: a pass of minutes (a first pass over a long history) wrote
# escalations that far behind their commits, took each for a sender's wrong
# clock (amp.maxClockSkew), escalated it as unknown, and that escalation
# too, without end.  The clock runs 100 times fast under libfaketime, so
# that a pass of a fraction of a second spans more than the skew allowed.

bats_require_minimum_version 1.5.0
load helpers
load conversation

setup() {
	make_ssot
}

teardown() {
	fsck_all_repos
}

@test "a long amp watch pass (the clock 100x fast under faketime) escalates 50 overdue tasks once each and never takes its own escalations for a wrong clock" {
	command -v faketime > /dev/null || fail "faketime is not installed (make deps installs it)"
	local i
	for ((i = 100; i < 150; i++)); do
		amp send task_dispatch --task "T-2026-$i" --from coordinator --to executor \
			--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
	git config amp.maxClockSkew 10
	unset AMP_NOW
	run -0 faketime -f '+0 x100' amp watch --once
	[ "$(grep -c '^escalated ack_timeout ' <<< "$output")" = 50 ]
	refute_output --partial "escalated unknown"
	run -0 faketime -f '+0 x100' amp watch --once
	refute_output --partial "escalated unknown"
	# no escalation in the SSOT names a wrong clock
	run -0 amp log --json
	refute_output --partial '"escalation_type":"unknown"'
	# each escalation's timestamp is within the skew of its commit's time
	amp log --json > "$BATS_TEST_TMPDIR/log.json"
	python3 - "$BATS_TEST_TMPDIR/log.json" <<'PY'
import datetime, json, subprocess, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") != "escalation":
        continue
    rec = datetime.datetime.fromisoformat(e["record"]["timestamp"]).timestamp()
    com = int(subprocess.check_output(["git", "show", "-s", "--format=%ct", e["commit"]]))
    assert abs(com - rec) <= 10, (e["id"], rec, com)
    n += 1
assert n == 100, n
PY
}
