#!/usr/bin/env bash
# The simulated team at size (issue 33), for make bench-all: 3 coordinators,
# 8 executors, 3 reviewers and a watcher, each its own clone of one hub,
# through 40 tasks (share/team-sim.sh); prints each task's time and the
# team's throughput.  AMP_BIN (default: the build's bin/) is put on PATH.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
PATH=${AMP_BIN:-$src/bin}:$PATH
dir=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-team.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "# bench-team: 3 coordinators, 8 executors, 3 reviewers, 40 tasks through a hub"
"$src/share/team-sim.sh" "$dir/team" 3 8 3 40
