#!/usr/bin/env bash
# Benchmark of the dashboard in a browser (never part of the tests): an
# SSOT of AMP_BENCH_BROWSER_RECORDS (100,000) messages of real traffic
# (share/gen-traffic.py, 8 records per task, amp import), its site written
# once by amp dashboard, then the overview opened in Debian's headless
# Chromium through puppeteer-core (test/web/drive.js timing): the time to
# its load event and to its first contentful paint, median of
# AMP_BENCH_BROWSER_ROUNDS (5) fresh browsers.  Then Lighthouse's
# accessibility and best-practices scores of the four page kinds (overview,
# a task page, agents, error log) as amp dashboard --serve serves them
# (test/web/lighthouse.js).  Needs test/web/node_modules (make deps).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
RECORDS=${AMP_BENCH_BROWSER_RECORDS:-100000}
ROUNDS=${AMP_BENCH_BROWSER_ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-browser.XXXXXX")
server=
cleanup() {
	[ -z "$server" ] || { kill "$server" 2> /dev/null; wait "$server" 2> /dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT
export AMP_NOW=2026-03-01T00:00:00+00:00
repo=$work/repo site=$work/site
git init -q "$repo" && git -C "$repo" config amp.checkRepo false
(cd "$repo" && amp init > /dev/null)
/usr/bin/python3 "$src/share/gen-traffic.py" "$RECORDS" "$work/records.jsonl" /dev/null \
	"$(git -C "$repo" rev-parse refs/amp/messages)"
amp import --repo "$repo" "$work/records.jsonl" > /dev/null
t0=$(date +%s%N)
amp dashboard --repo "$repo" --out "$site" > /dev/null
t1=$(date +%s%N)
: > "$work/load"; : > "$work/fcp"
for ((i = 0; i < ROUNDS; i++)); do
	node "$src/test/web/drive.js" timing "file://$site/index.html" > "$work/t.json"
	/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["load_ms"]); print(d["fcp_ms"], file=open(sys.argv[2], "a")); print(d["bytes"], d["rows"], file=open(sys.argv[3], "w"))' \
		"$work/t.json" "$work/fcp" "$work/size" >> "$work/load"
done
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
read -r bytes rows < "$work/size"
echo "amp dashboard, $RECORDS messages ($(find "$site/tasks" -name '*.html' | wc -l) task pages): site written in $(((t1 - t0) / 1000000)) ms; the overview ($bytes bytes, $rows task rows) in headless Chromium: load event $(med "$work/load") ms, first contentful paint $(med "$work/fcp") ms (median of $ROUNDS)"
# Lighthouse, over HTTP as --serve serves the pages
(cd "$repo" && exec amp dashboard --serve --port 0 --out "$site" > "$work/serve.out" 2>&1) &
server=$!
for _ in $(seq 600); do grep -q "^serving " "$work/serve.out" && break; sleep 0.1; done
[ -n "$(sed -n "s/^serving //p" "$work/serve.out")" ] || { echo "bench-dashboard-browser: the server did not start" >&2; cat "$work/serve.out" >&2; exit 1; }
url=$(sed -n 's/^serving //p' "$work/serve.out")
node "$src/test/web/lighthouse.js" --min 0 "${url}index.html" "${url}tasks/T-2026-0007.html" \
	"${url}agents.html" "${url}errors.html" |
	/usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l); print("lighthouse %-28s accessibility %3d, best practices %3d%s" % (d["url"].split("/", 3)[3], d["accessibility"], d["best_practices"], ("  (" + ", ".join(d["lost"]) + ")") if d["lost"] else ""))'
