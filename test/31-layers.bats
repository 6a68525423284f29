#!/usr/bin/env bats
# Issue 31: lib/ is in one folder per layer (lib/LAYERS, bottom first), and
# share/check-layers holds it there: no call runs up the layers, no two
# files of a folder call each other round a loop, a folder is reached only
# through its public header, no file over 1,500 lines, no function over 150.
# The first test checks amp's own tree; the others show that the checker
# fails on each kind of problem, in a made-up tree compiled here.

bats_require_minimum_version 1.5.0

load helpers

CHECK="$AMP_SRC/share/check-layers"

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# A two-layer tree: lib/base/ below lib/top/.
make_tree() {
	mkdir -p src/lib/base src/lib/top build/lib/base build/lib/top
	printf '# bottom first\nbase\ntop\n' > src/lib/LAYERS
	cat > src/lib/base/base.h <<'C'
int low(int x);
C
	cat > src/lib/base/low.c <<'C'
#include "base.h"
int low(int x) { return x + 1; }
C
	cat > src/lib/top/top.h <<'C'
#include "base/base.h"
int high(int x);
C
	cat > src/lib/top/high.c <<'C'
#include "top.h"
int high(int x) { return low(x) * 2; }
C
}

compile_tree() {
	local c
	for c in src/lib/*/*.c; do
		c=${c#src/}
		mkdir -p "build/${c%/*}" && cc -Isrc/lib -c -o "build/${c%.c}.o" "src/$c" || return 1
	done
}

@test "amp's own lib/: every call between files goes down the layers, no loop, public headers only, no file over 1,500 lines, no function over 150" {
	run --separate-stderr "$CHECK" "${AMP_TEST_BUILD:-$AMP_SRC/build}" "$AMP_SRC"
	[ "$status" = 0 ] || fail "$output $stderr"
	[[ $output == "check-layers: "*" files in 11 folders, "*" calls between files, all downward, no loop; no file over 1500 lines, no function over 150" ]] || fail "$output"
}

@test "a tree that keeps its layers passes" {
	make_tree && compile_tree
	run --separate-stderr "$CHECK" build src
	assert_success
	assert_output "check-layers: 4 files in 2 folders, 1 calls between files, all downward, no loop; no file over 1500 lines, no function over 150"
}

@test "a call from a lower folder up into a higher one fails, naming the file, the folder and the symbol" {
	make_tree
	cat > src/lib/base/up.c <<'C'
int high(int x);
int climb(int x) { return high(x); }
C
	compile_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 1
	assert_output "check-layers: lib/base/up.c: calls up into top/ (lib/top/high.c): high"
}

@test "two files of one folder that call each other round a loop fail" {
	make_tree
	cat > src/lib/base/ping.c <<'C'
int pong(int x);
int ping(int x) { return x ? pong(x - 1) : 0; }
C
	cat > src/lib/base/pong.c <<'C'
int ping(int x);
int pong(int x) { return x ? ping(x - 1) : 1; }
C
	compile_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 1
	assert_output "check-layers: lib/base/ping.c: files call each other round a loop: lib/base/ping.c -> lib/base/pong.c (pong); lib/base/pong.c -> lib/base/ping.c (ping)"
}

@test "including a folder's private header, or a header of a folder above, fails" {
	make_tree
	echo 'int helper(void);' > src/lib/top/private.h
	sed -i '1i #include "top/private.h"' src/lib/base/low.c
	echo 'int helper(void);' > src/lib/top/private.h
	compile_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 1
	assert_line 'check-layers: lib/base/low.c: includes "top/private.h", not the public header "top/top.h"'
	assert_line 'check-layers: lib/base/low.c: includes "top/private.h" from a folder above its own'
}

@test "a source outside the listed folders fails" {
	make_tree
	mkdir -p src/lib/misc && echo 'int stray;' > src/lib/misc/stray.c
	compile_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 1
	assert_output "check-layers: lib/misc/stray.c: not in a folder listed in lib/LAYERS"
}

@test "a .c file over 1,500 lines and a function over 150 lines fail" {
	make_tree
	{
		echo 'int long_one(int x)'
		echo '{'
		for i in $(seq 149); do echo "	x += $i;"; done
		echo '	return x;'
		echo '}'
		for i in $(seq 1400); do echo "/* filler $i */"; done
	} > src/lib/top/long.c
	compile_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 1
	assert_line "check-layers: lib/top/long.c: 1553 lines, over 1500"
	assert_line "check-layers: lib/top/long.c:2: function long_one is 152 lines, over 150"
}

@test "without objects the checker says so and exits 2" {
	make_tree
	run --separate-stderr "$CHECK" build src
	assert_failure 2
	assert_equal "$stderr" "check-layers: no objects of lib/ under build (run make first)"
}
