#!/usr/bin/env bash
# share/dashboard-shots.sh SITE: the SSOT of an admin's morning, for the
# README's pictures of the dashboard (make screenshots): eight tasks with
# their titles -- approved, in progress on a lease, in review after a
# rejected round, overdue, awaiting approval, suspended by an escalation --
# three named agents, a refused message; its site written into SITE.
set -eu
site=$1
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-shots.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q repo && cd repo
git config user.name admin && git config user.email admin@example.invalid
git config amp.checkRepo false
at() { AMP_NOW=$(date -u -d "@$((1772116327 + $1))" +%Y-%m-%dT%H:%M:%S+00:00); export AMP_NOW; }
at 0; amp init > /dev/null
# dispatch TASK RISK TITLE: its dispatch of two subtasks; prints its id
dispatch() {
	cat > "$work/d.json" <<JSON
{"description": "$3", "repo": "$work/repo", "branch": "feature/${1,,}",
 "subtasks": [{"subtask_id": "$1-S1", "description": "the change", "estimated_lines": 60},
              {"subtask_id": "$1-S2", "description": "its tests", "estimated_lines": 40}],
 "acceptance_criteria": ["all tests pass", "no regression"], "risk_level": "$2"}
JSON
	amp send task_dispatch --task "$1" --from coordinator --to executor --payload "$work/d.json"
}
# result TASK S AGENT: the result of subtask S; prints its id
result() {
	cat > "$work/r.json" <<JSON
{"subtask_id": "$1-$2", "completion_status": "complete",
 "diff_summary": {"files_changed": ["src/main.c"], "lines_added": 48, "lines_removed": 12},
 "self_assessment": {"criteria_met": [true, true], "notes": ["done", "green"]},
 "work_log": [{"timestamp": "$AMP_NOW", "action": "edit", "file": "src/main.c", "detail": "the change"}],
 "commit_hash": "a3f8d21"}
JSON
	amp send task_result --task "$1" --from executor ${3:+--agent "$3"} --payload "$work/r.json"
}
review() { # TASK DISPATCH RESULT REJECTS
	printf '{"original_dispatch_ref": "%s", "task_result_ref": "%s", "review_scope": "full", "diff_url": "https://example.invalid/pr/1", "reject_count": %s}' "$2" "$3" "${4:-0}" > "$work/q.json"
	amp send review_request --task "$1" --from coordinator --payload "$work/q.json"
}
verdict() { # TASK DECISION
	printf '{"criteria_results": [{"criterion": "all tests pass", "passed": %s, "evidence": "CI run 812"}, {"criterion": "no regression", "passed": %s, "evidence": "the suite"}], "issues": %s}' \
		"$([ "$2" = approved ] && echo true || echo false)" "$([ "$2" = approved ] && echo true || echo false)" \
		"$([ "$2" = approved ] && echo '[]' || echo '[{"severity": "major", "file": "src/main.c", "line": 87, "description": "the timeout is never reset", "suggested_fix": "reset it on resume"}]')" > "$work/v.json"
	amp verdict "$1" --decision "$2" --confidence 0.9 --payload "$work/v.json"
}
T="T-2026-101"
at 0; D=$(dispatch $T low "Replace the breathing timer with an extended runtime session")
at 2; amp claim $T --agent alice > /dev/null
at 5; amp ack "$D" --from executor --agent alice > /dev/null
T="T-2026-102"
at 60; D=$(dispatch $T medium "Cache the billing report per customer and month")
at 65; amp ack "$D" --from executor > /dev/null
at 400; R=$(result $T S1); amp ack "$R" --from coordinator > /dev/null
at 430; Q=$(review $T "$D" "$R"); amp ack "$Q" --from reviewer > /dev/null
at 700; V=$(verdict $T rejected); amp ack "$V" --from coordinator > /dev/null
at 760; D=$(dispatch $T medium "Cache the billing report per customer and month"); amp ack "$D" --from executor > /dev/null
at 1500; R=$(result $T S1); amp ack "$R" --from coordinator > /dev/null
at 1530; Q=$(review $T "$D" "$R" 1); amp ack "$Q" --from reviewer > /dev/null
T="T-2026-103"
at 300; dispatch $T low "Translate the onboarding e-mails into German and French" > /dev/null
T="T-2026-104"
at 900; dispatch $T high "Migrate the customer database to the new cluster" > /dev/null
T="T-2026-105"
at 1000; D=$(dispatch $T medium "Fix the crash when a session ends in the background")
at 1010; amp claim $T --agent bob > /dev/null; amp ack "$D" --from executor --agent bob > /dev/null
at 1600; amp escalate $T --from executor --agent bob --type conflict --severity info --affected "$D" \
	--description "Which retry count is right: 3 (the spec) or 5 (the criteria)?" > /dev/null
at 1700; amp escalate $T --from coordinator --type conflict --severity critical --affected "$D" \
	--description "The spec and the acceptance criteria disagree on the retry count" > /dev/null
T="T-2026-106"
at 1200; D=$(dispatch $T low "Remove the deprecated v1 export endpoint")
at 1205; amp claim $T --agent carol > /dev/null; amp ack "$D" --from executor --agent carol > /dev/null
at 1800; amp heartbeat $T --from executor --agent carol > /dev/null
at 2000; result $T S1 carol > /dev/null
T="T-2026-107"
at 1900; dispatch $T low "Add a dark theme to the settings page" > /dev/null
sed 's/"risk_level": "low"/"risk_level": "urgent"/' "$work/d.json" > "$work/bad.json"
at 1950; amp send task_dispatch --task T-2026-108 --from coordinator --payload "$work/bad.json" > /dev/null 2>&1 || true
at 2100; amp dashboard --out "$site" > /dev/null
