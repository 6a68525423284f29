# shellcheck shell=bash
# Sourced by the dashboard suites (97-dashboard, 36-dashboard-admin,
# 36-dashboard-team, 36-dashboard-static), which use the variables set here (SC2034).
# shellcheck disable=SC2034

# serve [ARGS...]: starts amp dashboard --serve on a free loopback port;
# sets URL and SERVER (its pid).
serve() {
	amp dashboard --serve --port 0 "$@" > "$BATS_TEST_TMPDIR/serve.out" 2>&1 &
	SERVER=$!
	for _ in $(seq 100); do grep -q '^serving ' "$BATS_TEST_TMPDIR/serve.out" && break; sleep 0.05; done
	URL=$(sed -n 's/^serving //p' "$BATS_TEST_TMPDIR/serve.out")
	[ -n "$URL" ]
}

# The teardown of a test that may have started a server: stops it (by its
# pid), then checks every repository it made.
teardown() {
	if [ -n "${SERVER:-}" ]; then
		kill "$SERVER" 2> /dev/null
		wait "$SERVER" 2> /dev/null || true
	fi
	fsck_all_repos
}

# What a message could do if a page let it: change the title, add an
# attribute, add an element.
HOSTILE='<script>document.title="pwned"</script>"><img src=x onerror="document.body.setAttribute('\''data-pwned'\'','\''1'\'')">'

# web CMD ARGS...: test/web/drive.js (puppeteer-core, `make deps` runs its
# npm ci).
web() {
	[ -d "$AMP_SRC/test/web/node_modules/puppeteer-core" ] ||
		{ echo "test/web/node_modules is missing: make deps runs npm ci there" >&2; return 99; }
	timeout 120 node "$AMP_SRC/test/web/drive.js" "$@"
}

# fit_chart FILE: the overview's activity chart shown by default (the one
# that fits the data; the page holds one per window, dashboard_views.c).
fit_chart() {
	sed -n '/<div class="win fit" id="hours-fit">/,/<\/svg>/p' "$1"
}


# alice_on_task: the start of the 36-dashboard suites' SSOTs, built in
# setup_file: T-2026-044 dispatched at 0 s, claimed by alice at 2 s and
# ACKed by her at 5 s; and p/hostile.json, the dispatch with $HOSTILE
# (and " evil") as its description.
alice_on_task() {
	make_ssot
	git config amp.checkRepo false
	at 0; send_dispatch
	at 2; amp claim "$T" --agent alice > /dev/null
	at 5; amp ack "$D" --from executor --agent alice > /dev/null
	$PY - "$HOSTILE" "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2])); d["description"] = sys.argv[1] + " evil"; print(json.dumps(d))
PY
}

# copy_ssot: a test's own copy of the SSOT setup_file built, at 1200 s;
# out is where its site goes.
copy_ssot() {
	cp -a "$BATS_FILE_TMPDIR/repo" "$BATS_TEST_TMPDIR/repo"
	cp -a "$BATS_FILE_TMPDIR/p" "$BATS_TEST_TMPDIR/p"
	cd "$BATS_TEST_TMPDIR/repo" || return 1
	at 1200
	out=$BATS_TEST_TMPDIR/site
}
