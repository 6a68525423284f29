#!/usr/bin/env bash
# Benchmark of amp import (never part of the tests): the same records,
# real traffic (per task: dispatch, ACK, result, ACK, review_request, ACK,
# verdict, ACK), written two ways into fresh SSOTs (layout 2, amp init's),
# one commit per record at the same paths:
#   1. git fast-import, from a stream of those commits (the floor: no
#      checks, one pack);
#   2. amp import, from the same records as JSON lines (every record checked
#      by the schema and the write-time rules).
# Whole process, median of AMP_BENCH_IMPORT_ROUNDS rounds side by side;
# prints msgs/s for both and their ratio (target: amp import at least 0.5x).
# AMP_BENCH_IMPORT_RECORDS (10000) sets the size; 8 records per task.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
# shellcheck source=share/layout.bash
. "$src/share/layout.bash"
RECORDS=${AMP_BENCH_IMPORT_RECORDS:-10000}
ROUNDS=${AMP_BENCH_IMPORT_ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-import.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
export AMP_NOW=2026-03-01T00:00:00+00:00

# stamp VAR: the time in ns into VAR, read by bash itself (a `date` process
# costs ~1.4 ms, a $(...) subshell ~0.8 ms: both would be timed too).
stamp() { printf -v "$1" %s000 "${EPOCHREALTIME//[!0-9]/}"; }
t0=0 t1=0 # set by stamp

# fresh DIR: an SSOT made by amp init, whose dispatches may name a
# repository on another machine.
fresh() {
	rm -rf "$1" && git init -q "$1" && git -C "$1" config amp.checkRepo false &&
		(cd "$1" && amp init > /dev/null)
}

fresh base
parent=$(git -C base rev-parse refs/amp/messages)
AMP_GEN_LAYOUT=$(cd base && ssot_layout) \
	/usr/bin/python3 "$src/share/gen-traffic.py" "$RECORDS" records.jsonl records.fi "$parent"
records=$(wc -l < records.jsonl)

: > fi.times
: > amp.times
for ((r = 0; r < ROUNDS; r++)); do
	rm -rf "fi" amp && cp -a base "fi" && cp -a base amp
	stamp t0; git -C "fi" fast-import --quiet < records.fi; stamp t1
	echo $(( (t1 - t0) / 1000 )) >> fi.times
	stamp t0; amp import --repo amp records.jsonl > /dev/null; stamp t1
	echo $(( (t1 - t0) / 1000 )) >> amp.times
done
# The same records, in the same places.
[ "$(git -C "fi" ls-tree -r refs/amp/messages | awk '{print $4}' | sort | md5sum)" = \
  "$(git -C amp ls-tree -r refs/amp/messages | awk '{print $4}' | sort | md5sum)" ] ||
	echo "bench-import: WARNING: the two SSOTs differ" >&2
(cd amp && amp fsck > /dev/null) || echo "bench-import: WARNING: amp fsck is not clean" >&2
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
fi_us=$(med fi.times)
amp_us=$(med amp.times)
awk -v n="$records" -v f="$fi_us" -v a="$amp_us" -v r="$ROUNDS" 'BEGIN {
	printf "git fast-import, %d records (one commit each): %.0f ms, %.0f msgs/s\n", n, f / 1000, n / (f / 1e6)
	printf "amp import, the same records (checked): %.0f ms, %.0f msgs/s: %.2fx fast-import (target 0.5x; median of %d rounds)\n",
		a / 1000, n / (a / 1e6), f / a, r }'
