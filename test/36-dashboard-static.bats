#!/usr/bin/env bats
# amp dashboard's static pages filtered and sorted without a server (issue
# 36, "Filters and sort"): the overview's and the group pages' one inline
# script, allowed by its sha256 in the page's Content-Security-Policy,
# reads the URL's fragment (index.html#q=step&holder=alice&overdue=1
# &escalated=1&sort=deadline&desc=1) and hides and orders the task rows;
# each column header is a sort link that keeps the URL bookmarkable. A
# page whose script is altered runs nothing, a message's text runs
# nothing, and with scripts off every row shows. Checked in Debian's
# headless Chromium through puppeteer-core (test/web/drive.js).

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer
load dashboard

# The SSOT (T0 = 2026-02-26T14:32:07Z):
#   alice (executor) claims T-2026-044 at 2 s, ACKs, and sends her result
#   at 200 s;
#   mallory (coordinator) dispatches T-2026-050..052 ("Step 0..2 of ...")
#   at 300..302 s (their ACKs overdue at 1200 s), then T-2026-047 with a
#   hostile description at 400 s, and escalates it (suspended);
#   bob claims T-2026-050 at 1100 s; mallory dispatches T-2026-053
#   ("Step 3") at 1150 s, its ACK due in 4m at 1200 s.
setup_file() {
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR i
	alice_on_task
	at 200; amp send task_result --task $T --from executor --agent alice --payload "$BATS_TEST_TMPDIR/p/result.json" > /dev/null
	for i in 0 1 2; do
		sed "s/Reconstruct watchOS/Step $i of/" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/d$i.json"
		at $((300 + i)); amp send task_dispatch --task T-2026-05$i --from coordinator --agent mallory \
			--payload "$BATS_TEST_TMPDIR/p/d$i.json" > /dev/null
	done
	at 400; amp send task_dispatch --task T-2026-047 --from coordinator --agent mallory --payload "$BATS_TEST_TMPDIR/p/hostile.json" > /dev/null
	at 410; amp escalate T-2026-047 --from coordinator --agent mallory --type conflict --severity critical --description "$HOSTILE" > /dev/null
	at 1100; amp claim T-2026-050 --agent bob > /dev/null
	sed "s/Reconstruct watchOS/Step 3 of/" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/d3.json"
	at 1150; amp send task_dispatch --task T-2026-053 --from coordinator --agent mallory \
		--payload "$BATS_TEST_TMPDIR/p/d3.json" > /dev/null
	at 1200
}

setup() {
	copy_ssot
}

# shown URL: the task rows Chromium shows of URL, in their order, and
# the URL it ends at (drive.js follow).
shown() {
	web follow "$@"
}

@test "a static page's fragment filters its task rows by text (the row's text, any case), by holder (agent, role), overdue and escalated, and combines them" {
	amp dashboard --out "$out" > /dev/null
	run -0 shown "file://$out/index.html#q=STEP"
	assert_output "$(printf '%s\n' T-2026-053 T-2026-050 T-2026-052 T-2026-051 "url	file://$out/index.html#q=STEP")"
	run -0 shown "file://$out/index.html#holder=bob"
	assert_output "$(printf '%s\n' T-2026-050 "url	file://$out/index.html#holder=bob")"
	run -0 shown "file://$out/index.html#agent=bob"
	assert_line --index 0 T-2026-050
	[ "${#lines[@]}" -eq 2 ]
	run -0 shown "file://$out/index.html#holder=coordinator"
	assert_line --index 0 T-2026-044
	[ "${#lines[@]}" -eq 2 ]
	run -0 shown "file://$out/index.html#escalated=1"
	assert_line --index 0 T-2026-047
	[ "${#lines[@]}" -eq 2 ]
	# overdue at the page's time: all but T-2026-053 (due in 4m)
	run -0 shown "file://$out/index.html#overdue=1&q=step"
	assert_output "$(printf '%s\n' T-2026-050 T-2026-052 T-2026-051 "url	file://$out/index.html#overdue=1&q=step")"
	run -0 grep -F '<td><span class="overdue">overdue' "$out/index.html"
	# a group page too, and its count of shown rows
	run -0 shown "file://$out/groups/2026-0.html#q=step%202&state=dispatched"
	assert_line --index 0 T-2026-052
	[ "${#lines[@]}" -eq 2 ]
	run -0 web text "file://$out/groups/2026-0.html#q=step%202"
	run -0 json_get 'd["text"]' <<< "$output"
	assert_line '1 of 6 task(s) shown'
}

@test "a column header sorts the rows and keeps the filter in the URL; following it again reverses; the URL reopened shows the same order" {
	amp dashboard --out "$out" > /dev/null
	run -0 shown "file://$out/index.html#q=step" 'th a[data-sort="deadline"]'
	assert_output "$(printf '%s\n' T-2026-050 T-2026-051 T-2026-052 T-2026-053 "url	file://$out/index.html#q=step&sort=deadline")"
	run -0 shown "file://$out/index.html#q=step" 'th a[data-sort="deadline"]' 'th a[data-sort="deadline"]'
	assert_output "$(printf '%s\n' T-2026-053 T-2026-052 T-2026-051 T-2026-050 "url	file://$out/index.html#q=step&sort=deadline&desc=1")"
	run -0 shown "file://$out/index.html#q=step&sort=deadline&desc=1"
	assert_output "$(printf '%s\n' T-2026-053 T-2026-052 T-2026-051 T-2026-050 "url	file://$out/index.html#q=step&sort=deadline&desc=1")"
	# by task id, by holder (bob@executor before executor), on a group page
	run -0 shown "file://$out/groups/2026-0.html#sort=task"
	assert_output "$(printf '%s\n' T-2026-044 T-2026-047 T-2026-050 T-2026-051 T-2026-052 T-2026-053 "url	file://$out/groups/2026-0.html#sort=task")"
	run -0 shown "file://$out/index.html#q=step&sort=holder"
	assert_line --index 0 T-2026-050
	# the sorted header says so to a screen reader
	run -0 web visible "file://$out/index.html#sort=task" 'th[aria-sort]' aria-sort
	assert_output ascending
}

@test "the page's policy allows its one inline script by the script's sha256 and no other: a copy with the script altered runs nothing" {
	amp dashboard --out "$out" > /dev/null
	for f in "$out/index.html" "$out/groups/2026-0.html"; do
		run -0 $PY - "$f" <<'PY'
import base64, hashlib, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
h = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
print(len(scripts), csp)
print("script-src 'sha256-%s'" % h in csp.split("; "))
PY
		assert_line --index 0 --regexp "^1 default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; script-src 'sha256-[A-Za-z0-9+/]{43}='\$"
		assert_line --index 1 True
	done
	# one character of the script changed: the browser refuses it, and the
	# page shows every row
	sed 's/task(s) shown/tasks shown/' "$out/index.html" > "$out/altered.html"
	! cmp -s "$out/index.html" "$out/altered.html"
	run -0 --separate-stderr shown "file://$out/altered.html#q=step"
	[ "${#lines[@]}" -eq 7 ]
	run -0 web text "file://$out/altered.html#q=step"
	run -0 json_get 'd["text"]' <<< "$output"
	refute_output --partial 'shown'
	run -0 --separate-stderr shown "file://$out/index.html#q=step"
	[ "${#lines[@]}" -eq 5 ]
	[ -z "$stderr" ]
}

@test "hostile text is matched as text and never runs; with scripts off every row shows" {
	amp dashboard --out "$out" > /dev/null
	# the row's data-* attributes are escaped like its cells
	run -0 grep -c 'data-task="T-2026-047"' "$out/index.html"
	run -1 grep -E '<img|onerror="' "$out/index.html" "$out/groups/2026-0.html"
	run -0 shown "file://$out/index.html#q=%3Cscript%3Edocument.title"
	assert_output "$(printf '%s\n' T-2026-047 "url	file://$out/index.html#q=%3Cscript%3Edocument.title")"
	run -0 web text "file://$out/groups/2026-0.html#q=%3Cimg%20src%3Dx%20onerror"
	run -0 json_get '[d["pwned"], d["scripts"], d["images"], d["log"]]' <<< "$output"
	assert_output '[false, ["(inline)"], 0, []]'
	AMP_WEB_NOSCRIPT=1 run -0 shown "file://$out/index.html#q=step&escalated=1"
	[ "${#lines[@]}" -eq 7 ]
}

@test "with --serve the overview's filter script runs under the server's policy, next to live.js" {
	amp dashboard --out "$out" > /dev/null
	serve --out "$out"
	run -0 curl -sSi "${URL}index.html"
	hash=$(grep -o "script-src 'sha256-[^']*'" "$out/index.html")
	assert_output --partial "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; script-src 'self' '${hash#script-src \'}; connect-src 'self'"
	assert_output --partial '<script src="/live.js"></script>'
	run -0 --separate-stderr shown "${URL}index.html#escalated=1"
	assert_output "$(printf '%s\n' T-2026-047 "url	${URL}index.html#escalated=1")"
	[ -z "$stderr" ]
}
