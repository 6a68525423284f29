#!/usr/bin/env bats
# amp dashboard (issue 15): the SSOT as a static site -- an overview, a
# page per task, the error log -- regenerated incrementally, served
# read-only over HTTP, checked as text and in a real browser (headless
# Chromium).  Every message-derived string is untrusted.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load dashboard

# The scripted SSOT, built once: the demo's task (approved), a locked task,
# an aborted one (with a hostile reason and an unreadable record), a
# suspended one full of hostile text and a refused message in the error log.
setup_file() {
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR
	make_ssot
	git config amp.checkRepo false
	# T-2026-044: the demo's task, approved
	at 0; dispatch_acked
	at 60; R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 90; amp ack "$R" --from coordinator > /dev/null
	at 100; Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	at 110; amp ack "$Q" --from reviewer > /dev/null
	at 200; V=$(amp send review_verdict --task $T --from reviewer --payload "$BATS_TEST_TMPDIR/p/verdict.json")
	at 210; amp ack "$V" --from coordinator > /dev/null
	# T-2026-045: three rejects lock it
	T=T-2026-045 V=
	at 300; send_dispatch
	at 305; amp ack "$D" --from executor > /dev/null
	T=T-2026-045 reject_rounds 3 400
	T=T-2026-044
	# T-2026-046: aborted, with a hostile reason, and a record that is no JSON
	at 1000; amp send task_dispatch --task T-2026-046 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	at 1010; amp abort T-2026-046 --from admin --reason "$HOSTILE" > /dev/null
	at 1020; printf 'not json {' | plant "$(next_path T-2026-046 broken)"
	# T-2026-047: hostile text everywhere a writer may put it, and a
	# critical escalation that suspends it
	$PY - "$HOSTILE" > "$BATS_TEST_TMPDIR/p/hostile.json" <<'PY'
import json, sys
h = sys.argv[1]
print(json.dumps({"description": h + " esc\u001b[31m bidi\u202e nl\nend", "repo": "/x",
                  "branch": "feature/x", "risk_level": "low", "acceptance_criteria": [h],
                  "subtasks": [{"subtask_id": "S1" + h, "description": h, "estimated_lines": 1}]}))
PY
	at 1100; amp send task_dispatch --task T-2026-047 --from coordinator --payload "$BATS_TEST_TMPDIR/p/hostile.json" > /dev/null
	at 1110; amp escalate T-2026-047 --from coordinator --type conflict --severity critical --description "$HOSTILE" > /dev/null
	# the error log: a message refused for a hostile extra member
	$PY - "$HOSTILE" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/refused.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2])); d[sys.argv[1]] = 1; print(json.dumps(d))
PY
	at 1200; run amp send task_dispatch --task T-2026-048 --from coordinator --payload "$BATS_TEST_TMPDIR/p/refused.json"
	at 1300
}

setup() {
	cp -a "$BATS_FILE_TMPDIR/repo" "$BATS_TEST_TMPDIR/repo"
	cp -a "$BATS_FILE_TMPDIR/p" "$BATS_TEST_TMPDIR/p"
	cd "$BATS_TEST_TMPDIR/repo" || return 1
	at 1300
	out=$BATS_TEST_TMPDIR/site
}

# rows FILE [TABLE]: the task ids of the table TABLE (tasks: a group
# page's) of FILE, in order.
rows() {
	$PY - "$1" "${2:-tasks}" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
table = html[re.search('<table id="%s"[ >]' % sys.argv[2], html).start():]
table = table[:table.index('</table>')]
for row in re.findall(r'<tr class="task"[^>]*><td>(.*?)</td>', table):
    print(re.sub(r"<[^>]*>", "", row).split(" ")[0])
PY
}

@test "amp dashboard --out writes the overview, a page per task group and per task, the error log" {
	run -0 amp dashboard --out "$out"
	assert_output "$out/index.html (14 page(s) written, 0 task page(s) unchanged)"
	assert_file_exists "$out/index.html"
	assert_file_exists "$out/needs.html"
	assert_file_exists "$out/errors.html"
	for t in T-2026-044 T-2026-045 T-2026-046 T-2026-047; do
		assert_file_exists "$out/tasks/$t.html"
	done
	# the group page of tasks/2026/0/ lists its tasks, in the tree's order
	group=$out/groups/2026-0.html
	run -0 rows "$group"
	assert_line --index 0 T-2026-044
	assert_line --index 3 T-2026-047
	# each row: its state, its subtasks' states, its rejects
	# (issue 36: each row has its title after its id, and who holds it)
	run -0 grep -E '<tr class="task"[^>]*><td><a href="../tasks/T-2026-045.html">T-2026-045</a> <span class="title">[^<]*</span></td><td><span class="st st-locked">locked</span></td><td>-</td><td>T-2026-044-S1 <span class="st st-rejected">rejected</span><br></td><td>3</td>' "$group"
	run -0 grep -E '<a href="../tasks/T-2026-044.html">T-2026-044</a> <span class="title">[^<]*</span></td><td><span class="st st-approved">approved</span>' "$group"
	run -0 grep -E '<a href="../tasks/T-2026-046.html">T-2026-046</a> <span class="title">[^<]*</span></td><td><span class="st st-aborted">aborted</span>' "$group"
	run -0 grep -F "<title>$(dirname "$(task_path T-2026-044)")/</title>" "$group"
	# the overview: the same rows, the latest activity first, and a link
	# to the group
	run -0 rows "$out/index.html" recent
	assert_output "$(printf '%s\n' T-2026-047 T-2026-046 T-2026-045 T-2026-044)"
	run -0 grep -E '<tr class="task"[^>]*><td><a href="tasks/T-2026-045.html">T-2026-045</a> <span class="title">[^<]*</span></td><td><span class="st st-locked">locked</span>' "$out/index.html"
	# (issue 36: the pages of all tasks are named by year and part, not
	# by the SSOT's paths; the header counts open tasks, not groups)
	run -0 grep -F '<a href="groups/2026-0.html">2026 part 0 (4)</a>' "$out/index.html"
	run -0 grep -F '<li><b>2</b> open task(s) of 4</li>' "$out/index.html"
	# phone-readable and script-free
	run -0 grep -F '<meta name="viewport" content="width=device-width, initial-scale=1">' "$out/index.html" "$group" "$out/tasks/T-2026-044.html" "$out/errors.html"
	run -1 grep -il '<script' "$out/needs.html" "$out/errors.html" "$out"/tasks/*.html
	# (issue 36: but the overview's and group pages' one inline filter
	# script, 36-dashboard-static.bats)
	run -0 grep -ic '<script' "$out/index.html" "$group"
	assert_output "$(printf '%s:1\n' "$out/index.html" "$group")"
	run -0 grep -c '<script>(function () {$' "$out/index.html" "$group"
	assert_output "$(printf '%s:1\n' "$out/index.html" "$group")"
	# every page forbids scripts by its Content-Security-Policy
	for f in "$out/index.html" "$out/needs.html" "$group" "$out/errors.html" "$out"/tasks/*.html; do
		grep -qF "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';" "$f" ||
			{ echo "no CSP in $f"; false; }
	done
}

@test "the overview lists what needs the admin first: the lock, the suspension" {
	amp dashboard --out "$out" > /dev/null
	# (issue 36: the recently active tasks come next, before the charts)
	needs=$(sed -n '/<h2>Needs the admin<\/h2>/,/<h2>Recently active/p' "$out/index.html")
	[[ $needs == *'T-2026-045</a> <span class="st st-locked">locked</span> suspended by <b>critical hallucination_lock</b>'* ]]
	[[ $needs == *'T-2026-047</a> <span class="st st-suspended">suspended</span> suspended by <b>critical conflict</b>'* ]]
	# the approved task needs nobody
	[[ $needs != *T-2026-044* ]]
	# and the charts: messages per hour, open escalations
	# (issue 36: over the hours of the data, 6 at least, not always 48)
	run -0 grep -c '<title>[0-9]* message(s), [0-9]* open escalation(s)</title>' <(fit_chart "$out/index.html")
	assert_output 6
	run -0 grep -F '<title>20 message(s), 2 open escalation(s)</title>' "$out/index.html"
}

@test "a task page tells the conversation: who to whom, ACK times, reject cycles, escalations, controls, the JSON" {
	amp dashboard --out "$out" > /dev/null
	page=$out/tasks/T-2026-045.html
	run -0 grep -F '<span class="who">coordinator</span> &rarr; <span class="who">executor</span>: <b>task_dispatch</b>' "$page"
	run -0 grep -F 'ACKed by executor after 5 s' "$page"
	run -0 grep -F 'reject #1' "$page"
	run -0 grep -F 'reject #3' "$page"
	run -1 grep -F 'reject #4' "$page"
	run -0 grep -F '<b>critical hallucination_lock</b>' "$page"
	run -0 grep -F '<span class="st st-locked">locked</span> &middot; 3 reject(s)' "$page"
	# every record's whole JSON, one click away
	records=$(git ls-tree -r --name-only "refs/amp/messages:$(task_path T-2026-045)" | wc -l)
	[ "$(grep -c '<details><summary>JSON</summary>' "$page")" -eq "$records" ]
	# the SVG timeline: a mark per message and control record, none for ACKs
	marks=$(git ls-tree -r --name-only "refs/amp/messages:$(task_path T-2026-045)" | grep -vc '\.ack\.')
	[ "$(grep -c '<a href="#r[0-9]*"><\(circle\|polygon\|rect\)' "$page")" -eq "$marks" ]
	# the aborted task: its control record, its unreadable record
	page=$out/tasks/T-2026-046.html
	run -0 grep -F '<b>abort</b>: &lt;script&gt;' "$page"
	run -0 grep -F 'unreadable record</b> #3 000003.msg.broken.json' "$page"
}

@test "hostile text is escaped everywhere: markup, quotes, control characters, bidi overrides" {
	amp dashboard --out "$out" > /dev/null
	esc='&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=&quot;document.body.setAttribute(&#39;data-pwned&#39;,&#39;1&#39;)&quot;&gt;'
	page=$out/tasks/T-2026-047.html
	run -0 grep -cF "$esc" "$page"
	(( output >= 3 )) # the lines of the description, the subtask, the escalation
	run -0 grep -F "<p>$esc esc␛[31m bidi\\u202e nl␊end</p>" "$page"
	run -0 grep -F "$esc" "$out/index.html"
	run -0 grep -F "$esc" "$out/groups/2026-0.html"
	run -0 grep -F "$esc" "$out/needs.html"
	run -0 grep -F "$esc" "$out/tasks/T-2026-046.html"
	run -0 grep -F "$esc" "$out/errors.html"
	# nothing of it left as markup, no raw control character
	# (the filter script is "<script>(function () {", 36-dashboard-static)
	run -1 grep -lE '<(script[^>]|script>[^(]|img)|onerror="' "$out"/*.html "$out"/groups/*.html "$out"/tasks/*.html
	run -1 grep -lP '[\x00-\x08\x0b-\x1f\x7f]|\xe2\x80\xae' "$out"/*.html "$out"/groups/*.html "$out"/tasks/*.html
}

@test "a task directory that is no task id is reported, skipped (exit 4) and gets no page; the rest are listed" {
	# named like markup, as a hand-made commit could
	local shard
	shard=$(dirname "$(task_path T-2026-044)")
	echo '{"a": 1}' | plant "$shard/\"><img src=x onerror=alert(1)>/000001.msg.x.json"
	run --separate-stderr amp dashboard --out "$out" --json
	assert_equal "$status" 4
	assert_equal "$stderr" "amp dashboard: error: $shard/\"><img src=x onerror=alert(1)>: not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped"
	run -1 grep -F 'onerror=alert' "$out/index.html" "$out/groups/2026-0.html"
	run -0 rows "$out/groups/2026-0.html"
	assert_output "$(printf '%s\n' T-2026-044 T-2026-045 T-2026-046 T-2026-047)"
	# the overview, needs.html, errors.html, a group page, 4 task pages, the state;
	# (issue 36) the three other filter pages, tasks.html, agents.html, favicon.svg
	[ "$(find "$out" -path "$out/.amp-dashboard" -prune -o -type f -print | wc -l)" -eq 15 ]
	run -0 find "$out" -type f -name '*img*'
	assert_output ''
}

@test "the error log page lists the refused message and its reasons" {
	amp dashboard --out "$out" > /dev/null
	run -0 grep -F 'task_dispatch-T-2026-048-' "$out/errors.html"
	run -0 grep -F '<td>1</td>' "$out/errors.html"
	run -0 grep -F '/payload: unexpected property &quot;&lt;script&gt;' "$out/errors.html"
}

@test "incremental: one new message rewrites its task's page, its group's page and the overview, nothing else" {
	# a task in another shard of the tree (tasks/2026/12/), whose shard is not read again
	# (ACKed: no deadline falls due while the test moves the clock)
	D2=$(amp send task_dispatch --task T-2026-1245 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json")
	amp ack "$D2" --from executor > /dev/null
	amp dashboard --out "$out" > /dev/null
	touch -d '2000-01-01' "$out"/tasks/*.html "$out"/groups/*.html "$out/errors.html" "$out/needs.html"
	# nothing new: nothing written
	run -0 amp dashboard --out "$out" --json
	[ "$(json_get 'd["written"]' <<< "$output")" = '[]' ]
	[ "$(json_get 'd["unchanged"]' <<< "$output")" = 5 ]
	# (at the same time: T-2026-047's ACK deadline, due later, would
	# change what needs the admin)
	amp heartbeat T-2026-044 --from executor > /dev/null
	run -0 amp dashboard --out "$out" --json
	[ "$(json_get 'd["written"]' <<< "$output")" = '["tasks/T-2026-044.html", "groups/2026-0.html", "index.html"]' ]
	[ "$(json_get 'd["unchanged"]' <<< "$output")" = 4 ]
	for f in tasks/T-2026-045 tasks/T-2026-046 tasks/T-2026-047 tasks/T-2026-1245 groups/2026-12 needs errors; do
		[ "$(stat -c %Y "$out/$f.html")" = "$(date -d 2000-01-01 +%s)" ]
	done
	[ "$(stat -c %Y "$out/tasks/T-2026-044.html")" != "$(date -d 2000-01-01 +%s)" ]
	run -0 grep -F '<b>heartbeat</b>' "$out/tasks/T-2026-044.html"
	# the task's activity moved it to the top of the overview's recent
	# tasks, and its row on its group page has the new time
	run -0 rows "$out/index.html" recent
	assert_line --index 0 T-2026-044
	[[ $(grep -F 'T-2026-044.html' "$out/groups/2026-0.html") == *"$(date -u -d "@$((1772116327 + 1300))" +%Y-%m-%dT%H:%M:%S)"* ]]
	# a state file that is garbage rebuilds all, a lost page too
	rm "$out/tasks/T-2026-045.html"
	echo garbage > "$out/.amp-dashboard.json"
	run -0 amp dashboard --out "$out" --json
	# (every task page; the overview, the group pages, needs.html and
	# the error log hold the same bytes)
	[ "$(json_get 'd["written"]' <<< "$output")" = '["tasks/T-2026-044.html", "tasks/T-2026-045.html", "tasks/T-2026-046.html", "tasks/T-2026-047.html", "tasks/T-2026-1245.html"]' ]
	# so does another policy: the states depend on it
	git config amp.lockThreshold 5
	run -0 amp dashboard --out "$out" --json
	[ "$(json_get 'len([w for w in d["written"] if w.startswith("tasks/")])' <<< "$output")" = 5 ]
	run -0 grep -E '<a href="../tasks/T-2026-045.html">T-2026-045</a> <span class="title">[^<]*</span></td><td><span class="st st-locked">' "$out/groups/2026-0.html"
	# no temporary file left behind
	run -0 find "$out" -name '*.tmp'
	assert_output ''
}

@test "amp watch --dashboard keeps the site current on every pass" {
	# without the hand-made task directory, which amp watch refuses
	git update-ref refs/amp/messages refs/amp/messages~1
	run -0 amp watch --once --no-exec --dashboard "$out"
	assert_file_exists "$out/tasks/T-2026-044.html"
	run -1 grep -F '<b>heartbeat</b>' "$out/tasks/T-2026-044.html"
	amp heartbeat T-2026-044 --from executor > /dev/null
	run -0 amp watch --once --no-exec --dashboard "$out"
	run -0 grep -F '<b>heartbeat</b>' "$out/tasks/T-2026-044.html"
	run -4 amp watch --once --no-exec --dashboard /proc/nonexistent/site
	assert_output --partial 'amp watch: error: cannot create /proc/nonexistent'
}

@test "usage: --out or --serve, ports in range, a numeric bind address" {
	run -2 amp dashboard
	assert_output --partial '--out <dir> or --serve is required'
	run -2 amp dashboard --serve --port 65536
	assert_output --partial '65536 is out of range (0..65535)'
	run -2 amp dashboard --out "$out" --port 80
	run -2 amp dashboard --serve --bind localhost --port 0
	assert_output --partial "--bind: 'localhost' is not a numeric IP address"
	run -2 amp dashboard --out "$out" extra
	run -0 amp dashboard --help
	assert_output --partial 'usage: amp dashboard --out <dir>'
}

# chromium_dom FILE: the DOM headless Chromium renders from FILE, into
# dom.html; its console into console.log.
chromium_dom() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
		--user-data-dir="$BATS_TEST_TMPDIR/chromium" --dump-dom "file://$1" \
		> "$BATS_TEST_TMPDIR/dom.html" 2> "$BATS_TEST_TMPDIR/console.log"
}

# assert_rendered_clean: no script of a message ran (title, attribute,
# element) and the console said nothing.
assert_rendered_clean() {
	local dom=$BATS_TEST_TMPDIR/dom.html
	run -1 grep -E '<body[^>]*data-pwned|<title>pwned|<img|<script[^>]|<script>[^(]' "$dom"
	run -1 grep -E 'CONSOLE|Uncaught|Content Security Policy' "$BATS_TEST_TMPDIR/console.log"
}

# renders_rows PAGE TITLE LINK: headless Chromium renders PAGE (under
# $out) with the title, the four task rows and the link, running nothing.
renders_rows() {
	chromium_dom "$out/$1"
	run -0 grep -c '<tr class="task"' "$BATS_TEST_TMPDIR/dom.html"
	assert_output 4
	run -0 grep -F "<title>$2</title>" "$BATS_TEST_TMPDIR/dom.html"
	run -0 grep -F "$3" "$BATS_TEST_TMPDIR/dom.html"
	assert_rendered_clean
}

@test "in headless Chromium: the overview and a group page render the task rows and run nothing from a message" {
	amp dashboard --out "$out" > /dev/null
	renders_rows index.html 'amp dashboard' '<a href="groups/2026-0.html">2026 part 0 (4)</a>'
	run -0 grep -c '<div class="needs">' "$BATS_TEST_TMPDIR/dom.html"
	assert_output 2
	renders_rows groups/2026-0.html "$(dirname "$(task_path T-2026-044)")/" '<a href="../tasks/T-2026-047.html">T-2026-047</a>'
}

@test "in headless Chromium: the hostile task's page renders its text as text" {
	amp dashboard --out "$out" > /dev/null
	chromium_dom "$out/tasks/T-2026-047.html"
	run -0 grep -F '<title>T-2026-047</title>' "$BATS_TEST_TMPDIR/dom.html"
	run -0 grep -F '&lt;script&gt;document.title="pwned"&lt;/script&gt;"&gt;&lt;img src=x onerror=' "$BATS_TEST_TMPDIR/dom.html"
	run -0 grep -c '<li id="r' "$BATS_TEST_TMPDIR/dom.html"
	assert_output 2
	assert_rendered_clean
}

@test "--serve: GET and HEAD of the pages on loopback, kept current; traversal, other methods, big requests refused" {
	serve
	[[ $URL == http://127.0.0.1:* ]]
	run -0 curl -sS -o page.html -w '%{http_code} %{content_type}' "$URL"
	assert_output '200 text/html; charset=utf-8'
	run -0 grep -c '<tr class="task"' page.html
	assert_output 4
	run -0 curl -sS -o /dev/null -w '%{http_code}' "${URL}tasks/T-2026-045.html"
	assert_output 200
	run -0 curl -sS -I -o /dev/null -w '%{http_code}' "${URL}errors.html"
	assert_output 200
	# what arrives after the start is served
	amp heartbeat T-2026-044 --from executor > /dev/null
	run -0 curl -sS "${URL}tasks/T-2026-044.html"
	assert_output --partial '<b>heartbeat</b>'
	for p in '../.git/config' 'tasks/../../.git/config' '.amp-dashboard.json' '%2e%2e/x' 'tasks//T-2026-044.html'; do
		run -0 curl -sS --path-as-is -o /dev/null -w '%{http_code}' "$URL$p"
		assert_output 400
	done
	run -0 curl -sS -o /dev/null -w '%{http_code}' "${URL}nope.html"
	assert_output 404
	run -0 curl -sS -X POST -d x -D - -o /dev/null "$URL"
	assert_output --partial '405 Method Not Allowed'
	assert_output --partial 'Allow: GET, HEAD'
	run -0 curl -sS -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "$URL"
	assert_output 400
	# still serving after all that; stops on SIGTERM with exit 0
	run -0 curl -sS -o /dev/null -w '%{http_code}' "$URL"
	assert_output 200
	kill "$SERVER"
	rc=0; wait "$SERVER" || rc=$?
	SERVER=
	[ "$rc" -eq 0 ]
	# the site went to <git dir>/amp/dashboard
	assert_file_exists .git/amp/dashboard/index.html
}

@test "make demo ends by writing the dashboard of its SSOT and printing the path of its index page" {
	mkdir "$BATS_TEST_TMPDIR/demo"
	run -0 env TMPDIR="$BATS_TEST_TMPDIR/demo" "$AMP_SRC/share/demo.sh"
	assert_line --index $((${#lines[@]} - 1)) "dashboard: $BATS_TEST_TMPDIR/demo/amp-dashboard-demo/index.html"
	run -0 grep -E '<a href="tasks/T-2026-044.html">T-2026-044</a> <span class="title">[^<]*</span></td><td><span class="st st-approved">approved</span>' \
		"$BATS_TEST_TMPDIR/demo/amp-dashboard-demo/index.html"
	run -0 grep -E '<a href="../tasks/T-2026-044.html">T-2026-044</a> <span class="title">[^<]*</span></td><td><span class="st st-approved">approved</span>' \
		"$BATS_TEST_TMPDIR/demo/amp-dashboard-demo/groups/2026-0.html"
	assert_file_exists "$BATS_TEST_TMPDIR/demo/amp-dashboard-demo/tasks/T-2026-044.html"
}

# traffic: an SSOT of 185 tasks -- 125 whole ones of real traffic
# (share/gen-traffic.py: tasks/2026/00/ and 01/), then 60 dispatches nobody
# ACKed (T-2026-0200.., tasks/2026/02/, an hour later, the latest) -- in a
# repository of its own, the current directory.
traffic() {
	git init -q "$BATS_TEST_TMPDIR/big" && cd "$BATS_TEST_TMPDIR/big" || return 1
	git config amp.checkRepo false
	amp init > /dev/null
	$PY "$AMP_SRC/share/gen-traffic.py" 1000 "$BATS_TEST_TMPDIR/traffic.jsonl" /dev/null 0
	$PY - >> "$BATS_TEST_TMPDIR/traffic.jsonl" <<'PY'
import datetime, json
for i in range(60):
    ms = 1772116327000 + 3600000 + i * 1000
    t = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    task = "T-2026-%04d" % (200 + i)
    print(json.dumps({"protocol_version": "AMP/1.0", "msg_id": "task_dispatch-%s-%d" % (task, ms),
        "type": "task_dispatch", "from": "coordinator", "to": "executor", "task_id": task,
        "timestamp": t, "requires_ack": True, "payload": {"description": "late", "repo": "/srv/x",
        "branch": "feature/x", "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
        "acceptance_criteria": ["it works"], "risk_level": "low"}}))
PY
	at 7200
	amp import "$BATS_TEST_TMPDIR/traffic.jsonl" > /dev/null
}

@test "the overview stays bounded: the 100 latest tasks, 50 that need the admin, a link per group; the group pages list every task" {
	traffic
	run -0 amp dashboard --out "$out" --json
	[ "$(json_get 'd["tasks"]' <<< "$output")" = 185 ]
	run -0 rows "$out/index.html" recent
	[ "${#lines[@]}" -eq 100 ]
	assert_line --index 0 T-2026-0259
	assert_line --index 59 T-2026-0200
	assert_line --index 60 T-2026-0124
	assert_line --index 99 T-2026-0085
	run -1 grep -F 'T-2026-0084.html' "$out/index.html"
	# the 60 overdue dispatches need the admin: 50 shown, all on needs.html
	[ "$(grep -c '<div class="needs">' "$out/index.html")" -eq 50 ]
	run -0 grep -F '<a href="needs.html">All 60 tasks needing the admin</a>' "$out/index.html"
	[ "$(grep -c '<div class="needs">' "$out/needs.html")" -eq 60 ]
	run -0 grep -F '<div class="needs"><p><a href="tasks/T-2026-0259.html">T-2026-0259</a> <span class="st st-dispatched">dispatched</span> <span class="overdue">1 ACK(s) overdue</span>' "$out/index.html"
	# one link per group, with its task count; each group page lists its tasks
	# (issue 36: named by year and part, not by the SSOT's paths)
	run -0 grep -o '<a href="groups/[^"]*">[^<]*</a>' "$out/index.html"
	assert_output "$(printf '%s\n' \
		'<a href="groups/2026-00.html">2026 part 00 (100)</a>' \
		'<a href="groups/2026-01.html">2026 part 01 (25)</a>' \
		'<a href="groups/2026-02.html">2026 part 02 (60)</a>')"
	run -0 rows "$out/groups/2026-00.html"
	[ "${#lines[@]}" -eq 100 ]
	assert_line --index 0 T-2026-0000
	assert_line --index 99 T-2026-0099
	[ "$(cat <(rows "$out/groups/2026-00.html") <(rows "$out/groups/2026-01.html") <(rows "$out/groups/2026-02.html") | sort -u | wc -l)" -eq 185 ]
	run -0 grep -E '<a href="../tasks/T-2026-0000.html">T-2026-0000</a> <span class="title">[^<]*</span></td><td><span class="st st-approved">approved</span>' "$out/groups/2026-00.html"
}

# same_as_fresh: the overview, needs.html and the group pages kept pass by
# pass in $out are the bytes a first generation writes now.
same_as_fresh() {
	rm -rf "$BATS_TEST_TMPDIR/fresh"
	amp dashboard --out "$BATS_TEST_TMPDIR/fresh" > /dev/null
	diff -r -x tasks -x .amp-dashboard -x .amp-dashboard.json "$BATS_TEST_TMPDIR/fresh" "$out"
}

@test "the overview's aggregate, kept from the changed groups alone, equals the one made from every task" {
	traffic
	amp dashboard --out "$out" > /dev/null
	same_as_fresh
	# a critical escalation on an old task: it leads the recent tasks and
	# the tasks needing the admin, the chart counts it open
	at 7300; amp escalate T-2026-0003 --from coordinator --type conflict --severity critical --description late > /dev/null
	run -0 amp dashboard --out "$out" --json
	# (needs.html too: one more task needs the admin; issue 36: and the
	# filter page of the escalated ones)
	[ "$(json_get 'd["written"]' <<< "$output")" = '["tasks/T-2026-0003.html", "groups/2026-00.html", "needs.html", "escalated.html", "index.html"]' ]
	run -0 rows "$out/index.html" recent
	assert_line --index 0 T-2026-0003
	run -0 grep -F '<div class="needs"><p><a href="tasks/T-2026-0003.html">T-2026-0003</a> <span class="st st-suspended">' "$out/index.html"
	run -0 grep -F 'open escalations (max 1)' "$out/index.html"
	same_as_fresh
	# three days on: the chart's 48 hours leave every earlier hour behind,
	# the escalation stays open in them until the abort
	at 266400; amp heartbeat T-2026-0201 --from executor > /dev/null
	amp dashboard --out "$out" > /dev/null
	same_as_fresh
	# (a heartbeat is a control record, no message)
	run -0 grep -c '<title>0 message(s), 1 open escalation(s)</title>' <(fit_chart "$out/index.html")
	assert_output 48
	at 266500; amp abort T-2026-0003 --from admin --reason done > /dev/null
	amp dashboard --out "$out" > /dev/null
	same_as_fresh
	run -0 grep -o '<title>[0-9]* message(s), [0-9]* open escalation(s)</title>' <(fit_chart "$out/index.html")
	assert_line --index 47 '<title>0 message(s), 0 open escalation(s)</title>'
	assert_line --index 0 '<title>0 message(s), 1 open escalation(s)</title>'
	# a rewritten history (the newest hour goes back) and a group's state
	# that is not the one the aggregate was made from: made anew, the same
	git update-ref refs/amp/messages refs/amp/messages~2
	amp dashboard --out "$out" > /dev/null
	same_as_fresh
	run -0 grep -F 'open escalations (max 1)' "$out/index.html"
	echo '{"tree": "0", "tasks": {}}' > "$(ls "$out"/.amp-dashboard/*.json | head -1)"
	at 7400; amp heartbeat T-2026-0001 --from executor > /dev/null
	amp dashboard --out "$out" > /dev/null
	same_as_fresh
}
