#!/usr/bin/env bash
# A team of agents, simulated through a hub (issue 33): a bare hub with
# amp's server hook, and one clone per agent -- C coordinators, E executors,
# R reviewers and a watcher (who also acts as the admin) -- each driven by
# this script as an agent would drive amp: the coordinator dispatches, an
# executor claims, ACKs and sends its result, the coordinator ACKs it and asks
# for a review, a reviewer ACKs and gives its verdict, the coordinator ACKs
# the verdict, and a rejected subtask is dispatched again.  Every agent
# syncs before and after it acts.  Planted on purpose: every third task is
# rejected once; task 2 has --max-iterations 2 and is rejected twice, which
# locks it (one hallucination_lock escalation), and the admin resumes it;
# task 3 is aborted by its coordinator; the last task depends on task 1
# (hard: amp depend), dispatched after task 1 is approved.  The watcher runs
# amp watch --once after every task.  Time moves with AMP_NOW, 5 s a step,
# so every ACK is inside its deadline.
#
# usage: share/team-sim.sh DIR [COORDINATORS EXECUTORS REVIEWERS TASKS]
# (defaults 2 3 2 8).  amp on PATH.  Prints one line per task
# ("task T-2026-001 approved in 1.23 s") and then "team: N tasks in S s,
# X tasks/min".  Exits non-zero on the first command that fails.
set -euo pipefail

dir=$1
nc=${2:-2} ne=${3:-3} nr=${4:-2} nt=${5:-8}
clock=1772116327 # 2026-02-26T14:32:07Z
export GIT_CONFIG_NOSYSTEM=1

tick() {
	clock=$((clock + 5))
	AMP_NOW=$(date -u -d "@$clock" +%Y-%m-%dT%H:%M:%S+00:00)
	export AMP_NOW
}

# as CLONE ROLE AGENT CMD...: runs amp CMD in the agent's clone, after a
# sync, then syncs again.
as() {
	local clone=$1 role=$2 agent=$3 out
	shift 3
	tick
	(cd "$dir/$clone" && AMP_ROLE=$role AMP_AGENT=$agent amp sync > /dev/null &&
		out=$(AMP_ROLE=$role AMP_AGENT=$agent amp "$@") &&
		AMP_ROLE=$role AMP_AGENT=$agent amp sync > /dev/null && printf '%s\n' "$out")
}

mkdir -p "$dir/p"
git init -q --bare "$dir/hub.git"
amp hook install --server --repo "$dir/hub.git" > /dev/null
git init -q -b main "$dir/work"
git -C "$dir/work" -c user.name=t -c user.email=t@example.invalid commit -q --allow-empty -m initial
clones=()
for i in $(seq 1 "$nc"); do clones+=("c$i"); done
for i in $(seq 1 "$ne"); do clones+=("e$i"); done
for i in $(seq 1 "$nr"); do clones+=("r$i"); done
clones+=(w)
for c in "${clones[@]}"; do
	git clone -q "$dir/hub.git" "$dir/$c" 2> /dev/null
	git -C "$dir/$c" config user.name "$c"
	git -C "$dir/$c" config user.email "$c@example.invalid"
	git -C "$dir/$c" config amp.autoPackDetach false
done
tick
(cd "$dir/c1" && amp init > /dev/null && amp sync > /dev/null)

# dispatch_payload TASK: the payload of a one-subtask dispatch.
dispatch_payload() {
	cat > "$dir/p/$1.dispatch.json" <<JSON
{"description": "Task $1 of the simulated team", "repo": "$dir/work", "branch": "feature/$1",
 "subtasks": [{"subtask_id": "$1-S1", "description": "the work", "estimated_lines": 10}],
 "acceptance_criteria": ["tests pass"], "risk_level": "low"}
JSON
	cat > "$dir/p/$1.result.json" <<JSON
{"subtask_id": "$1-S1", "completion_status": "complete",
 "diff_summary": {"files_changed": ["a.c"], "lines_added": 10, "lines_removed": 2},
 "self_assessment": {"criteria_met": [true], "notes": ["done"]},
 "work_log": [{"timestamp": "2026-02-26T14:28:00Z", "action": "edit", "file": "a.c", "detail": "done"}],
 "commit_hash": "a3f8d21"}
JSON
	cat > "$dir/p/reject.json" <<JSON
{"criteria_results": [{"criterion": "tests pass", "passed": false, "evidence": "one test fails"}],
 "issues": [{"severity": "major", "file": "a.c", "line": 1, "description": "fails", "suggested_fix": "fix it"}]}
JSON
	cat > "$dir/p/approve.json" <<JSON
{"criteria_results": [{"criterion": "tests pass", "passed": true, "evidence": "CI green"}]}
JSON
}

# round TASK C E R REJECTS_SO_FAR DECISION [locks]: one round from dispatch
# to the verdict's ACK ("locks": the verdict locks the task, whose ACK waits
# for the admin's resume).
round() {
	local t=$1 c=$2 e=$3 r=$4 n=$5 decision=$6 d res q v notes=""
	# To one named executor; it finds the dispatch in its own view of
	# the executors' inbox, and claims (waiting if someone holds it).
	as "$c" coordinator "$c" send task_dispatch --task "$t" --to "$e@executor" \
		--payload "$dir/p/$t.dispatch.json" > /dev/null
	d=$(as "$e" executor "$e" inbox executor --agent "$e" --task "$t" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"][0]["msg_id"])')
	as "$e" executor "$e" claim "$t" --wait 10 > /dev/null
	as "$e" executor "$e" ack "$d" > /dev/null
	res=$(as "$e" executor "$e" send task_result --task "$t" --payload "$dir/p/$t.result.json")
	as "$c" coordinator "$c" ack "$res" > /dev/null
	# AMP/1.0 §03: from two rejects on, the coordinator warns the reviewer.
	[ "$n" -lt 2 ] || notes=', "coordinator_notes": "Lock is approaching: two rejects already"'
	cat > "$dir/p/$t.rr.json" <<JSON
{"original_dispatch_ref": "$d", "task_result_ref": "$res", "review_scope": "full",
 "diff_url": "https://example.invalid/compare/main...feature/$t", "reject_count": $n$notes}
JSON
	q=$(as "$c" coordinator "$c" send review_request --task "$t" --payload "$dir/p/$t.rr.json")
	as "$r" reviewer "$r" ack "$q" > /dev/null
	if [ "$decision" = rejected ]; then
		v=$(as "$r" reviewer "$r" verdict "$t" --decision rejected --confidence 0.9 --payload "$dir/p/reject.json")
	else
		v=$(as "$r" reviewer "$r" verdict "$t" --decision approved --confidence 0.95 --payload "$dir/p/approve.json")
	fi
	LAST_VERDICT=$v
	[ "${7:-}" = locks ] || as "$c" coordinator "$c" ack "$v" > /dev/null
}

start_all=$(date +%s%N)
for i in $(seq 1 "$nt"); do
	t=$(printf 'T-2026-%03d' "$i")
	c=c$(((i - 1) % nc + 1)) e=e$(((i - 1) % ne + 1)) r=r$(((i - 1) % nr + 1))
	start=$(date +%s%N)
	dispatch_payload "$t"
	outcome=approved
	if [ "$i" -eq "$nt" ] && [ "$nt" -ge 2 ]; then
		as "$c" coordinator "$c" depend "$t" --on T-2026-001 > /dev/null
	fi
	if [ "$i" -eq 3 ]; then
		# Aborted by its coordinator once dispatched and ACKed.
		d=$(as "$c" coordinator "$c" send task_dispatch --task "$t" --to executor --payload "$dir/p/$t.dispatch.json")
		as "$e" executor "$e" ack "$d" > /dev/null
		as "$c" coordinator "$c" abort "$t" --reason "the feature was dropped" > /dev/null
		outcome=aborted
	elif [ "$i" -eq 2 ]; then
		# Two rejects lock it (its max_iterations); the admin resumes.
		as "$c" coordinator "$c" plan "$t" --max-iterations 2 > /dev/null
		round "$t" "$c" "$e" "$r" 0 rejected
		round "$t" "$c" "$e" "$r" 1 rejected locks
		as w admin admin resume "$t" --reason "the reviewer's findings are addressed" > /dev/null
		as "$c" coordinator "$c" ack "$LAST_VERDICT" > /dev/null
		round "$t" "$c" "$e" "$r" 2 approved
	elif [ $((i % 3)) -eq 0 ]; then
		round "$t" "$c" "$e" "$r" 0 rejected
		round "$t" "$c" "$e" "$r" 1 approved
	else
		round "$t" "$c" "$e" "$r" 0 approved
	fi
	as w admin watcher watch --once > /dev/null
	end=$(date +%s%N)
	printf 'task %s %s in %d.%02d s\n' "$t" "$outcome" $(((end - start) / 1000000000)) $(((end - start) / 10000000 % 100))
done
end_all=$(date +%s%N)
ms=$(((end_all - start_all) / 1000000))
for c in "${clones[@]}"; do (cd "$dir/$c" && amp sync > /dev/null); done
printf 'team: %d coordinators, %d executors, %d reviewers, %d tasks in %d.%03d s, %d.%02d tasks/min\n' \
	"$nc" "$ne" "$nr" "$nt" $((ms / 1000)) $((ms % 1000)) $((nt * 60000 / ms)) $((nt * 6000000 / ms % 100))
