#!/usr/bin/env bash
# Benchmark of strict mode's signatures (never part of the tests): CPU
# (user + system, the command and every process it waited for, from
# wait4's rusage) of, with Ed25519 keys,
#   - a strict `amp send` (its record signed, its commit signed),
#   - the hub's hook on the push of that one message to a strict hub
#     (verifying the record signature and the commit signature): the
#     push's CPU less that of the same push to a hub without the hook,
#   - a strict `amp import` of 1,000 records (each signed).
# Medians of AMP_BENCH_SSHSIG_ROUNDS sends and pushes.  With
# AMP_BENCH_BASE_BIN (another build's bin/), its row first, side by side in
# one run: the figures of share/doc/performance.md "Signatures in process".
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${AMP_BENCH_SSHSIG_ROUNDS:-15}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-sshsig.XXXXXX")
trap 'rm -rf "$work"' EXIT

# cpu CMD...: CMD's CPU in ms (stdout discarded).
cpu() {
	python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
if os.waitstatus_to_exitcode(status):
    sys.exit("bench-sshsig: %s failed" % sys.argv[1])
print("%.1f" % ((ru.ru_utime + ru.ru_stime) * 1000))' "$@"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# row NAME BINDIR: one row of the table, in a directory of its own.
row() (
	local w=$work/$1 K sends="" hooks="" i t a b
	mkdir -p "$w/home" "$w/keys"
	cd "$w"
	export PATH=$2:$PATH HOME=$w/home
	unset AMP_NOW
	git config --global user.name bench
	git config --global user.email bench@example.invalid
	K=$w/keys
	for r in admin coordinator system; do
		ssh-keygen -q -t ed25519 -N '' -f "$K/$r"
		echo "$r $(cut -d' ' -f1,2 "$K/$r.pub")" >> "$K/signers"
	done
	ssh-keygen -q -t ed25519 -N '' -f "$K/all"
	echo "admin,coordinator,executor,reviewer,system $(cut -d' ' -f1,2 "$K/all.pub")" >> "$K/signers"
	git init -q repo && git -C repo commit -q --allow-empty -m x
	strict() {
		git -C "$1" config amp.requireSigned true
		git -C "$1" config amp.allowedSigners "$K/signers"
		git -C "$1" config amp.signingKey "$K/$2"
	}
	git init -q --bare hub.git && strict hub.git system
	amp hook install --server --repo hub.git > /dev/null
	git clone -q hub.git adm 2> /dev/null && strict adm admin
	(cd adm && amp init > /dev/null && amp sync > /dev/null)
	git clone -q hub.git co 2> /dev/null && strict co coordinator
	(cd co && amp sync > /dev/null)
	git init -q --bare plain.git
	git -C co remote add plain ../plain.git
	git -C co push -q plain refs/amp/messages
	for i in $(seq 1 "$ROUNDS"); do
		t=$(printf 'T-2026-%03d' "$i")
		printf '{"description": "bench", "repo": "%s", "branch": "feature/b", "subtasks": [{"subtask_id": "%s-S1", "description": "x", "estimated_lines": 1}], "acceptance_criteria": ["ok"], "risk_level": "low"}\n' \
			"$w/repo" "$t" > d.json
		sends="$sends $(cd co && cpu amp send task_dispatch --task "$t" --from coordinator --to executor --payload ../d.json)"
		a=$(cd co && cpu git push -q origin refs/amp/messages)
		b=$(cd co && cpu git push -q plain refs/amp/messages)
		hooks="$hooks $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a - b }')"
	done
	git init -q imp && strict imp all
	(cd imp && amp init > /dev/null)
	python3 "$src/share/gen-traffic.py" 1000 log.jsonl /dev/null 0 > /dev/null
	sed -i "s#/srv/bench#$w/repo#g" log.jsonl
	printf '| %s | %s ms | %s ms | %s ms |\n' "$1" "$(echo "$sends" | median)" \
		"$(echo "$hooks" | median)" "$(cd imp && cpu amp import ../log.jsonl)"
)

echo "| build | strict amp send | the hub's hook, one message | strict amp import, 1,000 records |"
echo "| --- | --- | --- | --- |"
[ -z "${AMP_BENCH_BASE_BIN:-}" ] || row base "$AMP_BENCH_BASE_BIN"
row this "${AMP_BIN:-$src/bin}"
