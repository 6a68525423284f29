#!/bin/sh
# share/git2-link.sh DIR MODE CC: prints how amp links libgit2, one word
# for the mode then the linker flags, and caches the answer in DIR/link.
#
#   lean     DIR/install/lib/libgit2.a, the libgit2 without a network stack
#            that share/build-libgit2.sh built (MODE static);
#   archive  Debian's own libgit2.a from libgit2-dev -- the same revision,
#            and so the same security fixes, as the shared library -- with
#            the static archives of its dependencies where Debian ships
#            them (MODE static, when the lean build was not possible, or
#            MODE archive);
#   shared   the system's shared libgit2 (MODE system, or when neither
#            archive links).
#
# Why the archive: the shared libgit2 loads 19 libraries at every start of
# every amp process, and their relocations and constructors cost ~2.5 ms of
# a ~13 ms send.  Linked from archives, only the code amp reaches is in the
# binary, resolved at link time; the Kerberos libraries Debian ships only
# shared (libgit2's HTTP Negotiate auth refers to them) still load.
#
# Each candidate is checked by linking a program that calls
# git_libgit2_init() and git_repository_open(); the first that links wins.
# The cache holds for one installed libgit2-dev version, one MODE and the
# presence of the lean build; `rm DIR/link` asks again.
set -u
dir=$1 mode=$2 cc=${3:-cc}
mkdir -p "$dir" || exit 1
installed=$(dpkg-query -W -f='${Version}' libgit2-dev 2>/dev/null) || installed=unknown
lean=$dir/install/lib/libgit2.a
key="$installed $mode $([ -f "$lean" ] && echo lean)"
if [ -f "$dir/link" ] && [ "$(sed -n 1p "$dir/link")" = "$key" ]; then
	sed -n 2p "$dir/link"
	exit 0
fi

libdir=$(pkg-config --variable=libdir libgit2 2>/dev/null)
# -lX as the static archive libX.a when Debian ships one, else as it is
# (-ldl, -lrt, -pthread are glibc's).
archives() {
	for flag in "$@"; do
		case $flag in
		-lc|-ldl|-lm|-lrt|-lpthread) printf ' %s' "$flag" ;;
		-l*) name=${flag#-l}
		     if [ -n "$libdir" ] && [ -f "$libdir/lib$name.a" ]; then
			     printf ' -l:lib%s.a' "$name"
		     else
			     printf ' %s' "$flag"
		     fi ;;
		*) printf ' %s' "$flag" ;;
		esac
	done
}

probe=$(mktemp -d "${TMPDIR:-/tmp}/amp-git2-link.XXXXXX") || exit 1
trap 'rm -rf "$probe"' EXIT
cat > "$probe/p.c" <<'C'
#include <git2.h>
int main(void)
{
	git_repository *repo = NULL;

	git_libgit2_init();
	git_repository_open(&repo, ".");
	git_repository_free(repo);
	return git_libgit2_shutdown() < 0;
}
C
links() { # FLAGS...: 1 when the probe links and runs with them
	# shellcheck disable=SC2086 # $cflags is words
	"$cc" -o "$probe/p" "$probe/p.c" $cflags "$@" > "$probe/log" 2>&1 && "$probe/p"
}

answer=
if [ "$mode" = static ] && [ -f "$lean" ]; then
	cflags="-I$dir/install/include"
	flags="$lean -l:libhttp_parser.a -l:libz.a"
	# shellcheck disable=SC2086 # $flags is words
	links $flags && answer="lean $flags"
fi
if [ -z "$answer" ] && { [ "$mode" = static ] || [ "$mode" = archive ]; } && [ -n "$libdir" ] && [ -f "$libdir/libgit2.a" ]; then
	cflags=$(pkg-config --cflags libgit2)
	# libssh2's own dependencies (OpenSSL) and the GSSAPI that libgit2's
	# Negotiate auth needs are missing from libgit2.pc's static list.
	# shellcheck disable=SC2046
	flags="$(archives $(pkg-config --static --libs libgit2 libssh2 2>/dev/null))"
	flags="${flags# } $(pkg-config --libs krb5-gssapi 2>/dev/null)"
	# shellcheck disable=SC2086 # $flags is words
	links $flags && answer="archive $flags"
fi
if [ -z "$answer" ]; then
	cflags=$(pkg-config --cflags libgit2)
	answer="shared $(pkg-config --libs libgit2)"
fi
# Written whole then renamed: make -j runs this from several recipes.
printf '%s\n%s\n' "$key" "$answer" > "$dir/link.$$" && mv "$dir/link.$$" "$dir/link"
printf '%s\n' "$answer"
