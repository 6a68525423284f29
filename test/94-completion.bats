#!/usr/bin/env bats
# Shell completions (issue 13): completions/amp.bash driven through its
# completion function with COMP_WORDS/COMP_CWORD/COMP_LINE, and
# completions/_amp in `zsh -f` with compinit, its candidates captured
# through a compadd wrapper in a zpty.  The options they offer are read
# from `amp <cmd> --help`; the task ids and msg_ids from a real SSOT.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	make_ssot
	send_dispatch
	amp send task_dispatch --task T-2026-01234 --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	# a user's own command, found on PATH as git finds git-*
	mkdir -p "$BATS_TEST_TMPDIR/ubin"
	printf '#!/bin/sh\necho foo\n' > "$BATS_TEST_TMPDIR/ubin/amp-foo"
	chmod +x "$BATS_TEST_TMPDIR/ubin/amp-foo"
	PATH=$BATS_TEST_TMPDIR/ubin:$PATH
}

# complete "LINE": the sorted candidates amp.bash gives for LINE (a
# trailing space starts a new word), one line, space separated.
# shellcheck disable=SC2016 # the script is bash's, its arguments positional
complete_bash() {
	bash --norc --noprofile -c '
		source "$1"
		COMP_LINE=$2
		COMP_POINT=${#2}
		read -ra COMP_WORDS <<< "$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_amp
		printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd " "
	' complete "$AMP_BASH_COMPLETION" "$1"
}

@test "bash: subcommands are amp's own and a user's amp-foo on PATH" {
	run -0 complete_bash "amp s"
	assert_output "schema send show status sync"
	run -0 complete_bash "amp f"
	assert_output "foo fsck"
	run -0 complete_bash "amp help sc"
	assert_output "schema"
}

@test "bash: options of send and status come from their --help" {
	run -0 complete_bash "amp send --"
	for o in --task --payload --from --to --context-ref --ack-timeout --no-ack --envelope \
		--idempotency-key --sync --no-sync --json --repo --template --help; do
		assert_output --partial " $o" || assert_output --partial "$o "
	done
	run -0 complete_bash "amp send --t"
	assert_output "--task --template --to"
	run -0 complete_bash "amp status --"
	assert_output "--all --color --help --json --no-color --no-pager --repo --utc --wide"
}

@test "bash: message types after amp send, roles where a role goes, values a usage lists" {
	run -0 complete_bash "amp send "
	assert_output "escalation review_request review_verdict task_dispatch task_result"
	run -0 complete_bash "amp send task_result --from "
	assert_output "admin coordinator executor reviewer system"
	run -0 complete_bash "amp inbox "
	assert_output "admin coordinator executor reviewer system"
	run -0 complete_bash "amp abort T-2026-044 --from "
	assert_output "admin coordinator"
	run -0 complete_bash "amp verdict T-2026-044 --decision "
	assert_output "approved approved_with_fix rejected"
	run -0 complete_bash "amp escalate T-2026-044 --type h"
	assert_output "hallucination_lock heartbeat_timeout"
	run -0 complete_bash "amp hook "
	assert_output "install post-receive pre-commit pre-merge-commit pre-push pre-receive work-pre-push"
}

@test "bash: task ids and msg_ids from the SSOT of the current repository" {
	run -0 complete_bash "amp status "
	assert_output "T-2026-01234 T-2026-044"
	run -0 complete_bash "amp send task_result --task T-2026-01"
	assert_output "T-2026-01234"
	# before a msg_id names its task: "<type>-<task_id>-" stems
	run -0 complete_bash "amp ack task_d"
	assert_output "task_dispatch-T-2026-01234- task_dispatch-T-2026-044-"
	# then that task's messages, and no other task's
	run -0 complete_bash "amp ack task_dispatch-T-2026-044-"
	assert_output "$D"
	run -0 complete_bash "amp show task_dispatch-T-2026-01234-"
	assert_output --regexp '^task_dispatch-T-2026-01234-[0-9]+$'
	# --repo points the completion at another repository
	cd "$BATS_TEST_TMPDIR"
	run -0 complete_bash "amp status --repo $BATS_TEST_TMPDIR/repo "
	assert_output "T-2026-01234 T-2026-044"
}

@test "bash: outside a repository ids complete to nothing and nothing is printed" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr complete_bash "amp status "
	assert_output ""
	# shellcheck disable=SC2154 # set by run --separate-stderr
	assert_equal "$stderr" ""
	run -0 --separate-stderr complete_bash "amp ack task_result-T-2026-044-"
	assert_output ""
	assert_equal "$stderr" ""
}

# complete_zsh "LINE"...: for each LINE, "== LINE" and the sorted
# candidates _amp offers, captured by a compadd wrapper in an interactive
# zsh -f (compinit, completions/ on fpath) on a pseudo-terminal.
# shellcheck disable=SC2016 # the script is zsh's
complete_zsh() {
	HITS=$BATS_TEST_TMPDIR/hits ZERR=$BATS_TEST_TMPDIR/zerr timeout 60 zsh -f -c '
		zmodload zsh/zpty
		zpty z zsh -f -i
		zpty -w z "exec 2>>\$ZERR; PS1=; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
		zpty -w z "compadd() { local -a __hits; builtin compadd -O __hits \"\$@\"; print -rl -- \${^__hits} >> \$HITS; builtin compadd \"\$@\"; }"
		zpty -w z "done-widget() { print -r -- \"<<done>>\" >> \$HITS; }; zle -N done-widget; bindkey \"^X\" done-widget; bindkey \"^I\" complete-word"
		shift
		for line in "$@"; do
			: > $HITS
			zpty -w -n z "$line"$'\''\t\x18'\''
			# the two keys are handled in order: the marker ends the completion
			for i in {1..600}; do grep -q "<<done>>" $HITS && break; sleep 0.05; done
			print -r -- "== $line"
			grep -v -e "<<done>>" -e "^\$" $HITS | sort -u | paste -sd " " -
			zpty -w -n z $'\''\x15'\''
		done
		zpty -d z
	' complete "$AMP_ZSH_COMPLETION" "$@"
}

@test "zsh: _amp completes subcommands, options, types, roles, task ids and msg_ids" {
	: > "$BATS_TEST_TMPDIR/zerr"
	run -0 complete_zsh "amp s" "amp f" "amp send --t" "amp status --" "amp send " \
		"amp send task_result --from " "amp verdict T-2026-044 --decision " \
		"amp status " "amp ack task_d" "amp ack task_dispatch-T-2026-044-" \
		"amp show task_dispatch-T-2026-01234-"
	assert_equal "$(sed -n '/^== amp s$/{n;p}' <<< "$output")" "schema send show status sync"
	assert_equal "$(sed -n '/^== amp f$/{n;p}' <<< "$output")" "foo fsck"
	assert_equal "$(sed -n '/^== amp send --t$/{n;p}' <<< "$output")" "--task --template --to"
	assert_equal "$(sed -n '/^== amp status --$/{n;p}' <<< "$output")" "--all --color --help --json --no-color --no-pager --repo --utc --wide"
	assert_equal "$(sed -n '/^== amp send $/{n;p}' <<< "$output")" \
		"escalation review_request review_verdict task_dispatch task_result"
	assert_equal "$(sed -n '/^== amp send task_result --from $/{n;p}' <<< "$output")" \
		"admin coordinator executor reviewer system"
	assert_equal "$(sed -n '/^== amp verdict T-2026-044 --decision $/{n;p}' <<< "$output")" \
		"approved approved_with_fix rejected"
	assert_equal "$(sed -n '/^== amp status $/{n;p}' <<< "$output")" "T-2026-01234 T-2026-044"
	assert_equal "$(sed -n '/^== amp ack task_d$/{n;p}' <<< "$output")" \
		"task_dispatch-T-2026-01234- task_dispatch-T-2026-044-"
	assert_equal "$(sed -n '/^== amp ack task_dispatch-T-2026-044-$/{n;p}' <<< "$output")" "$D"
	# shard 012 of tasks/2026/
	assert_regex "$(sed -n '/^== amp show task_dispatch-T-2026-01234-$/{n;p}' <<< "$output")" \
		'^task_dispatch-T-2026-01234-[0-9]+$'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/zerr")" ""
}

@test "zsh: outside a repository _amp offers no ids and prints nothing" {
	cd "$BATS_TEST_TMPDIR"
	: > "$BATS_TEST_TMPDIR/zerr"
	run -0 complete_zsh "amp status " "amp ack task_result-T-2026-044-" "amp s"
	assert_equal "$(sed -n '/^== amp status $/{n;p}' <<< "$output")" ""
	assert_equal "$(sed -n '/^== amp ack task_result-T-2026-044-$/{n;p}' <<< "$output")" ""
	# the completion still works there
	assert_equal "$(sed -n '/^== amp s$/{n;p}' <<< "$output")" "schema send show status sync"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/zerr")" ""
}

@test "bash: every command of amp --help completes, and each completes every long option of its --help" {
	local cmd o n=0 missing=""
	for cmd in $(amp --help | awk '/^   [a-z]/ { print $1 }'); do
		n=$((n + 1))
		run -0 complete_bash "amp ${cmd:0:3}"
		[[ " $output " == *" $cmd "* ]] || missing="$missing cmd:$cmd"
		run -0 complete_bash "amp $cmd --"
		for o in $(amp "$cmd" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
			[[ " $output " == *" $o "* ]] || missing="$missing $cmd:$o"
		done
	done
	[ "$n" -ge 30 ]
	assert_equal "$missing" ""
}
