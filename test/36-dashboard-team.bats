#!/usr/bin/env bats
# amp dashboard for an admin watching a team (issue 36, what the first pass
# left): the agents page with each instance's last heartbeat and recent
# messages; the activity chart's window chosen by the URL; static pages
# filtered by state and role through the URL, without a script or a
# server; and the first pass over a long history in a bounded resident set.
# Checked in Debian's headless Chromium through puppeteer-core
# (test/web/drive.js), with axe-core, as 36-dashboard-admin does.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load dashboard

# The SSOT of a team (T0 = 2026-02-26T14:32:07Z):
#   alice (executor) claims T-2026-044, ACKs, sends a heartbeat at 60 s and
#   her result at 200 s (which ends her lease);
#   mallory (coordinator) dispatches T-2026-050..055 (six: the page keeps
#   five), then T-2026-047 with a hostile description, and escalates it
#   with a hostile description: T-2026-047 is suspended;
#   an unnamed coordinator dispatched T-2026-044 at 0 s.
setup_file() {
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR i
	alice_on_task
	at 60; amp heartbeat $T --from executor --agent alice > /dev/null
	at 200; amp send task_result --task $T --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json" > /dev/null
	for i in 0 1 2 3 4 5; do
		sed "s/Reconstruct watchOS/Step $i of/" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/d$i.json"
		at $((300 + i)); amp send task_dispatch --task T-2026-05$i --from coordinator --agent mallory \
			--payload "$BATS_TEST_TMPDIR/p/d$i.json" > /dev/null
	done
	at 400; amp send task_dispatch --task T-2026-047 --from coordinator --agent mallory --payload "$BATS_TEST_TMPDIR/p/hostile.json" > /dev/null
	at 410; amp escalate T-2026-047 --from coordinator --agent mallory --type conflict --severity critical --description "$HOSTILE" > /dev/null
	at 1200
}

setup() {
	copy_ssot
}

# text FILE: what Chromium shows of it (JSON of drive.js text).
text() {
	web text "file://$1"
}

@test "the agents page shows each instance's last heartbeat and its recent messages, newest first, five at most; hostile text is text, nothing runs" {
	amp dashboard --out "$out" > /dev/null
	run -0 text "$out/agents.html"
	page=$output
	run -0 json_get 'd["text"]' <<< "$page"
	# agent, roles, holds, last write, on task, last heartbeat
	assert_line --regexp '^alice	executor	-	2026-02-26 14:35 UTC	T-2026-044	2026-02-26 14:33 UTC	'
	assert_line --regexp '^mallory	coordinator	-	2026-02-26 14:38 UTC	T-2026-047	-	'
	# recent messages: alice's result (her ACK, claim and heartbeat are
	# bookkeeping, not messages)
	assert_output --partial 'alice
2026-02-26 14:35 UTC task_result on T-2026-044 task_result-T-2026-044-'
	# mallory's five newest, newest first: the escalation, the hostile
	# dispatch, Step 5..3 -- not Step 2..0
	run -0 json_get '"\n".join(l for l in d["text"].split("\nmallory\n")[1].splitlines() if l.startswith("2026-"))' <<< "$page"
	[ "${#lines[@]}" -eq 5 ]
	assert_line --index 0 --regexp '^2026-02-26 14:38 UTC escalation on T-2026-047 escalation-T-2026-047-[0-9]+: <script>document.title="pwned"</script>"><img src=x onerror='
	assert_line --index 1 --regexp '^2026-02-26 14:38 UTC task_dispatch on T-2026-047 task_dispatch-T-2026-047-[0-9]+: <script>.* evil$'
	assert_line --index 2 --regexp 'task_dispatch on T-2026-055 .*: Step 5 of breathing engine timing logic$'
	assert_line --index 4 --partial 'Step 3 of breathing'
	refute_output --partial 'Step 2 of'
	# the hostile text shown as text: escaped in the file, nothing ran
	run -0 grep -F 'escalation-T-2026-047-' "$out/agents.html"
	run -0 grep -cF '&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;' "$out/agents.html"
	assert_output 2
	run -1 grep -E '<script|<img' "$out/agents.html"
	run -0 json_get '[d["pwned"], d["scripts"], d["images"], d["log"]]' <<< "$page"
	assert_output '[false, [], 0, []]'
	# amp agents --json reports what the page shows
	run -0 amp agents --json
	run -0 json_get '[(a["agent"], a["last_heartbeat"], len(a["recent"]), a["recent"][0]["type"]) for a in d["agents"]]' <<< "$output"
	assert_output '[["alice", "2026-02-26T14:33:07+00:00", 1, "task_result"], ["mallory", null, 5, "escalation"]]'
}

@test "the agents page follows new writes through amp agents' cache: a new heartbeat and a new message show on the next pass; a text is cut at its first line or 120 bytes" {
	amp dashboard --out "$out" > /dev/null
	at 1300; amp heartbeat T-2026-044 --from executor --agent alice > /dev/null
	at 1310; amp escalate T-2026-044 --from executor --agent alice --type conflict --severity info --description "the spec is ambiguous" > /dev/null
	amp dashboard --out "$out" > /dev/null
	run -0 text "$out/agents.html"
	run -0 json_get 'd["text"]' <<< "$output"
	assert_line --regexp '^alice	executor	-	2026-02-26 14:53 UTC	T-2026-044	2026-02-26 14:53 UTC	'
	assert_output --partial 'alice
2026-02-26 14:53 UTC escalation on T-2026-044 escalation-T-2026-044-'
	assert_output --partial ': the spec is ambiguous
2026-02-26 14:35 UTC task_result on T-2026-044'
	# a text is cut at its first line, or at 120 bytes at a character's
	# start, "..." added
	at 1320; amp escalate T-2026-044 --from executor --agent alice --type conflict --severity info --description "$(printf 'first line\nsecond')" > /dev/null
	at 1330; amp escalate T-2026-044 --from executor --agent alice --type conflict --severity info --description "$($PY -c 'print("\u00e9" * 100)')" > /dev/null
	run -0 amp agents --json
	run -0 json_get '[r.get("text") for r in d["agents"][0]["recent"][:3]]' <<< "$output"
	assert_output "$($PY -c 'import json; print(json.dumps(["\u00e9" * 60 + "...", "first line...", "the spec is ambiguous"]))')"
}

@test "the activity chart's window is the URL's fragment: the hours with activity by default, 6, 12, 24 or 48 hours when chosen, with no script" {
	amp dashboard --out "$out" > /dev/null
	# by default the chart that fits the data (6 hours at least), alone
	run -0 web visible "file://$out/index.html" 'svg[aria-label^="messages per hour"]' aria-label rect
	assert_output "$(printf 'messages per hour over the last 6 hour(s) of activity, and open escalations\t6')"
	# each window a bookmarkable URL, linked from the overview
	for h in 12 24 48; do
		run -0 grep -F "<a href=\"#hours-$h\">last ${h}h</a>" "$out/index.html"
		run -0 web visible "file://$out/index.html#hours-$h" 'svg[aria-label^="messages per hour"]' aria-label rect
		assert_output "$(printf 'messages per hour over the last %s hour(s), and open escalations\t%s' $h $h)"
	done
	run -0 web visible "file://$out/index.html#hours-fit" 'svg[aria-label^="messages per hour"]' aria-label rect
	assert_output --partial 'of activity, and open escalations'
	# the 24 hours end at the newest message's hour: its messages are in
	# the last bar; nothing runs
	run -0 grep -o '<title>[^<]*</title>' <(sed -n '/id="hours-24"/,/<\/svg>/p' "$out/index.html")
	[ "${#lines[@]}" -eq 24 ]
	assert_line --index 23 '<title>10 message(s), 1 open escalation(s)</title>'
	assert_line --index 22 '<title>0 message(s), 0 open escalation(s)</title>'
	run -0 web text "file://$out/index.html#hours-24"
	# (the one script: the inline filter script, 36-dashboard-static)
	run -0 json_get '[d["scripts"], d["log"]]' <<< "$output"
	assert_output '[["(inline)"], []]'
}

@test "static pages filter their task tables by state and by the role holding the task through the URL's fragment, with no script and no server" {
	amp dashboard --out "$out" > /dev/null
	group=$(cd "$out" && ls groups/*.html)
	run -0 web rows "file://$out/$group"
	[ "${#lines[@]}" -eq 8 ]
	run -0 web rows "file://$out/$group#state-suspended"
	assert_output T-2026-047
	run -0 web rows "file://$out/$group#state-submitted"
	assert_output T-2026-044
	run -0 web rows "file://$out/$group#state-dispatched"
	assert_output "$(printf 'T-2026-05%s\n' 0 1 2 3 4 5)"
	run -0 web rows "file://$out/$group#state-approved"
	assert_output ''
	# held by a role: alice's result is the coordinator's to forward;
	# every dispatched task is the executor's
	run -0 web rows "file://$out/$group#role-coordinator"
	assert_output T-2026-044
	run -0 web rows "file://$out/$group#role-executor"
	assert_output "$(printf 'T-2026-05%s\n' 0 1 2 3 4 5)"
	run -0 web rows "file://$out/$group#role-reviewer"
	assert_output ''
	# the overview's table of recent tasks too, the links on the page
	run -0 web visible "file://$out/index.html" '#recent tr.task' data-state
	[ "${#lines[@]}" -eq 8 ]
	run -0 web visible "file://$out/index.html#state-suspended" '#recent tr.task' data-state
	assert_output suspended
	run -0 web visible "file://$out/index.html#role-executor" '#recent tr.task' data-roles
	assert_output "$(printf 'executor\n%.0s' 1 2 3 4 5 6)"
	run -0 grep -F '<a href="#state-suspended">suspended</a>' "$out/index.html" "$out/$group"
	run -0 grep -F '<a href="#role-executor">executor</a>' "$out/$group"
	# a row names its state and roles in attributes, escaped like the rest
	run -0 grep -F '<tr class="task" data-state="suspended" data-roles="" ' "$out/$group"
	run -0 grep -F '<tr class="task" data-state="submitted" data-roles="coordinator" ' "$out/$group"
	run -0 web text "file://$out/$group#state-suspended"
	run -0 json_get '[d["pwned"], d["scripts"], d["log"]]' <<< "$output"
	assert_output '[false, ["(inline)"], []]'
}

@test "axe-core in Chromium: no serious or critical violation on the agents page and the views chosen by a fragment" {
	amp dashboard --out "$out" > /dev/null
	group=$(cd "$out" && ls groups/*.html)
	run -0 web axe "file://$out/agents.html" "file://$out/index.html#hours-24" "file://$out/$group#state-dispatched"
	run -0 json_get '[sum(len(v["violations"]) for v in d.values()), len(d)]' <<< "$output"
	assert_output '[0, 3]'
	# and the recent messages are on the page axe read
	run -0 grep -c '<section class="round"><h3>' "$out/agents.html"
	assert_output 2
}

@test "the first pass over a long history (10,000 messages in several packs) stays under 30 MB resident, its pages and amp log's records the same" {
	# (base: 44 MB for the first pass, 43 MB for amp log; the packs'
	# delta bases libgit2 kept grew with the walk)
	git init -q "$BATS_TEST_TMPDIR/big" && cd "$BATS_TEST_TMPDIR/big" || return 1
	git config amp.checkRepo false
	amp init > /dev/null
	$PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" 10000 records.jsonl /dev/null "$(git rev-parse refs/amp/messages)"
	# four imports, four packs (one import leaves one pack)
	split -n l/4 -d records.jsonl part.
	for part in part.0*; do
		amp import "$part" > /dev/null
	done
	[ "$(find .git/objects/pack -name '*.pack' | wc -l)" -ge 4 ]
	export AMP_NOW=2026-03-01T00:00:00+00:00
	run -0 /usr/bin/time -f 'maxrss=%M' amp dashboard --out "$out"
	[[ ${lines[-1]} =~ ^maxrss=([0-9]+)$ ]]
	echo "first pass: ${BASH_REMATCH[1]} KB" >&3
	[ "${BASH_REMATCH[1]}" -lt 30720 ]
	[ "$(find "$out/tasks" -name '*.html' | wc -l)" -eq 1250 ]
	# amp log walks the same way: every record, under the same bound
	run -0 /usr/bin/time -o "$BATS_TEST_TMPDIR/rss" -f '%M' amp log --json
	[ "${#lines[@]}" -eq 10000 ]
	# the oldest last: the first dispatch
	[ "$(json_get 'd["id"]' <<< "${lines[9999]}")" = task_dispatch-T-2026-0000-1772116327000 ]
	[ "$(cat "$BATS_TEST_TMPDIR/rss")" -lt 30720 ]
}
