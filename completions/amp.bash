# shellcheck shell=bash
# COMPREPLY=($(compgen ...)) is bash-completion's idiom: compgen prints one
# candidate a line, and the candidates (commands, roles, types, ids, names
# of amp-* programs) hold no blanks or glob characters.
# shellcheck disable=SC2207,SC2012
# bash completion for amp                                  -*- shell-script -*-
# Completes commands (amp's own and any amp-* on PATH), message types,
# roles, flags, and task ids / msg_ids from the SSOT of the current repo.

_amp_commands() {
	{
		printf '%s\n' validate init send ack status errors verdict escalate resume approve abort heartbeat watch inbox wait show log sync hook fsck import help
		compgen -c -- amp- | sed -n 's/^amp-//p'
		ls "$(amp --exec-path 2>/dev/null)" 2>/dev/null | sed -n 's/^amp-//p'
	} | sort -u
}

_amp_ref() {
	git config amp.ref 2>/dev/null || echo refs/amp/messages
}

_amp_tasks() {
	git ls-tree -r -d --name-only "$(_amp_ref)" tasks/ 2>/dev/null | sed -n 's#^tasks/[^/]*/[^/]*/##p'
}

_amp_msg_ids() {
	git ls-tree -r --name-only "$(_amp_ref)" tasks/ 2>/dev/null |
		sed -n 's#.*/[0-9]\{6\}\.msg\.\(.*\)\.json$#\1#p'
}

_amp() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]}
	local roles="admin coordinator executor reviewer system"
	local types="task_dispatch task_result review_request review_verdict escalation"

	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$(_amp_commands) --help --version --exec-path" -- "$cur"))
		return
	fi
	case $prev in
	--from | --to | --exec-for) COMPREPLY=($(compgen -W "$roles" -- "$cur")); return ;;
	--payload | --envelope | --schema | --ref) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--repo) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--task) COMPREPLY=($(compgen -W "$(_amp_tasks)" -- "$cur")); return ;;
	--context-ref | --affected) COMPREPLY=($(compgen -W "$(_amp_msg_ids)" -- "$cur")); return ;;
	--decision) COMPREPLY=($(compgen -W "approved approved_with_fix rejected" -- "$cur")); return ;;
	--severity) COMPREPLY=($(compgen -W "critical warning info" -- "$cur")); return ;;
	--type) COMPREPLY=($(compgen -W "hallucination_lock ack_timeout branch_violation ci_failure conflict heartbeat_timeout permission_denied unknown" -- "$cur")); return ;;
	esac
	case $cmd in
	send)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--task --from --to --payload --context-ref --ack-timeout --no-ack --envelope --idempotency-key --sync --no-sync --json --repo --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$types" -- "$cur"))
		fi ;;
	ack)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--from --sync --no-sync --json --repo --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_amp_msg_ids)" -- "$cur"))
		fi ;;
	status | verdict | escalate | resume | approve | abort | heartbeat)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --repo --help --decision --confidence --payload --context-ref --type --severity --description --from --affected --suggest --reason --note --idempotency-key --sync --no-sync" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_amp_tasks)" -- "$cur"))
		fi ;;
	validate) COMPREPLY=($(compgen -f -W "--json --schema --ref --help" -- "$cur")) ;;
	errors) COMPREPLY=($(compgen -W "--json --limit --raw --repo --help" -- "$cur")) ;;
	watch) COMPREPLY=($(compgen -W "--once --interval --full --json --exec --exec-for --no-exec --sync --no-sync --repo --help" -- "$cur")) ;;
	inbox | wait)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--task --all --timeout --sync --no-sync --json --repo --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "admin coordinator executor reviewer" -- "$cur"))
		fi ;;
	show)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--context --json --repo --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_amp_msg_ids)" -- "$cur"))
		fi ;;
	log) COMPREPLY=($(compgen -W "--task --type --from --to --since --until --grep -n --json --repo --help" -- "$cur")) ;;
	init) COMPREPLY=($(compgen -W "--repo --help" -- "$cur")) ;;
	fsck) COMPREPLY=($(compgen -W "--json --repo --help" -- "$cur")) ;;
	import) COMPREPLY=($(compgen -f -W "- --json --repo --help" -- "$cur")) ;;
	sync)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --repo --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(git remote 2>/dev/null)" -- "$cur"))
		fi ;;
	hook)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "install pre-receive pre-push pre-commit pre-merge-commit work-pre-push" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "--server --work --repo --help" -- "$cur"))
		fi ;;
	help) COMPREPLY=($(compgen -W "$(_amp_commands)" -- "$cur")) ;;
	esac
}
complete -F _amp amp
