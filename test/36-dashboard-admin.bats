#!/usr/bin/env bats
# amp dashboard for a busy admin (issue 36): titles, holders and times in
# words, "Needs the admin" cards that each carry the command to run, a
# header of what the admin wants, filters that are URLs, live refresh with
# --serve, a task page of threads, an agents page, an error log with author
# and task, charts that fit the data -- checked in Debian's headless
# Chromium through puppeteer-core (test/web/drive.js), with axe-core.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load dashboard

HOSTILE='<script>document.title="pwned"</script>"><img src=x onerror="document.body.setAttribute('\''data-pwned'\'','\''1'\'')">'

# web CMD ARGS...: test/web/drive.js (puppeteer-core, `make deps` runs its
# npm ci).
web() {
	[ -d "$AMP_SRC/test/web/node_modules/puppeteer-core" ] ||
		{ echo "test/web/node_modules is missing: make deps runs npm ci there" >&2; return 99; }
	timeout 120 node "$AMP_SRC/test/web/drive.js" "$@"
}

# The SSOT of the admin's morning, built once (T0 = 2026-02-26T14:32:07Z):
#   T-2026-044  claimed by alice, ACKed by her: in progress, held by alice@executor
#   T-2026-045  dispatched at 100 s, never ACKed: overdue at the time of the tests
#   T-2026-046  a high-risk dispatch: awaiting the admin's approval
#   T-2026-047  hostile text, suspended by a critical escalation
#   T-2026-048  dispatched at 1190 s: its ACK is due later
#   T-2026-049  a reject round (S1 round 1 rejected, round 2 in review), an
#               escalation lifted by the admin's resume
# and in the error log a result for T-2026-044 refused for a bad field.
setup_file() {
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR
	make_ssot
	git config amp.checkRepo false
	at 0; send_dispatch
	at 2; amp claim $T --agent alice > /dev/null
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	at 100; amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	sed -e 's/"risk_level": "medium"/"risk_level": "high"/' -e 's/Reconstruct watchOS/Migrate the billing database of/' \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/high.json"
	at 200; amp send task_dispatch --task T-2026-046 --from coordinator --payload "$BATS_TEST_TMPDIR/p/high.json" > /dev/null
	$PY - "$HOSTILE" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2])); d["description"] = sys.argv[1] + " evil"; print(json.dumps(d))
PY
	at 300; amp send task_dispatch --task T-2026-047 --from coordinator --payload "$BATS_TEST_TMPDIR/p/hostile.json" > /dev/null
	at 310; amp escalate T-2026-047 --from coordinator --type conflict --severity critical --description "$HOSTILE" > /dev/null
	# T-2026-049: a rejected round, a second round in review; an
	# escalation the admin lifts
	T=T-2026-049
	at 400; send_dispatch; amp ack "$D" --from executor > /dev/null
	reject_rounds 1 410
	at 600; review_round 1
	at 650; amp escalate $T --from coordinator --type conflict --severity critical --description "which spec is right" --affected "$Q" > /dev/null
	at 700; amp resume $T --from admin --reason "spec B holds" > /dev/null
	T=T-2026-044
	at 1190; amp send task_dispatch --task T-2026-048 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	# refused: a result whose subtask is no string
	sed 's/"subtask_id": "T-2026-044-S1"/"subtask_id": 7/' "$BATS_TEST_TMPDIR/p/result.json" > "$BATS_TEST_TMPDIR/p/bad.json"
	at 1195; run amp send task_result --task T-2026-044 --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/bad.json"
	at 1200
}

setup() {
	cp -a "$BATS_FILE_TMPDIR/repo" "$BATS_TEST_TMPDIR/repo"
	cp -a "$BATS_FILE_TMPDIR/p" "$BATS_TEST_TMPDIR/p"
	cd "$BATS_TEST_TMPDIR/repo" || return 1
	at 1200
	out=$BATS_TEST_TMPDIR/site
}


# text FILE-OR-URL: what Chromium shows of it (JSON of drive.js text).
text() {
	case $1 in http*) web text "$1" ;; *) web text "file://$1" ;; esac
}

@test "in headless Chromium the overview shows each task's title, who holds it and times in words, and a header of what the admin wants" {
	amp dashboard --out "$out" > /dev/null
	run -0 text "$out/index.html"
	page=$output
	# (a row's subtasks are lines of their cell: one row, one line)
	run -0 json_get 'd["text"].replace("\n\t", "\t")' <<< "$page"
	# the dispatch's description, cut, as the title
	assert_output --partial 'T-2026-044 Reconstruct watchOS breathing engine timing logic'
	assert_output --partial 'T-2026-046 Migrate the billing database of breathing engine timing logic'
	# who holds it: the instance of the lease and its role
	assert_line --regexp '^T-2026-044 Reconstruct.*	in_progress	alice@executor	'
	# ACK deadlines in words: overdue, or due in so long; last activity
	assert_line --regexp '^T-2026-045 .*	overdue [0-9]+m	'
	assert_line --regexp '^T-2026-048 .*	due in 4m	10s ago$'
	assert_output --partial '10s ago'
	# the header: open tasks, overdue ACKs, open escalations, agents active
	assert_output --partial '6
open task(s) of 6'
	assert_output --partial '2
overdue ACK(s)'
	assert_output --partial '1
open escalation(s)'
	assert_output --partial '1
agent(s) active in the last hour'
	# when it was generated, and no storage internals
	assert_output --partial 'Generated by amp dashboard from the SSOT at 2026-02-26 14:52 UTC'
	run -1 grep -E '[0-9a-f]{40}|tasks/2026/' "$out/index.html"
	run -0 json_get '[d["pwned"], d["scripts"], d["log"]]' <<< "$page"
	assert_output '[false, [], []]'
	# an hour on, alice's lease has run out: the row says so
	at 4800
	amp dashboard --out "$out" > /dev/null
	run -0 grep -F "<td>executor <span class=\"meta\">(alice's lease ran out)</span></td>" "$out/index.html"
}

@test "every \"Needs the admin\" card carries the command to run, and each command works as shown" {
	amp dashboard --out "$out" > /dev/null
	run -0 text "$out/needs.html"
	cards=$(json_get 'd["text"]' <<< "$output")
	run -0 grep -c '<div class="needs">' "$out/needs.html"
	assert_output 3
	run -0 grep -c '<div class="needs">.*<p>Run: <code class="cmd">amp [^<]*</code></p></div>' "$out/needs.html"
	assert_output 3
	[[ $cards == *"Run: amp resume T-2026-047 --from admin --reason '...'"* ]]
	[[ $cards == *"Run: amp approve T-2026-046 --from admin"* ]]
	[[ $cards == *"T-2026-045 dispatched 1 ACK(s) overdue"*"Run: amp watch --once"* ]]
	# the commands as the admin copies them from the page
	sed -n 's/^Run: //p' <<< "$cards" > commands
	[ "$(wc -l < commands)" -eq 3 ]
	while read -r cmd; do
		eval "$cmd" > /dev/null < /dev/null
	done < commands
	run -0 amp status T-2026-047 --json
	[ "$(json_get 'd["suspended"]' <<< "$output")" = false ]
	run -0 amp status T-2026-046 --json
	[ "$(json_get 'd["awaiting_approval"]' <<< "$output")" = null ]
	# amp watch escalated the overdue ACK: T-2026-045 is now escalated
	run -0 amp status T-2026-045 --json
	[ "$(json_get 'len(d["escalations"])' <<< "$output")" -ge 1 ]
	# and the dashboard says nothing needs the admin for those two
	amp dashboard --out "$out" > /dev/null
	run -1 grep -F 'T-2026-046.html' "$out/needs.html"
}

@test "a filter is a URL: the static filter pages and --serve's query parameters show only the matching tasks" {
	amp dashboard --out "$out" > /dev/null
	# (the suspended task's dispatch has no ACK either: it comes first)
	run -0 web rows "file://$out/overdue.html"
	assert_output "$(printf '%s\n' T-2026-047 T-2026-045)"
	run -0 web rows "file://$out/escalated.html"
	assert_output T-2026-047
	run -0 web rows "file://$out/approval.html"
	assert_output T-2026-046
	serve
	run -0 web rows "${URL}tasks.html?state=in_progress"
	assert_output T-2026-044
	run -0 web rows "${URL}tasks.html?holder=alice"
	assert_output T-2026-044
	run -0 web rows "${URL}tasks.html?q=BILLING"
	assert_output T-2026-046
	run -0 web rows "${URL}tasks.html?overdue=1&sort=task"
	assert_output "$(printf '%s\n' T-2026-045 T-2026-047)"
	run -0 web rows "${URL}tasks.html?escalated=1"
	assert_output T-2026-047
	# sortable columns: each header a URL that keeps the filters
	run -0 web rows "${URL}tasks.html?sort=task"
	assert_output "$(printf 'T-2026-%s\n' 044 045 046 047 048 049)"
	run -0 web rows "${URL}tasks.html?sort=task&desc=1"
	assert_line --index 0 T-2026-049
	run -0 curl -sS "${URL}tasks.html?state=dispatched&q=watch%20OS"
	assert_output --partial '<a href="tasks.html?state=dispatched&amp;q=watch%20OS&amp;sort=task">task</a>'
	# hostile query values are text
	run -0 curl -sS "${URL}tasks.html?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E"
	assert_output --partial 'value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"'
	refute_output --partial '"><script>alert'
}

@test "--serve: a page open in Chromium shows a new message within 5 seconds of amp send, without a reload" {
	serve
	# the message's id: its type, task and time (AMP_NOW)
	R=task_result-T-2026-044-$(((1772116327 + 1210) * 1000))
	web live "${URL}tasks/T-2026-044.html" "$R" 5000 > live.out 2>&1 &
	WEB=$!
	for _ in $(seq 200); do grep -q '^ready' live.out && break; sleep 0.1; done
	grep -q '^ready' live.out
	at 1210; run -0 amp send task_result --task T-2026-044 --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json"
	assert_output "$R"
	rc=0; wait "$WEB" || rc=$?
	cat live.out
	[ "$rc" -eq 0 ]
	run -0 tail -1 live.out
	[ "$(json_get '[d["found"], d["reloaded"], d["pwned"]]' <<< "$output")" = '[true, false, false]' ]
	(( $(json_get 'd["waited_ms"]' <<< "$output") <= 5000 ))
	[ "$(json_get 'd["log"]' <<< "$output")" = '[]' ]
	run -0 curl -sS "${URL}tasks/T-2026-044.html"
	assert_output --partial "$R"
	# the page as served: one script, the server's own, allowed by its policy
	assert_output --partial '<script src="/live.js"></script>'
	run -0 curl -sS -D - -o /dev/null "${URL}index.html"
	assert_output --partial "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; script-src 'self'; connect-src 'self'"
}

@test "--serve: the hostile task's page, live, runs nothing of a message" {
	serve
	run -0 web text "${URL}tasks/T-2026-047.html"
	run -0 json_get '[d["pwned"], d["scripts"], d["images"], d["log"]]' <<< "$output"
	assert_output "[false, [\"${URL}live.js\"], 0, []]"
}

@test "the task page: one timeline lane per subtask and round, no two marks on one another, rounds as threads, escalations with cause and lift, bookkeeping folded" {
	amp dashboard --out "$out" > /dev/null
	page=$out/tasks/T-2026-049.html
	# lanes: the task's own records, S1 round 1, S1 round 2; no empty lane
	run -0 $PY - "$page" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
svg = html[html.index("<svg"):html.index("</svg>")]
lanes = re.findall(r'<text x="4" y="[0-9]+">([^<]*)</text>', svg)
print("\n".join(lanes))
marks = [(float(x), float(y)) for x, y in re.findall(r'<circle cx="([0-9.]+)" cy="([0-9.]+)"', svg)]
marks += [(float(x) + 5, float(y) + 5) for x, y in re.findall(r'<rect x="([0-9.]+)" y="([0-9.]+)" width="10"', svg)]
marks += [(float(x), float(y)) for x, y in re.findall(r'<polygon points="([0-9.]+),[0-9]+ [0-9.]+,([0-9]+)', svg)]
close = [(a, b) for i, a in enumerate(marks) for b in marks[i + 1:] if abs(a[0] - b[0]) < 14 and abs(a[1] - b[1]) < 14]
print("marks", len(marks), "overlapping", len(close))
PY
	assert_line --index 0 'the task'
	assert_line --index 1 'T-2026-044-S1, round 1'
	assert_line --index 2 'T-2026-044-S1, round 2'
	assert_line --index 3 --regexp '^marks [0-9]+ overlapping 0$'
	# the threads: each round's request, result, verdict
	run -0 grep -c '<section class="round"><h3>T-2026-044-S1, round [12]</h3>' "$page"
	assert_output 2
	# each message links to its JSON
	run -0 grep -c '<a href="#j[0-9]*">JSON</a>' "$page"
	(( output >= 8 ))
	# the escalation, its cause, what lifted it
	run -0 grep -F 'lifted by <a href="#r' "$page"
	assert_output --partial '">resume</a> of admin (spec B holds)'
	run -0 grep -F 'cause: review_request-T-2026-049' "$page"
	# ACKs and heartbeats folded away, still there
	run -0 $PY - "$page" <<'PY'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
folded = html[html.index('<details class="bookkeeping">'):]
main = html[:html.index('<details class="bookkeeping">')]
print(main.count("<b>ACK</b>"), folded.count("<b>ACK</b>") > 0)
PY
	assert_output '0 True'
	# the suspended task's open escalation: still open, and the command
	run -0 grep -F '<span class="overdue">still open</span>: <code class="cmd">amp resume T-2026-047 --from admin --reason' "$out/tasks/T-2026-047.html"
}

@test "the agents page lists each instance: roles, what it holds, its last write and task; the error log names the author, the command, the task, the field and the reason" {
	amp dashboard --out "$out" > /dev/null
	run -0 text "$out/agents.html"
	run -0 json_get 'd["text"]' <<< "$output"
	assert_line --regexp '^alice	executor	T-2026-044	2026-02-26 14:32 UTC	T-2026-044	'
	run -0 text "$out/errors.html"
	run -0 json_get 'd["text"]' <<< "$output"
	assert_line --regexp '	executor \(.*\)	send	T-2026-044	task_result-T-2026-044-[0-9]+	1	/payload/subtask_id: '
	run -0 grep -F '<td><a href="tasks/T-2026-044.html">T-2026-044</a></td>' "$out/errors.html"
}

@test "the charts fit the data: the hours that have activity (6 at least), and the age of the open tasks" {
	amp dashboard --out "$out" > /dev/null
	run -0 grep -c '<title>[0-9]* message(s), [0-9]* open escalation(s)</title>' "$out/index.html"
	assert_output 6
	run -0 grep -F 'aria-label="messages per hour over the last 6 hour(s) of activity' "$out/index.html"
	# the six open tasks are all under an hour old
	run -0 grep -F '<title>6 open task(s) under 1h old</title>' "$out/index.html"
	at 90000
	amp dashboard --out "$out" > /dev/null
	run -0 grep -F '<title>6 open task(s) 1-3d old</title>' "$out/index.html"
}

@test "axe-core in Chromium: no serious or critical violation on the overview, a task page, the agents page, the error log" {
	amp dashboard --out "$out" > /dev/null
	run -0 web axe "file://$out/index.html" "file://$out/tasks/T-2026-047.html" "file://$out/tasks/T-2026-049.html" \
		"file://$out/agents.html" "file://$out/errors.html" "file://$out/needs.html"
	run -0 json_get '[sum(len(v["violations"]) for v in d.values()), len(d)]' <<< "$output"
	assert_output '[0, 6]'
}

@test "Lighthouse with Chromium: accessibility and best practices at 90 or more on the overview and a task page, as --serve serves them" {
	serve
	run -0 timeout 300 node "$AMP_SRC/test/web/lighthouse.js" --min 90 "${URL}index.html" "${URL}tasks/T-2026-049.html"
	[ "${#lines[@]}" -eq 2 ]
	run -0 json_get '[d["accessibility"] >= 90, d["best_practices"] >= 90]' <<< "${lines[0]}"
	assert_output '[true, true]'
}
