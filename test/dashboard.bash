# shellcheck shell=bash
# Sourced by the dashboard suites (97-dashboard, 36-dashboard-admin), which
# use the variables set here (SC2034).
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
