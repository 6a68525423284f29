#!/usr/bin/env bats
# Issue 10: the hooks of the work repository a dispatch names.  AMP/1.0
# branch_violation is "Executor tries to operate the main branch", and No
# Auto-Merge says the executor never merges: while an agent role is set, a
# commit on, or a push to, a protected branch is refused, and each refusal
# leaves one branch_violation escalation in the SSOT (git config amp.ssot)
# for the task the agent works on.  A human's own work is not blocked.

load helpers
load conversation

FEATURE=feature/watch-breath-v2

setup() {
	unset AMP_TASK
	make_ssot
	SSOT=$PWD
	WORK=$BATS_TEST_TMPDIR/work
	work_repo "$WORK" "$SSOT"
	send_dispatch
}

teardown() {
	fsck_teardown
}

# violations [TASK]: the branch_violation escalations of TASK ($T) in the
# SSOT, one JSON record a line, newest first.
violations() {
	amp log --json --repo "$SSOT" --task "${1:-$T}" --type escalation |
		jq -c '.record | select(.payload.escalation_type == "branch_violation")'
}

# assert_violations N [TASK]
assert_violations() {
	assert_equal "$(violations "${2:-$T}" | wc -l)" "$1"
}

install_work() {
	run amp hook install --work --repo "$WORK"
	assert_success
}

# dispatch_other TASK REPO: a dispatch of TASK to the executor naming REPO;
# sets D2.
dispatch_other() {
	sed "s#\"repo\": \"[^\"]*\"#\"repo\": \"$2\"#; s/$T-S/$1-S/g" \
		"$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/$1.json"
	D2=$(amp send task_dispatch --repo "$SSOT" --task "$1" --from coordinator --to executor \
		--payload "$BATS_TEST_TMPDIR/p/$1.json")
}

@test "install --work writes pre-commit and pre-push hooks that run amp hook by the driver's absolute path" {
	install_work
	assert_line "installed $WORK/.git/hooks/pre-commit"
	assert_line "installed $WORK/.git/hooks/pre-merge-commit"
	assert_line "installed $WORK/.git/hooks/pre-push"
	run cat "$WORK/.git/hooks/pre-commit"
	assert_line "# Installed by amp hook install: pre-commit"
	assert_line "'$AMP_BIN/amp' hook pre-commit \"\$@\" < \"\$input\""
	run cat "$WORK/.git/hooks/pre-push"
	assert_line "'$AMP_BIN/amp' hook work-pre-push \"\$@\" < \"\$input\""
	# again: amp's own scripts are rewritten, never chained to themselves
	install_work
	refute_output --partial chained
	assert_file_not_exists "$WORK/.git/hooks/pre-commit.amp-chained"
	run amp hook install --work --server --repo "$WORK"
	assert_failure 2
	assert_output --partial "--server and --work exclude each other"
}

@test "as the executor, a commit on main is refused and records one branch_violation escalation" {
	install_work
	cd "$WORK"
	head=$(git rev-parse HEAD)
	AMP_ROLE=executor run git commit -q --allow-empty -m "work on main"
	assert_failure
	assert_output --partial "amp hook: error: main: the executor may not commit on protected branch 'main' (AMP/1.0 branch_violation: \"Executor tries to operate the main branch\"; No Auto-Merge)"
	assert_output --partial "amp hook: recorded branch_violation escalation-$T-"
	assert_equal "$(git rev-parse HEAD)" "$head"
	assert_violations 1
	run violations
	assert_equal "$(jq -r .from <<< "$output")" system
	assert_equal "$(jq -r .to <<< "$output")" admin
	assert_equal "$(jq -r .payload.triggered_by <<< "$output")" executor
	assert_equal "$(jq -r .payload.severity <<< "$output")" warning
	assert_equal "$(jq -c .payload.affected_msgs <<< "$output")" "[\"$D\"]"
	assert_equal "$(jq -r .payload.description <<< "$output")" \
		"The executor tried to commit on protected branch 'main' in $WORK; the work repository's hook refused it (AMP/1.0 branch_violation, No Auto-Merge). Work goes on the dispatch's feature branch; only review and the admin bring it to a protected branch."
	# a second attempt is a second refusal, a second escalation
	AMP_ROLE=executor run git commit -q --allow-empty -m "again"
	assert_failure
	assert_violations 2
}

@test "as the executor, a push to master is refused and records one branch_violation escalation; the feature branch is pushed" {
	install_work
	git init -q --bare "$BATS_TEST_TMPDIR/remote.git"
	cd "$WORK"
	git remote add origin "$BATS_TEST_TMPDIR/remote.git"
	git checkout -q -b $FEATURE
	AMP_ROLE=executor run git commit -q --allow-empty -m "feature work"
	assert_success
	AMP_ROLE=executor run git push -q origin HEAD:master
	assert_failure
	assert_output --partial "amp hook: error: master: the executor may not push to protected branch 'master'"
	run git -C "$BATS_TEST_TMPDIR/remote.git" for-each-ref
	assert_output ""
	assert_violations 1
	assert_equal "$(violations | jq -r .payload.description | cut -c1-60)" \
		"The executor tried to push to protected branch 'master' in /"
	# one push to two protected branches: one refusal, one escalation
	AMP_ROLE=executor run git push -q origin HEAD:main HEAD:refs/heads/master
	assert_failure
	assert_line --partial "error: main: the executor may not push to"
	assert_line --partial "error: master: the executor may not push to"
	assert_violations 2
	assert_equal "$(violations | head -1 | jq -r .payload.description | cut -c1-64)" \
		"The executor tried to push to protected branch 'main', 'master' "
	AMP_ROLE=executor run git push -q origin $FEATURE
	assert_success
	assert_equal "$(git -C "$BATS_TEST_TMPDIR/remote.git" rev-parse refs/heads/$FEATURE)" "$(git rev-parse HEAD)"
	assert_violations 2
}

@test "as the executor, a merge commit into main is refused (No Auto-Merge) and records one branch_violation escalation" {
	install_work
	cd "$WORK"
	git checkout -q -b $FEATURE
	AMP_ROLE=executor git commit -q --allow-empty -m "feature work"
	git checkout -q main
	head=$(git rev-parse HEAD)
	AMP_ROLE=executor run git merge -q --no-ff -m "merge" $FEATURE
	assert_failure
	assert_output --partial "amp hook: error: main: the executor may not commit on protected branch 'main'"
	assert_equal "$(git rev-parse HEAD)" "$head"
	assert_violations 1
	git merge --abort 2> /dev/null || true
}

@test "a commit on the dispatch's feature branch passes and writes nothing to the SSOT" {
	install_work
	before=$(commit_count)
	cd "$WORK"
	git checkout -q -b $FEATURE
	AMP_ROLE=executor run git commit -q --allow-empty -m "feature work"
	assert_success
	assert_output ""
	assert_equal "$(git log -1 --format=%s)" "feature work"
	# AMP_REPO names the SSOT (on master), never the repository guarded
	assert_equal "$(git -C "$SSOT" symbolic-ref HEAD)" refs/heads/master
	AMP_REPO=$SSOT AMP_ROLE=executor run git commit -q --allow-empty -m "more work"
	assert_success
	assert_equal "$(git log -1 --format=%s)" "more work"
	assert_equal "$(git -C "$SSOT" rev-list --count refs/amp/messages)" "$before"
}

@test "with no agent role set, or the admin's, nothing is blocked" {
	install_work
	git init -q --bare "$BATS_TEST_TMPDIR/remote.git"
	before=$(commit_count)
	cd "$WORK"
	git remote add origin "$BATS_TEST_TMPDIR/remote.git"
	run git commit -q --allow-empty -m "a human's commit"
	assert_success
	run git push -q origin main:master
	assert_success
	AMP_ROLE=admin run git commit -q --allow-empty -m "the admin's commit"
	assert_success
	assert_equal "$(git log -2 --format=%s | tr '\n' ,)" "the admin's commit,a human's commit,"
	assert_equal "$(git -C "$SSOT" rev-list --count refs/amp/messages)" "$before"
	# git config amp.role sets the role as AMP_ROLE does
	git config amp.role reviewer
	run git commit -q --allow-empty -m "the reviewer's commit"
	assert_failure
	assert_output --partial "error: main: the reviewer may not commit on protected branch 'main'"
	assert_equal "$(violations | jq -r .payload.triggered_by)" reviewer
	# a role that is none is an error, not a way around the guard
	AMP_ROLE=intern run git commit -q --allow-empty -m "x"
	assert_failure
	assert_output --partial "AMP_ROLE"
}

@test "an existing pre-commit hook is chained: it runs first, and its failure refuses the commit" {
	cat > "$WORK/.git/hooks/pre-commit" <<-EOF
	#!/bin/sh
	echo ran >> "$BATS_TEST_TMPDIR/own-hook"
	[ ! -e "$BATS_TEST_TMPDIR/own-hook-fails" ]
	EOF
	chmod +x "$WORK/.git/hooks/pre-commit"
	install_work
	assert_line "installed $WORK/.git/hooks/pre-commit (chained to the hook that was there)"
	assert_line "installed $WORK/.git/hooks/pre-push"
	assert_file_exists "$WORK/.git/hooks/pre-commit.amp-chained"
	cd "$WORK"
	AMP_ROLE=executor run git commit -q --allow-empty -m "on main"
	assert_failure
	assert_output --partial "may not commit on protected branch 'main'"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/own-hook")" ran
	assert_violations 1
	git checkout -q -b $FEATURE
	AMP_ROLE=executor run git commit -q --allow-empty -m "feature"
	assert_success
	touch "$BATS_TEST_TMPDIR/own-hook-fails"
	AMP_ROLE=executor run git commit -q --allow-empty -m "refused by the own hook"
	assert_failure
	assert_equal "$(git log -1 --format=%s)" feature
	assert_equal "$(wc -l < "$BATS_TEST_TMPDIR/own-hook")" 3
}

@test "the SSOT's pre-push hook in the same repository is chained to the work pre-push" {
	amp hook install --repo "$WORK" > /dev/null
	install_work
	assert_line "installed $WORK/.git/hooks/pre-push (chained to the hook that was there)"
	run cat "$WORK/.git/hooks/pre-push.amp-chained"
	assert_line "'$AMP_BIN/amp' hook pre-push \"\$@\" < \"\$input\""
}

@test "core.hooksPath is honoured" {
	git -C "$WORK" config core.hooksPath .githooks
	install_work
	assert_line "installed $WORK/.githooks/pre-commit"
	assert_line "installed $WORK/.githooks/pre-push"
	assert_file_not_exists "$WORK/.git/hooks/pre-commit"
	cd "$WORK"
	AMP_ROLE=executor run git commit -q --allow-empty -m "on main"
	assert_failure
	assert_output --partial "may not commit on protected branch 'main'"
	assert_violations 1
}

@test "git config amp.protectedBranches of the work repository or of the SSOT protects more branches" {
	install_work
	cd "$WORK"
	git checkout -q -b release
	git checkout -q -b Trunk
	AMP_ROLE=executor run git commit -q --allow-empty -m "x"
	assert_success
	git config amp.protectedBranches trunk
	AMP_ROLE=executor run git commit -q --allow-empty -m "y"
	assert_failure
	assert_output --partial "error: Trunk: the executor may not commit on protected branch 'Trunk'"
	git -C "$SSOT" config amp.protectedBranches "release,hotfix"
	git checkout -q release
	AMP_ROLE=executor run git commit -q --allow-empty -m "z"
	assert_failure
	assert_output --partial "protected branch 'release'"
	assert_violations 2
}

@test "AMP_TASK names the task; else the open dispatch naming this repository, by realpath" {
	install_work
	dispatch_other T-2026-045 "$SSOT"
	cd "$WORK"
	# the open dispatch naming this repository: $T's, not T-2026-045's
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_violations 1
	assert_violations 0 T-2026-045
	AMP_TASK=T-2026-045 AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "recorded branch_violation escalation-T-2026-045-"
	assert_violations 1
	assert_violations 1 T-2026-045
	assert_equal "$(violations T-2026-045 | jq -c .payload.affected_msgs)" "[\"$D2\"]"
	# $T aborted: the later open dispatch naming this repository, spelled
	# another way
	amp abort $T --reason "moved" --from admin --repo "$SSOT" > /dev/null
	at 10
	mkdir "$BATS_TEST_TMPDIR/x"
	dispatch_other T-2026-046 "$BATS_TEST_TMPDIR/x/../work/"
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "recorded branch_violation escalation-T-2026-046-"
	assert_violations 1
	assert_violations 1 T-2026-046
	# AMP_TASK naming no task of the SSOT: refused, not recorded, said so
	AMP_TASK=T-2026-999 AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "amp hook: warning: the branch_violation could not be recorded in the SSOT: AMP_TASK: task T-2026-999 is not in the SSOT"
}

@test "no open dispatch names this repository: refused, with a warning that nothing was recorded" {
	install_work
	amp abort $T --reason "done" --from admin > /dev/null
	before=$(commit_count)
	cd "$WORK"
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "may not commit on protected branch 'main'"
	assert_output --partial "amp hook: warning: the branch_violation could not be recorded in the SSOT: AMP_TASK is not set and no open dispatch in the SSOT names $WORK"
	assert_equal "$(git -C "$SSOT" rev-list --count refs/amp/messages)" "$before"
}

@test "no amp.ssot, or a remote URL: the commit is still refused, with a warning that it was not recorded" {
	install_work
	before=$(commit_count)
	cd "$WORK"
	git config --unset amp.ssot
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "amp hook: error: main: the executor may not commit on protected branch 'main'"
	assert_output --partial "amp hook: warning: the branch_violation could not be recorded in the SSOT: git config amp.ssot is not set in this repository"
	git config amp.ssot git@example.invalid:ssot.git
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "amp.ssot is 'git@example.invalid:ssot.git', a remote URL: set it to the path of a local clone of the SSOT"
	git config amp.ssot https://example.invalid/ssot.git
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_output --partial "a remote URL"
	git config amp.ssot "$BATS_TEST_TMPDIR"
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_output --partial "could not be recorded in the SSOT: not a git repository"
	assert_equal "$(git -C "$SSOT" rev-list --count refs/amp/messages)" "$before"
	# a relative path is relative to the work tree; file:// is a path
	git config amp.ssot ../repo
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_failure
	assert_violations 1
	git config amp.ssot "file://$SSOT"
	AMP_ROLE=executor run git commit -q --allow-empty -m x
	assert_violations 2
}
