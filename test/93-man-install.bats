#!/usr/bin/env bats
# Man pages, amp help, make install/uninstall/dist, the configuration
# table's bad values, and shellcheck over every shell script of the tree.

load helpers
load conversation
load enforcer

BUILD_DIR=${AMP_TEST_BUILD:-$AMP_SRC/build}

# The commands of cmd/amp.c's commands[], read from the source.
commands() {
	sed -n '/^} commands\[\] = {/,/^};/p;/^static const struct {/,/^} commands/p' "$AMP_SRC/cmd/amp.c" |
		sed -n 's/^[[:space:]]*{ "\([a-z0-9-]*\)", ".*/\1/p'
}

# The OPTIONS section of a scdoc source.
options_section() {
	sed -n '/^# OPTIONS/,/^# /p' "$1"
}

@test "every command of commands[] has a page, and every long option of its --help is in the page's OPTIONS" {
	local cmd page opt n=0 missing=""
	for cmd in $(commands); do
		n=$((n + 1))
		page=$AMP_SRC/share/man/amp-$cmd.1.scd
		if [ ! -f "$page" ]; then
			missing="$missing amp-$cmd.1.scd"
			continue
		fi
		run amp "$cmd" --help
		assert_success
		for opt in $(grep -o -- '--[a-z][a-z0-9-]*' <<< "$output" | sort -u); do
			[ "$opt" = --help ] && continue
			options_section "$page" | grep -qF -- "*$opt*" || missing="$missing $cmd:$opt"
		done
		# every page has the sections of share/man's convention, in order
		assert_equal "$(grep '^# ' "$page" | grep -v PAYLOAD | tr -d '\n')" \
			"# NAME# SYNOPSIS# DESCRIPTION# OPTIONS# EXIT STATUS# ENVIRONMENT# CONFIGURATION# EXAMPLES# SEE ALSO"
	done
	[ "$n" -ge 20 ]
	# amp(1) lists every command
	for cmd in $(commands); do
		grep -qF "*amp-$cmd*(1)" "$AMP_SRC/share/man/amp.1.scd" || missing="$missing amp.1:$cmd"
	done
	assert_equal "$missing" ""
	assert_file_exist "$AMP_SRC/share/man/amp.1.scd"
	assert_file_exist "$AMP_SRC/share/man/amp-config.7.scd"
}

@test "the page test catches a missing option: it would fail on a page without --no-ack" {
	sed '/^\*--no-ack\*/,/^$/d' "$AMP_SRC/share/man/amp-send.1.scd" > "$BATS_TEST_TMPDIR/send.scd"
	run options_section "$BATS_TEST_TMPDIR/send.scd"
	refute_output --partial '*--no-ack*'
	run options_section "$AMP_SRC/share/man/amp-send.1.scd"
	assert_output --partial '*--no-ack*'
}

@test "make man builds every page with scdoc, and man renders each" {
	local out=$BATS_TEST_TMPDIR/b
	run make -s -C "$AMP_SRC" BUILD="$out" man
	assert_success
	run ls "$out/man"
	assert_line amp.1
	assert_line amp-send.1
	assert_line amp-config.7
	assert_equal "$(ls "$out/man" | wc -l)" "$(ls "$AMP_SRC"/share/man/*.scd | wc -l)"
	for f in "$out"/man/*; do
		run env MANWIDTH=80 man -l "$f"
		assert_success
		assert_output --partial NAME
		assert_output --partial EXAMPLES
		[[ $f == *.7 ]] || assert_output --partial "EXIT STATUS"
	done
	run env MANWIDTH=80 man -l "$out/man/amp-config.7"
	assert_output --partial "amp.heartbeatTimeout"
	assert_output --partial "1..2592000"
}

@test "amp help CMD shows the page: man's own first, else the built one with man -l, else exit 4" {
	export MANPAGER=cat MANWIDTH=80
	# no page on the MANPATH: the one built next to amp
	mkdir -p "$BATS_TEST_TMPDIR/mp/man1"
	# (make all built them, scdoc being one of make deps' packages)
	# (installed: <prefix>/share/man/man1, next to <prefix>/bin)
	[ -f "$AMP_BIN/../build/man/amp-send.1" ] || [ -f "$AMP_BIN/../man/amp-send.1" ] ||
		[ -f "$AMP_BIN/../share/man/man1/amp-send.1" ] ||
		fail "no page built or installed next to $AMP_BIN: make man"
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help send
	assert_success
	assert_output --partial "amp-send - build, validate and commit a message to the SSOT"
	assert_output --partial "--idempotency-key"
	refute_output --partial "usage: amp send"
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help config
	assert_success
	assert_output --partial "amp-config - every git config key"
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help amp
	assert_output --partial "amp - git-native messaging"
	# a page man knows wins, as git help does
	printf '.TH AMP-SEND 1\n.SH NAME\namp-send \\- the MANPATH copy\n' > "$BATS_TEST_TMPDIR/mp/man1/amp-send.1"
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help send
	assert_success
	assert_output --partial "the MANPATH copy"
	# no man at all: a clear error, exit 4
	PATH=$BATS_TEST_TMPDIR/empty run "$AMP_BIN/amp" help send
	assert_failure 4
	assert_output --partial "amp help: error:"
	# no such page anywhere
	MANPATH=$BATS_TEST_TMPDIR/mp run amp help no-such-thing
	assert_failure 4
	assert_output --partial "amp help: error: no manual page amp-no-such-thing(1)"
	# a topic is never a path
	run amp help ../../etc/passwd
	assert_failure 2
	# amp help alone still lists; --help still prints the usage
	run amp help
	assert_success
	assert_output --partial "The AMP/1.0 commands:"
	run amp send --help
	assert_success
	assert_output --partial "usage: amp send"
}

# Sets KEY to VALUE in the current repository, runs the command, expects
# exit 2 and an error naming the key.
bad_config() {
	local key=$1 value=$2
	shift 2
	git config "$key" "$value"
	run "$@"
	git config --unset "$key"
	assert_failure 2
	assert_output --partial "git config $key"
}

@test "amp-config(7): every key's bad value is exit 2 naming the key" {
	make_ssot
	git init -q --bare "$BATS_TEST_TMPDIR/hub"
	amp init --repo "$BATS_TEST_TMPDIR/hub" > /dev/null
	git remote add origin "$BATS_TEST_TMPDIR/hub"
	local k
	for k in amp.retryTimeout amp.staleLockTimeout amp.lockThreshold amp.heartbeatTimeout \
		amp.maxClockSkew amp.approvalRequired; do
		bad_config "$k" 0x1 amp status
	done
	bad_config amp.requireSigned maybe amp status
	bad_config amp.fsync maybe amp status
	bad_config amp.ref refs/heads/x amp status
	bad_config amp.errorsRef refs/heads/errors amp status
	git config amp.errorsRef refs/amp/messages
	run amp status
	assert_failure 2
	assert_output --partial "git config amp.ref and amp.errorsRef must differ"
	git config --unset amp.errorsRef
	bad_config amp.role boss amp heartbeat "$T"
	bad_config amp.checkRepo maybe amp send task_dispatch --task "$T" --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	bad_config amp.autoSync maybe amp watch --once
	bad_config amp.notifyTimeout 0 amp watch --once
	bad_config amp.notifyMaxPending 100001 amp watch --once
	bad_config amp.notify "$(head -c 5000 /dev/zero | tr '\0' x)" amp watch --once
	git config amp.notify true
	bad_config amp.notifyRole boss amp watch --once
	git config --unset amp.notify
	bad_config amp.syncInterval 3601 amp wait executor --sync --timeout 1
	bad_config amp.syncRetries 101 amp sync
	bad_config amp.syncPush both amp sync
	bad_config amp.syncVerify maybe amp sync
	git config amp.syncPush inbox
	bad_config amp.syncId 'a b' amp sync
	git config --unset amp.syncPush
	git config amp.remote -x
	run amp sync
	assert_failure 2
	assert_output --partial "'-x' is not a remote"
	git config --unset amp.remote
	git config amp.requireSigned true
	run amp status
	assert_failure 2
	assert_output --partial "amp.requireSigned needs git config amp.allowedSigners"
	git config --unset amp.requireSigned
	# nothing was written by any of them
	assert_equal "$(git rev-list --count refs/amp/messages)" 1
}

@test "amp-config(7): every variable's bad value gets what the table says" {
	make_ssot
	AMP_NOW=yesterday run amp status
	assert_failure 2
	assert_output --partial "AMP_NOW: 'yesterday' is neither"
	AMP_NOW=253402300800 run amp status
	assert_failure 2
	AMP_ROLE=boss run amp heartbeat "$T"
	assert_failure 2
	assert_output --partial "AMP_ROLE: 'boss' is not a role"
	AMP_IDEMPOTENCY_KEY=$(head -c 257 /dev/zero | tr '\0' x) run amp send task_dispatch --task "$T" \
		--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_failure 2
	assert_output --partial "is not a key (1..256 bytes of UTF-8)"
	AMP_SCHEMA_DIR=$BATS_TEST_TMPDIR/none run amp heartbeat "$T" --from executor
	assert_failure 4
	assert_output --partial "cannot find the AMP schema directory"
	AMP_REPO=$BATS_TEST_TMPDIR/none run amp status
	assert_failure 4
	assert_output --partial "not a git repository"
	# a missing exec dir is skipped
	AMP_EXEC_PATH=$BATS_TEST_TMPDIR/none run amp status
	assert_success
}

@test "make install into a DESTDIR: the installed amp runs a task, its page and completion load; uninstall leaves nothing" {
	local dest=$BATS_TEST_TMPDIR/dest inst
	# under make asan a relink needs the sanitizers' runtime
	run make -s -C "$AMP_SRC" BUILD="$BUILD_DIR" BIN="$BUILD_BIN" DESTDIR="$dest" PREFIX=/usr \
		${AMP_SANITIZER_REPORTS:+LDFLAGS=-fsanitize=address,undefined} install
	assert_success
	inst=$dest/usr
	assert_file_executable "$inst/bin/amp"
	assert_file_executable "$inst/libexec/amp/amp-send"
	assert_file_exist "$inst/share/amp/schemas/message.schema.json"
	assert_file_exist "$inst/share/man/man1/amp-send.1"
	assert_file_exist "$inst/share/man/man7/amp-config.7"
	assert_file_exist "$inst/share/bash-completion/completions/amp"
	if [ -f "$AMP_SRC/completions/_amp" ]; then
		assert_file_exist "$inst/share/zsh/site-functions/_amp"
	fi
	# a whole small task with only the installed amp on PATH
	make_repo
	write_payloads
	local sys="PATH=$inst/bin:/usr/bin:/bin"
	run env -u AMP_EXEC_PATH -u AMP_SCHEMA_DIR "$sys" AMP_NOW=2026-02-26T14:30:00+00:00 amp init
	assert_success
	run env -u AMP_EXEC_PATH -u AMP_SCHEMA_DIR "$sys" AMP_NOW=2026-02-26T14:30:00+00:00 \
		amp send task_dispatch --task "$T" --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	assert_success
	assert_output --regexp "^task_dispatch-$T-[0-9]+$"
	run env -u AMP_EXEC_PATH -u AMP_SCHEMA_DIR "$sys" AMP_NOW=2026-02-26T14:31:00+00:00 amp status "$T"
	assert_success
	assert_output --partial "dispatched"
	assert_equal "$(git rev-list --count refs/amp/messages)" 2
	# its pages: man -l, man through MANPATH, and amp help from the install tree
	run env MANWIDTH=80 man -l "$inst/share/man/man1/amp-send.1"
	assert_success
	assert_output --partial "amp-send - build, validate and commit a message to the SSOT"
	run env MANWIDTH=80 MANPAGER=cat MANPATH="$inst/share/man" man amp-send
	assert_success
	assert_output --partial "--idempotency-key"
	run env "$sys" MANPAGER=cat MANPATH="$BATS_TEST_TMPDIR/none" "$inst/bin/amp" help config
	assert_success
	assert_output --partial "amp-config - every git config key"
	# the bash completion loads
	run bash -c 'source "$1" && declare -F _amp' _ "$inst/share/bash-completion/completions/amp"
	assert_success
	assert_output _amp
	# uninstall removes every file it put there
	run make -s -C "$AMP_SRC" BUILD="$BUILD_DIR" BIN="$AMP_BIN" DESTDIR="$dest" PREFIX=/usr uninstall
	assert_success
	assert_equal "$(find "$dest" ! -type d)" ""
}

@test "make dist: amp-VERSION.tar.gz unpacks to amp-VERSION/, which builds with make all" {
	git -C "$AMP_SRC" rev-parse --git-dir > /dev/null 2>&1 || skip "not a git checkout: make dist archives HEAD"
	local version
	version=$(sed -n 's/^VERSION *= *//p' "$AMP_SRC/Makefile")
	run make -s -C "$AMP_SRC" DISTDIR="$BATS_TEST_TMPDIR" dist
	assert_success
	assert_file_exist "$BATS_TEST_TMPDIR/amp-$version.tar.gz"
	run tar -tzf "$BATS_TEST_TMPDIR/amp-$version.tar.gz"
	assert_success
	assert_line "amp-$version/Makefile"
	assert_line "amp-$version/share/man/amp-send.1.scd"
	# nothing outside amp-VERSION/, and no build products
	refute_line --regexp "^[^a]|^amp-$version/(bin|build)/"
	tar -xzf "$BATS_TEST_TMPDIR/amp-$version.tar.gz" -C "$BATS_TEST_TMPDIR"
	# The system libgit2, so that the test does not rebuild libgit2 (50 s).
	run make -s -j2 -C "$BATS_TEST_TMPDIR/amp-$version" LIBGIT2=system all
	assert_success
	run "$BATS_TEST_TMPDIR/amp-$version/bin/amp" --version
	assert_output "amp version $version (AMP/1.0)"
	assert_file_executable "$BATS_TEST_TMPDIR/amp-$version/bin/amp-send"
	assert_file_exist "$BATS_TEST_TMPDIR/amp-$version/build/man/amp-send.1"
}

# Every shell script of the tree, found by its shebang (sh, bash, dash,
# directly or through env) or, for the files that are only sourced, by the
# extension .sh or .bash (not npm's packages under test/*/node_modules).  The bats files are left out: shellcheck reads
# them only as plain bash, and flags each @test's variables (SC2030/SC2031)
# and each bare $T of a test id.
shell_scripts() {
	(cd "$AMP_SRC" && find . \( -path ./build -o -path ./bin -o -path ./.git -o -path ./test/fuzz/corpus -o -name node_modules \) -prune \
		-o -type f ! -name '*.bats' -print | sort | while IFS= read -r f; do
		case $f in
		*.sh | *.bash) echo "${f#./}" ;;
		*) head -n 1 "$f" | grep -qE '^#! *(/usr)?/bin/(env +)?(ba|da)?sh( |$)' && echo "${f#./}" || : ;;
		esac
	done)
}

@test "shellcheck is clean on every shell script of the tree" {
	run shell_scripts
	assert_success
	assert_line share/demo.sh
	assert_line test/run
	assert_line test/fuzz/run
	assert_line test/helpers.bash
	assert_line completions/amp.bash
	assert_line .ci/run
	refute_line --regexp '\.bats$'
	[ "${#lines[@]}" -ge 20 ]
	local files=("${lines[@]}")
	cd "$AMP_SRC"
	run shellcheck -x -f gcc "${files[@]}"
	assert_success
	assert_output ""
}

@test "the first example of amp-send(1) runs as written and commits its dispatch" {
	make_ssot
	# the example's repo is another machine's path
	git config amp.checkRepo false
	sed -n '/^# EXAMPLES/,/^# /p' "$AMP_SRC/share/man/amp-send.1.scd" |
		awk '/^```/ { n++; next } n == 1' > "$BATS_TEST_TMPDIR/example.sh"
	assert [ -s "$BATS_TEST_TMPDIR/example.sh" ]
	run bash -e "$BATS_TEST_TMPDIR/example.sh"
	assert_success
	assert_output --regexp '^task_dispatch-T-2026-001-[0-9]+$'
	run amp status T-2026-001 --json
	assert_success
	assert_equal "$(json_get 'd["state"]' <<< "$output")" dispatched
}

# share/doc/internals.md "A lean binary": how make links libgit2 (share/git2-link.sh).
@test "share/git2-link.sh: LIBGIT2=archive links Debian's libgit2.a, LIBGIT2=system the shared one, each answer cached; the built amp never reads the CA bundle" {
	local libdir
	libdir=$(pkg-config --variable=libdir libgit2)
	[ -f "$libdir/libgit2.a" ] || skip "libgit2-dev ships no libgit2.a here"
	run "$AMP_SRC/share/git2-link.sh" "$BATS_TEST_TMPDIR/g2" archive cc
	assert_success
	assert_output --regexp '^archive .*-l:libgit2\.a'
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/g2/link")" = "$output" ]
	# the cache answers without linking again: a broken compiler is not asked
	run "$AMP_SRC/share/git2-link.sh" "$BATS_TEST_TMPDIR/g2" archive false
	assert_output --regexp '^archive '
	run "$AMP_SRC/share/git2-link.sh" "$BATS_TEST_TMPDIR/g3" system cc
	assert_output "shared $(pkg-config --libs libgit2)"
	# a compiler that links nothing: the shared answer, never a broken one
	run "$AMP_SRC/share/git2-link.sh" "$BATS_TEST_TMPDIR/g4" archive false
	assert_output --regexp '^shared '
	# the amp under test, linked as build/libgit2/link says
	case $(sed -n 2p "$AMP_SRC/build/libgit2/link" 2>/dev/null) in
	archive* | lean*) run ldd "$AMP_BIN/amp"; refute_output --partial "libgit2.so" ;;
	esac
	make_repo
	amp init > /dev/null
	# LeakSanitizer cannot run under ptrace (make asan)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" run strace -f -qq -e trace=open,openat -o "$BATS_TEST_TMPDIR/trace" amp status
	assert_success
	run grep -c "certs\|\.crt\|\.pem" "$BATS_TEST_TMPDIR/trace"
	assert_output 0
	# linked with libgit2.a, libgit2's TLS and SSH start-up is skipped:
	# mbedTLS seeds its entropy pool with a getrandom of 128 bytes, where
	# libgit2's own seeds take 8
	case $(sed -n 2p "$AMP_SRC/build/libgit2/link" 2>/dev/null) in
	archive*)
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" run strace -f -qq -e trace=getrandom -o "$BATS_TEST_TMPDIR/trace" amp status
		assert_success
		run grep -cE 'getrandom\([^)]*, ([3-9][0-9]|[0-9]{3,}), ' "$BATS_TEST_TMPDIR/trace"
		assert_output 0
		# no Kerberos/GSSAPI libraries, jansson linked in: libc only
		# (an ASan build adds its runtime)
		run sh -c "readelf -d '$AMP_BIN/amp' | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^libasan\|^libubsan\|^libm\.\|^libstdc' | sort | tr '\n' ' '"
		assert_output "libc.so.6 "
		# and no part of libgit2's TLS or SSH: neither mbedTLS's TLS and
		# X.509 code nor libssh2 and OpenSSL are in the binary, and the
		# two entry points to them are amp's (lib/store/tls_ca.c)
		run sh -c "nm '$AMP_BIN/amp' | grep -E ' T (mbedtls_ssl_|mbedtls_x509_|libssh2_|OPENSSL_|git_mbedtls_stream_new$|git_smart_subtransport_ssh$)'"
		assert_equal "${#lines[@]}" 2
		run nm "$BUILD_DIR/tls_ca_archive.o"
		assert_line --regexp ' T git_mbedtls_stream_new$'
		assert_line --regexp ' T git_smart_subtransport_ssh$'
		;;
	esac
}
