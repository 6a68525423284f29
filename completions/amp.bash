# shellcheck shell=bash
# COMPREPLY=($(compgen ...)) is bash-completion's idiom: compgen prints one
# candidate a line, and the candidates (commands, roles, types, ids, names
# of amp-* programs) hold no blanks or glob characters.
# shellcheck disable=SC2207,SC2012
# bash completion for amp                                  -*- shell-script -*-
#
# Nothing here lists amp's options: they are read from `amp <command>
# --help` when first needed (and kept for the shell's life), so the
# completion says what the installed amp takes and cannot drift from it.
# A usage line's placeholders say what a value is: <role>, <msg_id>,
# <task_id>, <file>, <dir>, <remote>, <type> (the words of the usage's
# "types:" line), <name> ("names:"), a|b|c (those words).  Commands are
# those `amp --help` lists plus every amp-* on PATH, as git does.  Task
# ids and msg_ids come from the tree of the messages ref with `git
# ls-tree`, reading the year and shard trees only (a task's own directory
# only once a msg_id names its task), never a record.

# COMPREPLY from compgen "$@", one candidate a line (a file name may
# hold spaces).
_amp_reply() {
	mapfile -t COMPREPLY < <(compgen "$@")
}

# COMPREPLY from the lines of stdin that start with $1: compgen -W is
# slow on the 25,000 task ids of an SSOT of 100,000 messages.
_amp_reply_prefix() {
	mapfile -t COMPREPLY < <(p=$1 awk 'index($0, ENVIRON["p"]) == 1')
}

_amp_roles="admin coordinator executor reviewer system"

# The usage of `amp $1`, parsed into lines: "opt NAME KIND", "pos KIND",
# "word WORD", "types WORDS", "names WORDS".  KIND is "-" for a flag.
_amp_usage() {
	amp "$1" --help 2>/dev/null | awk '
	function kind(v) {
		gsub(/[][]|\.\.\.$/, "", v)
		if (v ~ /^</) { gsub(/[<>]/, "", v); sub(/\|.*/, "", v); return v }
		if (v ~ /^[a-z_]+(\|[a-z_]+)*$/) return "list:" v
		return ""
	}
	/^(usage|   or):/ {
		for (i = 1; i <= NF; i++) if ($i == "amp") break
		first = $(i + 2)
		if (first ~ /^\[?</) print "pos", kind(first)
		else if (first ~ /^[a-z]/) print "word", first
	}
	/^types:/ { list = "types" }
	/^names:/ { list = "names" }
	list != "" && /^(types:|names:|       )/ {
		for (i = ($1 ~ /:$/) ? 2 : 1; i <= NF; i++) if ($i ~ /^[a-z_]+,?$/) { sub(/,$/, "", $i); words[list] = words[list] " " $i }
		next
	}
	{ list = "" }
	/^(usage|   or|  )/ || /^ +[[<-]/ {
		for (i = 1; i <= NF; i++) {
			n = split($i, parts, "|")
			for (j = 1; j <= n; j++) {
				o = parts[j]; gsub(/^[[(]+|[])]+$|\.\.\.$/, "", o)
				sub(/\[?=.*$/, "", o) # --color[=<when>]: the option itself
				if (o !~ /^--?[a-z][a-z0-9-]*$/) continue
				v = (j == n && i < NF) ? $(i + 1) : ""
				k = (v ~ /^\[?</ || v ~ /^[a-z_]+(\|[a-z_]+)+\]?$/ || v ~ /^[a-z]+\]?$/ && v != "amp") ? kind(v) : "-"
				if (k == "") k = "-"
				print "opt", o, k
			}
		}
	}
	END { for (l in words) print l words[l] }' | sort -u
}

# Cached per command: the parse costs a process.
declare -gA _amp_usage_cache 2>/dev/null
_amp_usage_of() {
	if [ -z "${_amp_usage_cache[$1]+set}" ]; then
		_amp_usage_cache[$1]=$(_amp_usage "$1")
	fi
	printf '%s\n' "${_amp_usage_cache[$1]}"
}

_amp_commands() {
	{
		amp --help 2>/dev/null | awk '/^   [a-z]/ { print $1 }'
		compgen -c -- amp- | sed -n 's/^amp-//p'
		echo help
	} | sort -u
}

# git, in the repository of --repo when the line gives one.
_amp_git() {
	local i
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		if [ "${COMP_WORDS[i]}" = --repo ]; then
			git -C "${COMP_WORDS[i + 1]}" "$@" 2>/dev/null
			return
		fi
	done
	git "$@" 2>/dev/null
}

_amp_ref() {
	_amp_git config amp.ref || echo refs/amp/messages
}

# Task ids: tasks/<YYYY>/<S>/<task_id>/, listed level by level so that no
# task directory is read.
_amp_tasks() {
	local ref years shards
	ref=$(_amp_ref)
	years=$(_amp_git ls-tree -d --name-only "$ref" tasks/ | sed 's#$#/#')
	[ -n "$years" ] || return 0
	# shellcheck disable=SC2086 # one path argument per line
	shards=$(_amp_git ls-tree -d --name-only "$ref" $years | sed 's#$#/#')
	[ -n "$shards" ] || return 0
	# layout 2 (amp-protocol(7)): tasks/<YYYY>/<A>/<B>/<task_id>/
	if _amp_git cat-file -e "$ref:amp-layout" 2> /dev/null; then
		# shellcheck disable=SC2086
		shards=$(_amp_git ls-tree -d --name-only "$ref" $shards | sed 's#$#/#')
		[ -n "$shards" ] || return 0
	fi
	# shellcheck disable=SC2086
	_amp_git ls-tree -d --name-only "$ref" $shards | sed 's#.*/##'
}

# msg_ids: once the word names a task, that task's messages; before,
# "<type>-<task_id>-" for each task, to be completed further.
_amp_msg_ids() {
	local cur=$1 task dir ref types
	ref=$(_amp_ref)
	task=$(printf '%s\n' "$cur" | grep -oE 'T-[0-9]{4}-[0-9]{3,9}' | head -n 1)
	if [ -n "$task" ]; then
		# tasks/<YYYY>/<S>/<task>/, S the number without its last two
		# digits; layout 2: tasks/<YYYY>/<A>/<B>/<task>/<s1>/<s2>/, A/B = S
		dir=$(printf '%s\n' "$task" | awk -F- '{ s = substr($3, 1, length($3) - 2)
			a = length(s) <= 2 ? "0" : substr(s, 1, length(s) - 2); b = length(s) <= 2 ? s : substr(s, length(s) - 1)
			print "tasks/" $2 "/" s "/" $0 "/"; print "tasks/" $2 "/" a "/" b "/" $0 "/" }')
		# shellcheck disable=SC2086 # the two places, one a line
		_amp_git ls-tree -r --name-only "$ref" $dir | sed -n 's#.*/[0-9]\{6\}\.msg\.\(.*\)\.json$#\1#p'
		return
	fi
	types=$(_amp_usage_of send | sed -n 's/^types //p')
	_amp_tasks | awk -v types="$types" '{ n = split(types, t, " "); for (i = 1; i <= n; i++) print t[i] "-" $0 "-" }'
}

# Sets COMPREPLY to the values of KIND matching $cur.
_amp_values() {
	local kind=$1 cur=$2 cmd=$3 words
	case $kind in
	role) words=$_amp_roles ;;
	msg_id)
		_amp_reply_prefix "$cur" < <(_amp_msg_ids "$cur")
		# a "<type>-<task>-" stem is not a whole msg_id yet
		if [ ${#COMPREPLY[@]} -gt 0 ] && [[ ${COMPREPLY[0]} == *- ]]; then
			compopt -o nospace 2>/dev/null || true
		fi
		return ;;
	task_id) _amp_reply_prefix "$cur" < <(_amp_tasks); return ;;
	file | pubkey | schema.json) _amp_reply -f -- "$cur"; return ;;
	dir) _amp_reply -d -- "$cur"; return ;;
	remote) words=$(_amp_git remote) ;;
	type | escalation_type)
		words=$(_amp_usage_of "$cmd" | sed -n 's/^types //p')
		[ -n "$words" ] || words=$(_amp_usage_of send | sed -n 's/^types //p') ;;
	name) words=$(_amp_usage_of "$cmd" | sed -n 's/^names //p') ;;
	list:*) words=${kind#list:}; words=${words//|/ } ;;
	*) return ;;
	esac
	_amp_reply -W "$words" -- "$cur"
}

_amp() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmd=${COMP_WORDS[1]} usage kind i npos=0
	COMPREPLY=()

	if [ "$COMP_CWORD" -eq 1 ]; then
		_amp_reply -W "$(_amp_commands) --help --version --exec-path" -- "$cur"
		return
	fi
	if [ "$cmd" = help ]; then
		[ "$COMP_CWORD" -eq 2 ] && _amp_reply -W "$(_amp_commands)" -- "$cur"
		return
	fi
	usage=$(_amp_usage_of "$cmd")
	# the value of an option
	if [[ $prev == -* ]]; then
		kind=$(printf '%s\n' "$usage" | awk -v o="$prev" '$1 == "opt" && $2 == o { print $3; exit }')
		# --task names a task whatever its placeholder says
		[ "$prev" = --task ] && kind=task_id
		if [ -n "$kind" ] && [ "$kind" != - ]; then
			_amp_values "$kind" "$cur" "$cmd"
			return
		fi
	fi
	if [[ $cur == -* ]]; then
		_amp_reply -W "$(printf '%s\n' "$usage" | awk '$1 == "opt" { print $2 }') --help" -- "$cur"
		return
	fi
	# the first operand: what the usage lines put right after the command
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -* ]]; then
			kind=$(printf '%s\n' "$usage" | awk -v o="${COMP_WORDS[i]}" '$1 == "opt" && $2 == o { print $3; exit }')
			[ -n "$kind" ] && [ "$kind" != - ] && i=$((i + 1))
		else
			npos=$((npos + 1))
		fi
	done
	[ "$npos" -eq 0 ] || return 0
	local words kinds found=()
	words=$(printf '%s\n' "$usage" | awk '$1 == "word" { print $2 }')
	kinds=$(printf '%s\n' "$usage" | awk '$1 == "pos" { print $2 }')
	# one kind of operand: its values as they are (copying 25,000 task
	# ids to merge them would cost a tenth of a second)
	if [ -z "$words" ] && [[ $kinds != *[[:space:]]* ]]; then
		[ -z "$kinds" ] || _amp_values "$kinds" "$cur" "$cmd"
		return
	fi
	_amp_reply -W "$words" -- "$cur"
	found=("${COMPREPLY[@]}")
	for kind in $kinds; do
		_amp_values "$kind" "$cur" "$cmd"
		found+=("${COMPREPLY[@]}")
	done
	COMPREPLY=("${found[@]}")
}
complete -F _amp amp
