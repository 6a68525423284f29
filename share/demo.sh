#!/usr/bin/env bash
# make demo: amp's main job on a throw-away repository.
#   1. validate the AMP/1.0 seed's example messages, and one broken message;
#   2. run a whole task through a fresh SSOT: dispatch, ACK, result, review,
#      verdict, and show `amp status`;
#   3. show the enforcer at work (share/demo-lock.sh), when it is built;
#   4. strict mode (signed records): an executor's forged resume is refused;
#   5. two executors race `amp claim` for one task: one wins, one is told.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH=${AMP_BIN:-$src/bin}:$PATH NO_COLOR=${NO_COLOR:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A script pages nothing (amp and git would wait for a key on a terminal).
export AMP_PAGER=cat GIT_PAGER=cat
# Bold headings only on a terminal, and never with NO_COLOR set; git, which
# does not read NO_COLOR, is told so itself (amp reads it).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	bold='\033[1m' plain='\033[0m'
else
	bold='' plain=''
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=color.ui GIT_CONFIG_VALUE_0=never
fi
step() { printf "\n${bold}== %s${plain}\n" "$*"; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }

step "1. The AMP/1.0 seed's example messages validate"
show amp validate "$src"/test/fixtures/valid/seed-*.json

step "   ...and a dispatch to main does not (exit 1, naming the field)"
show amp validate "$src"/test/fixtures/invalid/dispatch-branch-main.json
echo "(exit $?)"

step "2. A whole task in a fresh SSOT ($work/repo)"
git init -q "$work/repo" && cd "$work/repo" || exit 1
show amp init
# The dispatch names the executor's repository, as the seed's does
# (/Users/kircerta/dev/Rhylm): on another machine, so amp send does not
# look for it here.
git config amp.checkRepo false
# a throw-away repository: repack in the foreground, so that no repack
# started by the writes still runs when the demo deletes it
git config amp.autoPackDetach false
cat > dispatch.json <<'JSON'
{
  "description": "Reconstruct watchOS breathing engine timing logic and fix timer exception when background hangs",
  "repo": "/Users/kircerta/dev/Rhylm",
  "branch": "feature/watch-breath-v2",
  "subtasks": [
    {"subtask_id": "T-2026-044-S1", "description": "Replace Timer with WKExtendedRuntimeSession", "estimated_lines": 60},
    {"subtask_id": "T-2026-044-S2", "description": "Add applicationDidEnterBackground handling", "estimated_lines": 30}
  ],
  "acceptance_criteria": ["Resume after background suspension, timing error < 500ms", "XCode Cloud all tests passed"],
  "risk_level": "medium"
}
JSON
cat > result.json <<'JSON'
{
  "subtask_id": "T-2026-044-S1",
  "completion_status": "complete",
  "diff_summary": {"files_changed": ["Sources/WatchApp/BreathEngine.swift"], "lines_added": 68, "lines_removed": 24},
  "self_assessment": {"criteria_met": [true, null], "notes": ["~200ms in the simulator", "waiting for XCode Cloud"]},
  "work_log": [{"timestamp": "2026-02-26T14:28:00Z", "action": "replace_timer", "file": "BreathEngine.swift", "detail": "Timer replaced"}],
  "commit_hash": "a3f8d21"
}
JSON
cat > verdict.json <<'JSON'
{
  "decision": "approved",
  "criteria_results": [
    {"criterion": "Resume after background suspension, timing error < 500ms", "passed": true, "evidence": "measured 180ms"},
    {"criterion": "XCode Cloud all tests passed", "passed": true, "evidence": "build 812 green"}
  ],
  "confidence": 0.92
}
JSON
sed 's/T-2026-044-S1/T-2026-044-S2/; s/BreathEngine.swift/AppDelegate.swift/g' result.json > result2.json
export AMP_NOW=2026-02-26T14:32:07+00:00
D=$(show amp send task_dispatch --task T-2026-044 --from coordinator --to executor --payload dispatch.json); echo "$D"
step "   Out of order: a result before the dispatch's ACK is refused (exit 3)"
AMP_NOW=2026-02-26T14:32:15+00:00 show amp send task_result --task T-2026-044 --from executor --payload result.json
echo "(exit $?)"
AMP_NOW=2026-02-26T14:32:20+00:00 show amp ack "$D" --from executor
R=$(AMP_NOW=2026-02-26T14:50:00+00:00 show amp send task_result --task T-2026-044 --from executor --to coordinator --payload result.json); echo "$R"
AMP_NOW=2026-02-26T14:50:30+00:00 show amp ack "$R" --from coordinator
review() {
	cat > review.json <<JSON
{"original_dispatch_ref": "$D", "task_result_ref": "$1", "review_scope": "full",
 "diff_url": "https://github.com/kircerta/Rhylm/compare/main...feature/watch-breath-v2", "reject_count": 0}
JSON
}
review "$R"
Q=$(AMP_NOW=2026-02-26T14:51:00+00:00 show amp send review_request --task T-2026-044 --from coordinator --to reviewer --context-ref "$D" --payload review.json); echo "$Q"
AMP_NOW=2026-02-26T14:52:00+00:00 show amp ack "$Q" --from reviewer
V=$(AMP_NOW=2026-02-26T15:05:00+00:00 show amp send review_verdict --task T-2026-044 --from reviewer --to coordinator --context-ref "$Q" --payload verdict.json); echo "$V"
AMP_NOW=2026-02-26T15:05:20+00:00 show amp ack "$V" --from coordinator
step "   Subtask by subtask: S1 is approved, S2 still in progress, so the task is not"
AMP_NOW=2026-02-26T15:05:30+00:00 show amp status T-2026-044 | sed -n '1,3p'
step "   A second verdict on the same review_request is refused (exit 3)"
AMP_NOW=2026-02-26T15:06:00+00:00 show amp verdict T-2026-044 --decision approved --confidence 0.9 --context-ref "$Q" --payload verdict.json
echo "(exit $?)"
R2=$(AMP_NOW=2026-02-26T15:20:00+00:00 show amp send task_result --task T-2026-044 --from executor --payload result2.json); echo "$R2"
AMP_NOW=2026-02-26T15:20:30+00:00 show amp ack "$R2" --from coordinator
review "$R2"
Q2=$(AMP_NOW=2026-02-26T15:21:00+00:00 show amp send review_request --task T-2026-044 --from coordinator --payload review.json); echo "$Q2"
AMP_NOW=2026-02-26T15:22:00+00:00 show amp ack "$Q2" --from reviewer
V2=$(AMP_NOW=2026-02-26T15:30:00+00:00 show amp send review_verdict --task T-2026-044 --from reviewer --context-ref "$Q2" --payload verdict.json); echo "$V2"
step "   A dispatch to master is refused (exit 3) and escalated"
sed 's#feature/watch-breath-v2#master#' dispatch.json > bad.json
AMP_NOW=2026-02-26T15:30:10+00:00 show amp send task_dispatch --task T-2026-044 --from coordinator --payload bad.json
echo "(exit $?)"
step "   The audit trail (git log refs/amp/messages)"
git log --format='%h %an: %s' refs/amp/messages
step "   amp status T-2026-044 (the verdict's ACK is due within 60 s)"
AMP_NOW=2026-02-26T15:30:30+00:00 show amp status T-2026-044 | tee status.txt
# The demo fails loudly when the main job did not get through.
grep -q '^T-2026-044  *approved' status.txt || { echo "make demo: the task did not reach approved" >&2; exit 1; }

if [ -x "$src/share/demo-lock.sh" ] && amp watch --help > /dev/null 2>&1; then
	step "3. The enforcer: three rejects lock the task"
	"$src/share/demo-lock.sh" || exit 1
fi

step "4. Signed records, strict mode: an executor's key cannot resume ($work/strict)"
# Throw-away keys: one for the admin, one for the executor, and the file
# that says which role each may speak as.  Strict mode takes the time from
# the clock, so AMP_NOW is not set here.
unset AMP_NOW
mkdir "$work/keys" && for r in admin coordinator executor; do
	ssh-keygen -q -t ed25519 -N '' -C "demo-$r" -f "$work/keys/$r" || exit 1
	printf '%s %s\n' "$r" "$(cut -d' ' -f1,2 "$work/keys/$r.pub")" >> "$work/keys/signers"
done
git init -q "$work/strict" && cd "$work/strict" || exit 1
git config amp.allowedSigners "$work/keys/signers"
git config amp.requireSigned true
git config amp.checkRepo false
# a throw-away repository: repack in the foreground, so that no repack
# started by the writes still runs when the demo deletes it
git config amp.autoPackDetach false
git config amp.signingKey "$work/keys/admin"
amp init > /dev/null
git config amp.signingKey "$work/keys/coordinator"
amp send task_dispatch --task T-2026-044 --from coordinator --to executor --payload "$work/repo/dispatch.json" > /dev/null
show amp escalate T-2026-044 --from coordinator --type conflict --severity critical --description "stop: the plan is wrong" > /dev/null
git config amp.signingKey "$work/keys/executor"
show amp resume T-2026-044 --from admin --reason "I resume my own task"
echo "(exit $?: refused, nothing written)"
git config amp.signingKey "$work/keys/admin"
show amp resume T-2026-044 --from admin --reason "reviewed the plan"
show git -c gpg.ssh.allowedSignersFile="$work/keys/signers" log -1 --show-signature --format='%h %an: %s' refs/amp/messages

step "5. Two executors race for one task: exactly one claim wins ($work/repo)"
cd "$work/repo" || exit 1
amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload dispatch.json > /dev/null || exit 1
printf '$ amp claim T-2026-045 --agent alice & amp claim T-2026-045 --agent bob &\n' >&2
amp claim T-2026-045 --agent alice > "$work/alice.out" 2>&1 &
amp claim T-2026-045 --agent bob > "$work/bob.out" 2>&1 &
wait
cat "$work/alice.out" "$work/bob.out"
show amp agents

step "6. The admin's dashboard (amp dashboard), of the SSOT of part 2"
site=${AMP_DEMO_DASHBOARD:-${TMPDIR:-/tmp}/amp-dashboard-demo}
(cd "$work/repo" && AMP_NOW=2026-02-26T15:30:30+00:00 amp dashboard --out "$site" > /dev/null) || exit 1
echo "dashboard: $site/index.html"
