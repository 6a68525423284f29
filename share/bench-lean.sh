#!/usr/bin/env bash
# Benchmark of the lean binary (never part of the tests): the same source
# linked three ways (share/git2-link.sh), side by side in one run:
#   lean     the static libgit2 without network stack built from Debian's
#            source (make LIBGIT2=static; the newest revision served, see
#            below);
#   archive  Debian's own static libgit2.a (make LIBGIT2=archive: what the
#            default build links when the lean one cannot be built);
#   system   Debian's shared libgit2 (make LIBGIT2=system);
# measured:
#   1. shared libraries loaded (ldd bin/amp-send);
#   2. `amp send task_dispatch` into a fresh task and `amp status TASK`,
#      whole process through the driver: median and p90 of ROUNDS runs
#      each (AMP_BENCH_LEAN_ROUNDS, default 200), the builds alternating
#      run by run so that all see the same machine;
#   3. the syscalls of one send and one status (strace -c -f), in all and
#      the filesystem ones (open/stat/access/read/mmap families).
# Each build goes to build/bench-lean/<variant>/ (kept: a second run only
# relinks what changed).
set -eu -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${AMP_BENCH_LEAN_ROUNDS:-200}
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-bench-lean.XXXXXX")
trap 'rm -rf "$work"' EXIT
variants="lean archive system"

# The bench measures what the lean build buys, so it takes the newest
# revision Debian serves when the installed one's source is gone (make's
# default builds only the exact one): build/bench-lean/libgit2, apart.
declare -A mode=([lean]=static [archive]=archive [system]=system)
for v in $variants; do
	b=build/bench-lean/$v
	make -s -C "$src" LIBGIT2="${mode[$v]}" LIBGIT2_REVISION=any LIBGIT2_DIR=build/bench-lean/libgit2 \
		BUILD="$b" BIN="$b/bin" \
		"$b/bin/amp" "$b/bin/amp-init" "$b/bin/amp-send" "$b/bin/amp-status" > "$work/make.$v" 2>&1 ||
		{ cat "$work/make.$v" >&2; exit 1; }
	# the schemas where bin/amp finds them, ../schemas
	ln -sfn "$src/schemas" "$src/$b/schemas"
done
libgit2_status=$(cat "$src/build/bench-lean/libgit2/status" 2>/dev/null || echo "system: not built")
case $libgit2_status in
static*) ;;
*) echo "bench-lean: the static libgit2 could not be built ($libgit2_status): both builds are the system one" ;;
esac

cat > "$work/dispatch.json" <<'JSON'
{"description": "bench", "repo": "/srv/bench", "branch": "feature/bench",
 "subtasks": [{"subtask_id": "S1", "description": "one", "estimated_lines": 1}],
 "acceptance_criteria": ["it works"], "risk_level": "low"}
JSON
for v in $variants; do
	git init -q "$work/$v" && (cd "$work/$v" && "$src/build/bench-lean/$v/bin/amp" init > /dev/null &&
		git config amp.checkRepo false)
done

# run VARIANT CMD...: one whole-process run in VARIANT's repository, its
# wall time in microseconds appended to $work/t.<VARIANT>.<CMD>.
run() {
	local v=$1 name=$2 a b
	shift 2
	a=$EPOCHREALTIME
	(cd "$work/$v" && "$src/build/bench-lean/$v/bin/amp" "$@" > /dev/null)
	b=$EPOCHREALTIME
	echo $(( ${b/./} - ${a/./} )) >> "$work/t.$v.$name"
}
for ((i = 0; i < ROUNDS; i++)); do
	task=$(printf 'T-2026-%04d' "$i")
	for v in $variants; do
		run "$v" send send task_dispatch --task "$task" --from coordinator \
			--payload "$work/dispatch.json"
		run "$v" status status "$task"
	done
done

# stat FILE: "median p90" in ms.
stat() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		printf "%.2f %.2f\n", v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9)] / 1000 }'
}
# syscalls VARIANT CMD...: "all filesystem" syscall counts of one run.
syscalls() {
	local v=$1
	shift
	(cd "$work/$v" && strace -f -c -o "$work/strace" "$src/build/bench-lean/$v/bin/amp" "$@" > /dev/null)
	awk '$NF ~ /^(open|openat|stat|lstat|fstat|newfstatat|statx|access|faccessat|faccessat2|read|pread64|mmap|readlink|getdents64)$/ { fs += $4 }
		$NF == "total" { all = $4 }
		END { printf "%d %d\n", all, fs }' "$work/strace"
}

printf '\n## Lean binary: libgit2 without network stack, Debian'"'"'s libgit2.a, the shared libgit2\n\n'
echo "libgit2 source build: $libgit2_status; $ROUNDS rounds, builds alternating"
echo
# ratio A B: A/B to two places
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
echo "| figure | lean | archive | system | lean/system | archive/system |"
echo "|---|---|---|---|---|---|"
libs() { ldd "$src/build/bench-lean/$1/bin/amp-send" | grep -vc 'linux-vdso'; }
echo "| shared objects loaded by amp-send (ldd) | $(libs lean) | $(libs archive) | $(libs system) | | |"
declare -A med p90
for name in send status; do
	for v in $variants; do
		read -r "med[$v]" "p90[$v]" < <(stat "$work/t.$v.$name")
	done
	label="amp send (fresh task)"
	[ $name = status ] && label="amp status TASK"
	echo "| $label, median ms | ${med[lean]} | ${med[archive]} | ${med[system]} | $(ratio "${med[lean]}" "${med[system]}") | $(ratio "${med[archive]}" "${med[system]}") |"
	echo "| $label, p90 ms | ${p90[lean]} | ${p90[archive]} | ${p90[system]} | $(ratio "${p90[lean]}" "${p90[system]}") | $(ratio "${p90[archive]}" "${p90[system]}") |"
done
if command -v strace > /dev/null; then
	declare -A calls # <variant>.all, <variant>.fs: the system calls of one run
	for name in send status; do
		for v in $variants; do
			if [ $name = send ]; then
				read -r all fs < <(syscalls "$v" send task_dispatch --task T-2027-0001 \
					--from coordinator --payload "$work/dispatch.json")
			else
				read -r all fs < <(syscalls "$v" status T-2027-0001)
			fi
			calls[$v.all]=$all calls[$v.fs]=$fs
		done
		echo "| syscalls of one $name (strace -c -f), all | ${calls[lean.all]} | ${calls[archive.all]} | ${calls[system.all]} | $(ratio "${calls[lean.all]}" "${calls[system.all]}") | $(ratio "${calls[archive.all]}" "${calls[system.all]}") |"
		echo "| syscalls of one $name, filesystem | ${calls[lean.fs]} | ${calls[archive.fs]} | ${calls[system.fs]} | $(ratio "${calls[lean.fs]}" "${calls[system.fs]}") | $(ratio "${calls[archive.fs]}" "${calls[system.fs]}") |"
	done
else
	echo "(no strace: apt-get install strace for the syscall counts)"
fi
