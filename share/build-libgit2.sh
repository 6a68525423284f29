#!/bin/sh
# share/build-libgit2.sh DIR: a static libgit2 without its network stack,
# for `make` (LIBGIT2=static, the default).  amp never lets libgit2 talk to
# a remote -- transport is the user's `git` -- so the SSH, HTTPS/TLS, GSSAPI
# and NTLM code of Debian's libgit2, and the 19 shared libraries it loads at
# every start, are dead weight in each amp process.
#
# Builds Debian's own source of the libgit2-dev version installed (the one
# the system build uses), fetched with `apt-get source` through a private
# apt state in DIR/apt (deb-src twins of the system's deb entries, so
# /etc/apt is never touched), with cmake, into DIR/install.  Only that
# exact revision: an older one would lack the security fixes the installed
# one has.  With LIBGIT2_REVISION=any (make LIBGIT2_REVISION=any) the newest
# revision of the same upstream version Debian serves is built instead, with
# a warning naming both.
#
# DIR/status says what happened: "static <source version> for <installed
# version>" or "system: <reason>".  A later run with the same installed
# version returns at once (the cache); `rm -rf DIR` retries a fallback.
# Never fails: on any error amp links the system libgit2 instead.
set -u
dir=$1
mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || exit 0
installed=$(dpkg-query -W -f='${Version}' libgit2-dev 2>/dev/null) || installed=
# The cache holds for one installed version and one LIBGIT2_REVISION.
for_what="$installed (revision ${LIBGIT2_REVISION:-exact})"
if [ -f "$dir/status" ] && [ -n "$installed" ]; then
	case $(cat "$dir/status") in *" for $for_what") exit 0 ;; esac
fi

log=$dir/build.log
fallback() {
	rm -rf "$dir/install"
	echo "system: $1 for $for_what" > "$dir/status"
	echo "make: libgit2: linking the system libgit2 ($1; see $log; rm -rf $dir to retry)" >&2
	exit 0
}
[ -n "$installed" ] || fallback "libgit2-dev is not installed"
for tool in apt-get dpkg-source cmake; do
	command -v $tool > /dev/null || fallback "no $tool"
done
echo "make: libgit2: building a static libgit2 $installed without network support (once; log in $log)" >&2
start=$(date +%s)
rm -rf "$dir/apt" "$dir/src" "$dir/cmake" "$dir/install" "$dir/status"
: > "$log"

# The private apt state: deb-src twins of every enabled deb entry.
apt=$dir/apt
mkdir -p "$apt/etc/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/src"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
done > "$apt/etc/sources.list"
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$apt/etc/sources.list.d/${f##*/}"
done
aptq() {
	"$@" -o Dir::Etc::SourceList="$apt/etc/sources.list" \
		-o Dir::Etc::SourceParts="$apt/etc/sources.list.d" \
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root
}
aptq apt-get update -q >> "$log" 2>&1 || echo "(apt-get update reported errors)" >> "$log"

# The installed revision first, then the same upstream version's others,
# newest first.
upstream=${installed%-*}
versions=$(aptq apt-cache showsrc libgit2 2>> "$log" | sed -n 's/^Version: //p' | sort -u |
	while read -r v; do
		[ "$v" != "$installed" ] && [ "${v%-*}" = "$upstream" ] && echo "$v"
	done | sort -r -V)
built=
[ "${LIBGIT2_REVISION:-exact}" = any ] || versions=
for v in "$installed" $versions; do
	if (cd "$dir/src" && aptq apt-get source -q "libgit2=$v") >> "$log" 2>&1; then
		built=$v
		break
	fi
	rm -rf "$dir/src" && mkdir -p "$dir/src"
done
[ -n "$built" ] || fallback "Debian serves no source of libgit2 $installed (an older revision would lack its fixes; make LIBGIT2_REVISION=any builds one anyway)"
[ "$built" = "$installed" ] ||
	echo "make: libgit2: WARNING: Debian serves no source of $installed; building $built (see debian/changelog of each for the fixes it lacks)" >&2
src=$(find "$dir/src" -mindepth 1 -maxdepth 1 -type d | head -1)

# No transport but local and the smart protocol's HTTP framing (which 1.5
# always compiles; http-parser links statically); regcomp from libc instead
# of pcre2; SHA-1 with collision detection, as git; no threads, since amp is
# single-threaded.
cmake -S "$src" -B "$dir/cmake" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_INSTALL_PREFIX="$dir/install" -DCMAKE_INSTALL_LIBDIR=lib \
	-DBUILD_SHARED_LIBS=OFF -DBUILD_TESTS=OFF -DBUILD_CLI=OFF \
	-DBUILD_EXAMPLES=OFF -DBUILD_FUZZERS=OFF -DENABLE_REPRODUCIBLE_BUILDS=ON \
	-DUSE_SSH=OFF -DUSE_HTTPS=OFF -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF \
	-DUSE_HTTP_PARSER=system -DREGEX_BACKEND=regcomp -DUSE_THREADS=OFF \
	-DUSE_SHA1=CollisionDetection -DUSE_SHA256=Builtin -DUSE_BUNDLED_ZLIB=OFF \
	>> "$log" 2>&1 || fallback "cmake could not configure libgit2"
cmake --build "$dir/cmake" -j "$(nproc 2>/dev/null || echo 2)" >> "$log" 2>&1 ||
	fallback "libgit2 did not build"
cmake --install "$dir/cmake" >> "$log" 2>&1 || fallback "libgit2 did not install"
[ -f "$dir/install/lib/libgit2.a" ] || fallback "no libgit2.a"
rm -rf "$dir/cmake" "$dir/apt" "$dir/src"
echo "static $built for $for_what" > "$dir/status"
echo "make: libgit2: static $built built in $(($(date +%s) - start)) s" >&2
