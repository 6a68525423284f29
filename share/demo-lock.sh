#!/usr/bin/env bash
# The lock at work, on a throw-away repository: a dispatch, three rounds
# each ending in a rejected verdict (the coordinator re-dispatches after
# each), the third verdict committed with the Hallucination Lock (no
# watcher needed), the executor refused, `amp status` showing locked, the
# admin's resume, a new round and the approval.  Takes the binaries from $AMP_BIN (default: ../bin).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-demo-lock.XXXXXX")
trap 'rm -rf "$work"' EXIT
show() { printf '$ %s\n' "$*" >&2; "$@"; }
# A script pages nothing; without colour (not a terminal, or NO_COLOR set)
# git is told so itself, as it does not read NO_COLOR (amp does).
export AMP_PAGER=cat GIT_PAGER=cat
if ! [ -t 1 ] || [ -n "${NO_COLOR:-}" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=color.ui GIT_CONFIG_VALUE_0=never
fi
at() { AMP_NOW=$(date -u -d "@$((1772116327 + $1))" +%Y-%m-%dT%H:%M:%S+00:00); export AMP_NOW; }
T="T-2026-044"

git init -q "$work/repo" && cd "$work/repo" || exit 1
amp init > /dev/null
# The dispatch names the executor's repository, as the seed's does
# (/Users/kircerta/dev/Rhylm): on another machine, so amp send does not
# look for it here.
git config amp.checkRepo false
# a throw-away repository: repack in the foreground, so that no repack
# started by the writes still runs when the demo deletes it
git config amp.autoPackDetach false
cat > dispatch.json <<'JSON'
{"description": "Reconstruct watchOS breathing engine timing logic", "repo": "/Users/kircerta/dev/Rhylm",
 "branch": "feature/watch-breath-v2",
 "subtasks": [{"subtask_id": "T-2026-044-S1", "description": "Replace Timer with WKExtendedRuntimeSession", "estimated_lines": 60}],
 "acceptance_criteria": ["Resume after background suspension, timing error < 500ms"], "risk_level": "medium"}
JSON
cat > result.json <<'JSON'
{"subtask_id": "T-2026-044-S1", "completion_status": "complete",
 "diff_summary": {"files_changed": ["Sources/WatchApp/BreathEngine.swift"], "lines_added": 68, "lines_removed": 24},
 "self_assessment": {"criteria_met": [true], "notes": ["~200ms in the simulator"]},
 "work_log": [{"timestamp": "2026-02-26T14:28:00Z", "action": "replace_timer", "file": "BreathEngine.swift", "detail": "Timer replaced"}]}
JSON
cat > reject.json <<'JSON'
{"criteria_results": [{"criterion": "Resume after background suspension, timing error < 500ms", "passed": false,
   "evidence": "the session is released by ARC right after start()"}],
 "issues": [{"severity": "critical", "file": "Sources/WatchApp/BreathEngine.swift", "line": 87,
   "description": "No session reference is held after session.start()", "suggested_fix": "Keep the session in a property"}]}
JSON

at 0; D=$(show amp send task_dispatch --task $T --from coordinator --payload dispatch.json); echo "$D"
at 5; show amp ack "$D" --from executor
# round N: a new dispatch after a rejection, the result, a review request
# with the SSOT's reject count, a rejected verdict
round() {
	local n=$1 t=$((100 + $1 * 300)) notes=""
	if [ "$n" -gt 0 ]; then
		at $((t - 20)); D=$(amp send task_dispatch --task $T --from coordinator --payload dispatch.json) &&
			amp ack "$D" --from executor > /dev/null
	fi
	at $t; R=$(amp send task_result --task $T --from executor --payload result.json) && amp ack "$R" --from coordinator > /dev/null
	[ "$n" -ge 2 ] && notes=', "coordinator_notes": "Lock is approaching: two rejects already"'
	printf '{"original_dispatch_ref": "%s", "task_result_ref": "%s", "review_scope": "full", "diff_url": "https://github.com/kircerta/Rhylm/compare/main...feature/watch-breath-v2", "reject_count": %d%s}\n' \
		"$D" "$R" "$n" "$notes" > review.json
	at $((t + 10)); Q=$(amp send review_request --task $T --from coordinator --payload review.json) && amp ack "$Q" --from reviewer > /dev/null
	at $((t + 200)); V=$(show amp verdict $T --decision rejected --confidence 0.9 --payload reject.json); echo "$V"
	at $((t + 210)); amp ack "$V" --from coordinator > /dev/null 2>&1
}
for n in 0 1 2; do round $n; done
echo
echo "# the third rejected verdict was committed with the Hallucination Lock: no watcher needed"
git log -1 --format='%h %an: %s' refs/amp/messages
git show --stat --format= refs/amp/messages | sed 's/^/   /'
at 1000; show amp watch --once
show amp status $T | head -1
echo
echo "# the executor is refused until the admin resumes (exit 3)"
show amp send task_result --task $T --from executor --payload result.json
echo "(exit $?)"
at 1100; show amp resume $T --from admin --reason "Admin reviewed the diff: hold the session in a property of the engine"
at 1110; amp ack "$V" --from coordinator > /dev/null
at 1150; D=$(amp send task_dispatch --task $T --from coordinator --payload dispatch.json) && amp ack "$D" --from executor > /dev/null
at 1200; R=$(amp send task_result --task $T --from executor --payload result.json) && amp ack "$R" --from coordinator > /dev/null
printf '{"original_dispatch_ref": "%s", "task_result_ref": "%s", "review_scope": "incremental", "diff_url": "https://github.com/kircerta/Rhylm/compare/main...feature/watch-breath-v2", "reject_count": 3, "coordinator_notes": "Lock is approaching: resumed by the admin after a lock"}\n' "$D" "$R" > review.json
at 1210; Q=$(amp send review_request --task $T --from coordinator --payload review.json) && amp ack "$Q" --from reviewer > /dev/null
at 1300; V=$(show amp verdict $T --decision approved --confidence 0.93); echo "$V"
at 1310; amp ack "$V" --from coordinator > /dev/null
at 1320; show amp watch --once
show amp status $T | tee status.txt
grep -q "^$T  *approved" status.txt || { echo "demo-lock: the task did not reach approved" >&2; exit 1; }
echo
git log --format='%h %an: %s' refs/amp/messages | head -8
