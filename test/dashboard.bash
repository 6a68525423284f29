# shellcheck shell=bash
# Sourced by the dashboard suites (97-dashboard, 36-dashboard-admin,
# 36-dashboard-team), which use the variables set here (SC2034).
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

