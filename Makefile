# amp - git-native messaging for AI agents (AMP/1.0).
#
#   make            build bin/amp and every bin/amp-*
#   make deps       install what is missing (Debian: apt-get)
#   make test       deps + build + every test, ending "N passed, N failed"
#   make installcheck  the end-to-end suites against `make install`'s tree
#   make check-layers  lib/ against its layers (lib/LAYERS) and its shape
#   make demo       deps + build + a whole task on a throw-away repository
#   make asan       the whole test suite under AddressSanitizer + UBSan
#   make bench      speed figures (never part of the tests)
#   make bench-1m   the table at 100k and 1M messages (hours; AMP_BENCH_CACHE)
#   make bench-hub  one hub, 8/32/128 agents over git daemon, sshd, gitolite3
#   make bench-compare BASE=<rev>  <rev>'s build against this one, side by side
#   make screenshots the dashboard of the demo, by headless Chromium
#   make fuzz       deps + clang + each libFuzzer target for FUZZ_SECONDS
#   make valgrind   deps + every command once under valgrind memcheck
#   make man        the manual pages (scdoc) into $(BUILD)/man
#   make install    PREFIX=/usr/local DESTDIR=
#   make dist       amp-$(VERSION).tar.gz, the source tree of HEAD

VERSION   = 0.1.0
PREFIX   ?= /usr/local
BINDIR    = $(PREFIX)/bin
LIBEXECDIR = $(PREFIX)/libexec/amp
DATADIR   = $(PREFIX)/share/amp
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR = $(PREFIX)/share/zsh/site-functions
MANDIR    = $(PREFIX)/share/man

CC       ?= cc
CFLAGS   ?= -std=c11 -O2 -g -Wall -Wextra -Werror
BUILD    ?= build
BIN      ?= bin

# LIBGIT2=static (the default): amp links a libgit2 without its network
# stack, built once into $(LIBGIT2_DIR) from Debian's source of the
# installed libgit2-dev by share/build-libgit2.sh; when that cannot be built
# (offline, no source), Debian's own static libgit2.a, as LIBGIT2=archive
# does; when that does not link either, the shared one, as LIBGIT2=system
# always does (share/git2-link.sh).  amp's transport is the user's `git`,
# so SSH/TLS/Kerberos code is never run, but Debian's shared libgit2 loads
# 19 libraries at every start.
LIBGIT2     ?= static
LIBGIT2_DIR ?= build/libgit2
# exact: only the installed libgit2-dev's own source (its security fixes);
# any: the newest revision of its upstream version Debian serves.
LIBGIT2_REVISION ?= exact
LIBGIT2_A    = $(LIBGIT2_DIR)/install/lib/libgit2.a
ifeq ($(LIBGIT2),static)
LIBGIT2_BUILT = libgit2
endif

# Recursively expanded on purpose: `make test` installs the packages first,
# then builds in a sub-make that sees them; how libgit2 is linked is decided
# when a recipe runs, after the `libgit2` step has built it or given up:
# share/git2-link.sh says "lean" (that build), "archive" (Debian's own
# libgit2.a, same revision as the shared one, when LIBGIT2=static could not
# build the lean one) or "shared", then the flags; its answer is cached.
GIT2_LINK   = $(shell share/git2-link.sh $(LIBGIT2_DIR) $(LIBGIT2) $(CC))
GIT2_MODE   = $(firstword $(GIT2_LINK))
GIT2_CFLAGS = $(if $(filter lean,$(GIT2_MODE)),-I$(LIBGIT2_DIR)/install/include,$(shell pkg-config --cflags libgit2))
GIT2_LIBS   = $(wordlist 2,1000,$(GIT2_LINK))
# libmicrohttpd: its header only; lib/ui/dashboard_serve.c loads the library
# with dlopen when a server starts (why: there).
PKG_CFLAGS = $(GIT2_CFLAGS) $(shell pkg-config --cflags jansson zlib libmicrohttpd libpcre2-8 nettle)
# With Debian's libgit2.a, jansson, PCRE2 (schema patterns) and nettle
# (SHA-1) are linked statically too (their -dev packages ship the .a): amp
# then loads no shared library but libc.
static_or_shared = $(if $(and $(filter archive,$(GIT2_MODE)),$(wildcard $(shell pkg-config --variable=libdir $(1))/$(2))),-l:$(2),$(shell pkg-config --libs $(1)))
JANSSON_LIBS = $(call static_or_shared,jansson,libjansson.a)
PCRE2_LIBS   = $(call static_or_shared,libpcre2-8,libpcre2-8.a)
NETTLE_LIBS  = $(call static_or_shared,nettle,libnettle.a)
PKG_LIBS   = $(GIT2_LIBS) $(JANSSON_LIBS) $(PCRE2_LIBS) $(NETTLE_LIBS) $(shell pkg-config --libs zlib)
# lib/store/tls_ca.c, linked into every program in the build its mode needs.
TLS_CA      = $(if $(filter archive,$(GIT2_MODE)),$(BUILD)/tls_ca_archive.o,$(BUILD)/tls_ca.o)
# --as-needed: no shared library loads that the program does not call.
AMP_LDFLAGS = -Wl,--as-needed
AMP_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Ilib \
	-DAMP_VERSION='"$(VERSION)"' -DAMP_DATADIR='"$(DATADIR)"' $(PKG_CFLAGS)

LIB_SRC  := $(filter-out lib/store/tls_ca.c,$(sort $(wildcard lib/*/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIBAMP   := $(BUILD)/libamp.a
CMD_SRC  := $(sort $(wildcard cmd/amp-*.c))
CMDS     := $(CMD_SRC:cmd/%.c=$(BIN)/%)
CMD_NAMES := $(CMD_SRC:cmd/amp-%.c=%)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(sort $(wildcard test/c/*.c))
TESTS    := $(TEST_SRC:test/c/%.c=$(BUILD)/test/%)
# share/man/<page>.<section>.scd -> $(BUILD)/man/<page>.<section>
MAN_SRC  := $(sort $(wildcard share/man/*.scd))
MANS     := $(MAN_SRC:share/man/%.scd=$(BUILD)/man/%)
# Without scdoc, `make` builds the programs and skips the pages (`make man`
# says what is missing); `make deps` installs it.
SCDOC    := $(shell command -v scdoc 2>/dev/null)

# libgpg-error-dev: libssh2's static link list names -lgpg-error, which
# libgit2-dev does not bring; without it LIBGIT2=archive cannot link on a
# pristine Debian 12 (share/git2-link.sh then falls back to the shared one).
DEBIAN_PACKAGES = build-essential pkg-config git libgit2-dev libjansson-dev \
	bats bats-support bats-assert bats-file json-schema-test-suite \
	python3 python3-jsonschema procps openssh-server openssh-client \
	cmake dpkg-dev libhttp-parser-dev zlib1g-dev libkrb5-dev libgpg-error-dev strace time gnuplot-nox zsh \
	scdoc shellcheck man-db chromium curl libmicrohttpd-dev jq libpcre2-dev nettle-dev \
	nodejs npm gitolite3 valgrind file

.PHONY: all deps deps-list test check check-layers bench-1m bench-compare bench-hub installcheck prune-bin demo asan bench bench-all install uninstall clean libgit2 man dist FORCE screenshots

all: $(BIN)/amp $(CMDS) $(TESTS) $(if $(SCDOC),$(MANS)) prune-bin

man: $(MANS)

$(BUILD)/man/%: share/man/%.scd
	@command -v scdoc >/dev/null || { echo "make man: scdoc is missing (make deps installs it)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	scdoc < $< > $@.tmp && mv $@.tmp $@

# Every compile waits for the libgit2 step (order-only: a cached libgit2
# rebuilds nothing); every link depends on libgit2.a once it exists.  Each
# object depends on the headers it includes, as the compiler lists them
# (-MMD -MP writes $(BUILD)/<object>.d, read at the end of this file).
DEPFLAGS = -MMD -MP
$(BUILD)/%.o: %.c | $(LIBGIT2_BUILT)
	@mkdir -p $(dir $@)
	$(CC) $(AMP_CPPFLAGS) $(DEPFLAGS) $(CFLAGS) -c -o $@ $<

# amp is one program (cmd/amp.c): each command's main() is renamed
# amp_main_<name> and listed in builtins.h, and bin/amp-<name> are hard
# links to bin/amp, which runs the command its name says.
$(BUILD)/cmd/amp-%.o: cmd/amp-%.c $(BUILD)/cmd/main.flags | $(LIBGIT2_BUILT)
	@mkdir -p $(dir $@)
	$(CC) $(AMP_CPPFLAGS) $(DEPFLAGS) $(CFLAGS) $(CMD_MAIN)$* -c -o $@ $<

# Rewritten only when CMD_MAIN changes: a build tree from before amp was
# one program recompiles its commands once.
CMD_MAIN = -Dmain=amp_main_
$(BUILD)/cmd/main.flags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CMD_MAIN)' | cmp -s - $@ || echo '$(CMD_MAIN)' > $@

$(BUILD)/cmd/builtins.h: FORCE
	@mkdir -p $(dir $@)
	@printf 'AMP_BUILTIN(%s)\n' $(CMD_NAMES) > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/cmd/amp.o: cmd/amp.c $(BUILD)/cmd/builtins.h | $(LIBGIT2_BUILT)
	@mkdir -p $(dir $@)
	$(CC) $(AMP_CPPFLAGS) $(DEPFLAGS) -I$(BUILD)/cmd $(CFLAGS) -c -o $@ $<

# The build id (lib/store/cache.h): a hash of every source that reads the SSOT or
# derives what amp keeps from it (lib/, cmd/, the schemas), so that a build
# of other sources has another id and rebuilds every derived file.
# Rewritten only when it changes: an unchanged tree recompiles nothing.
BUILD_ID_SRC = $(sort $(wildcard lib/*/*.c lib/*/*.h cmd/*.c schemas/*.json))
$(BUILD)/build-id.h: FORCE
	@mkdir -p $(dir $@)
	@id=$$(for f in $(BUILD_ID_SRC); do printf '%s\n' "$$f"; wc -c < "$$f"; cat "$$f"; done | \
		sha256sum | cut -c1-32) && \
		printf '#define AMP_BUILD_ID "%s"\n' "$$id" > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/lib/store/cache.o: lib/store/cache.c $(BUILD)/build-id.h | $(LIBGIT2_BUILT)
	@mkdir -p $(dir $@)
	$(CC) $(AMP_CPPFLAGS) $(DEPFLAGS) -I$(BUILD) $(CFLAGS) -c -o $@ $<

$(BUILD)/tls_ca.o: lib/store/tls_ca.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tls_ca_archive.o: lib/store/tls_ca.c
	@mkdir -p $(dir $@)
	$(CC) -DAMP_TLS_CA_ARCHIVE $(GIT2_CFLAGS) $(CFLAGS) -c -o $@ $<

$(LIBAMP): $(LIB_OBJ) $(BUILD)/libgit2.mode $(if $(LIBGIT2_BUILT),$(wildcard $(LIBGIT2_A)))
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# Rewritten only when LIBGIT2 changes, so that switching relinks everything.
$(BUILD)/libgit2.mode: FORCE
	@mkdir -p $(dir $@)
	@echo $(LIBGIT2) | cmp -s - $@ || echo $(LIBGIT2) > $@
FORCE:

# Returns at once when built for the installed libgit2-dev (or when it
# already gave up for it: rm -rf $(LIBGIT2_DIR) to retry).
libgit2:
	@LIBGIT2_REVISION=$(LIBGIT2_REVISION) share/build-libgit2.sh $(LIBGIT2_DIR)

# Linking bin/amp also links every bin/amp-<name> to it again and removes
# the bin/amp-* of no current command: each is a hard link to the amp
# linked when it was made, which keeps running that build's commands once
# bin/amp is relinked (`make bin/amp`) or its command is removed or renamed.
$(BIN)/amp: $(BUILD)/cmd/amp.o $(CMD_OBJ) $(LIBAMP) $(BUILD)/tls_ca.o $(BUILD)/tls_ca_archive.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AMP_LDFLAGS) $(LDFLAGS) -o $@ $(BUILD)/cmd/amp.o $(CMD_OBJ) $(LIBAMP) $(TLS_CA) $(PKG_LIBS)
	@for c in $(CMD_NAMES); do ln -f $@ $(BIN)/amp-$$c; done
	@$(MAKE) --no-print-directory prune-bin

# Removes the bin/amp-* that are not a current command (also run by `all`:
# a checkout that removes a command need not relink bin/amp).
prune-bin:
	@for f in $(BIN)/amp-*; do \
		case " $(CMD_NAMES:%=$(BIN)/amp-%) " in \
		*" $$f "*) ;; \
		*) if [ -e "$$f" ] || [ -L "$$f" ]; then echo "rm -f $$f (no such command)"; rm -f "$$f"; fi ;; \
		esac; \
	done

$(BIN)/amp-%: $(BIN)/amp
	ln -f $< $@

$(BUILD)/test/%: $(BUILD)/test/c/%.o $(LIBAMP) $(BUILD)/tls_ca.o $(BUILD)/tls_ca_archive.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AMP_LDFLAGS) $(LDFLAGS) -o $@ $< $(LIBAMP) $(TLS_CA) $(PKG_LIBS)

# Installs only what is missing, so a machine that has everything is not
# touched (and needs no root).  A package is there when an installed one
# provides it too (a nodejs of another origin that brings its own npm).
# Then the Node packages the tests drive from their package-lock.json files:
# test/mcp's MCP clients (34-mcp) and test/web's puppeteer-core, axe-core
# and lighthouse (36-dashboard-admin, make screenshots,
# share/bench-dashboard-browser.sh).
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || \
		dpkg-query -W -f='$${Status} $${Provides}\n' 2>/dev/null | grep 'ok installed' | \
			grep -qE "[ ,]$$p( |,|$$)" || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing" $$missing; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@$(MAKE) --no-print-directory test/mcp/node_modules/.package-lock.json
	@$(MAKE) --no-print-directory test/web/node_modules/.package-lock.json

# npm ci when node_modules is missing or older than the lock file (npm
# writes node_modules/.package-lock.json as it installs).
test/mcp/node_modules/.package-lock.json: test/mcp/package-lock.json test/mcp/package.json
	cd test/mcp && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test/web/node_modules/.package-lock.json: test/web/package-lock.json test/web/package.json
	cd test/web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The packages `make deps` installs, for test/deps-check.
deps-list:
	@echo $(DEBIAN_PACKAGES)

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check

check: all
	@AMP_BIN=$(CURDIR)/$(BIN) AMP_TEST_BUILD=$(CURDIR)/$(BUILD) test/run

# Also a test of make check (test/31-layers.bats), with the checker's own.
check-layers: all
	@share/check-layers $(BUILD) .

# The GNU target: installs into a temporary DESTDIR (PREFIX as built, so
# the programs find their schemas relative to themselves) and runs the
# end-to-end suites against that tree, with its bin/ alone on PATH
# (test/helpers.bash: AMP_INSTALLED_PREFIX), then removes it.
INSTALLCHECK_SUITES = test/30-installed.bats test/30-authors.bats test/30-names.bats test/30-strict.bats test/57-readme-tour.bats test/80-sync.bats \
	test/81-hooks.bats test/82-work-hooks.bats test/83-hub.bats test/84-join.bats test/32-hubs.bats test/32-partitions.bats \
	test/85-sync-options.bats test/90-demo.bats test/93-man-install.bats test/94-completion.bats \
	test/34-mcp.bats
installcheck: all
	@dest=$$(mktemp -d "$${TMPDIR:-/tmp}/amp-installcheck.XXXXXX") && \
	$(MAKE) --no-print-directory -s install DESTDIR=$$dest > $$dest.log 2>&1 || { cat $$dest.log; rm -rf $$dest $$dest.log; exit 1; }; \
	rm -f $$dest.log; \
	AMP_INSTALLED_PREFIX=$$dest$(PREFIX) AMP_TEST_BUILD=$(CURDIR)/$(BUILD) AMP_TEST_BIN=$(CURDIR)/$(BIN) test/run $(INSTALLCHECK_SUITES); \
	rc=$$?; rm -rf $$dest; exit $$rc

demo: deps
	@$(MAKE) --no-print-directory all
	@AMP_BIN=$(CURDIR)/$(BIN) share/demo.sh

ASAN_FLAGS = -std=c11 -O1 -g -Wall -Wextra -Werror -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all
# Sanitizer reports go to files as well as failing the process, so that a
# test expecting a failure cannot pass on a sanitizer abort: test/run fails
# when any report holds a finding.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build/asan BIN=build/asan/bin \
		CFLAGS="$(ASAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined" all
	@rm -rf build/asan/reports && mkdir -p build/asan/reports
	@AMP_SCHEMA_DIR=$(CURDIR)/schemas AMP_BIN=$(CURDIR)/build/asan/bin \
		AMP_TEST_BUILD=$(CURDIR)/build/asan \
		AMP_SANITIZER_REPORTS=$(CURDIR)/build/asan/reports \
		ASAN_OPTIONS=halt_on_error=1:exitcode=99:detect_leaks=1:log_path=$(CURDIR)/build/asan/reports/asan \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99:log_path=$(CURDIR)/build/asan/reports/ubsan \
		test/run

# make bench: the table of share/bench-table.sh (1k, 10k, 100k messages;
# under 20 minutes), written with its plot to build/bench, and the long
# tasks' table of share/bench-layout.sh (build/bench/layout.md).  make bench-all:
# also every other share/bench-*.sh (hub, sync, watch, ...: much longer).
bench: all
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(DEBIAN_PACKAGES) $(BENCH_PACKAGES)"
	@AMP_BIN=$(CURDIR)/$(BIN) share/bench-table.sh
	@AMP_BIN=$(CURDIR)/$(BIN) share/bench-layout.sh $(BUILD)/bench/layout.md && cat $(BUILD)/bench/layout.md
	@echo "the hub's rows (8/32/128 agents over git daemon, sshd, gitolite3): make bench-hub"

# make bench-1m: the same table at 1k, 100k and 1M messages, each figure's ratio
# to 100k, and 8 passes of 8 writers into the 1M SSOT (issue 35).  The
# records are generated once under AMP_BENCH_CACHE (outside the tree).
AMP_BENCH_CACHE ?= $(or $(TMPDIR),/tmp)/amp-bench-cache
bench-1m: all
	@AMP_BIN=$(CURDIR)/$(BIN) AMP_BENCH_SIZES="1000 100000 1000000" AMP_BENCH_ROUNDS=5 \
		AMP_BENCH_SLOW_ROUNDS=1 AMP_BENCH_BIG_WRITERS=8 AMP_BENCH_CACHE=$(AMP_BENCH_CACHE) \
		AMP_BENCH_OUT=$(CURDIR)/$(BUILD)/bench-1m share/bench-table.sh

# make bench-hub: share/bench-hub.sh's table, one hub and N agents each
# syncing after every message (AMP_BENCH_HUB_AGENTS, _MODES, _TRANSPORTS,
# _SECONDS choose the rows; about 25 minutes for all of them).
bench-hub: all
	@AMP_BIN=$(CURDIR)/$(BIN) share/bench-hub.sh

# make bench-compare BASE=<rev>: the build of <rev> (built from `git
# archive` under build/bench-base, with this tree's libgit2) against this
# one, side by side in one run (share/bench-compare.sh).
BASE ?= HEAD
bench-compare: all
	@rm -rf $(BUILD)/bench-base && mkdir -p $(BUILD)/bench-base
	@git archive $(BASE) | tar -x -C $(BUILD)/bench-base
	@$(MAKE) --no-print-directory -s -C $(BUILD)/bench-base LIBGIT2_DIR=$(abspath $(LIBGIT2_DIR)) \
		BUILD=build BIN=bin bin/amp > $(BUILD)/bench-base.log 2>&1 || { cat $(BUILD)/bench-base.log; exit 1; }
	@share/bench-compare.sh $(BUILD)/bench-base/bin $(BIN)

bench-all: bench
	@AMP_BIN=$(CURDIR)/$(BIN) share/bench.sh

# The README's pictures of the dashboard (share/doc/img/): the site of an
# admin's morning (share/dashboard-shots.sh) -- the overview, a task page,
# the agents page -- taken by headless Chromium (test/web/drive.js) at
# 1400x900 and at a phone's 390x844.
SHOTS = $(BUILD)/screenshots
screenshots: deps
	@$(MAKE) --no-print-directory all
	@rm -rf $(SHOTS) && mkdir -p $(SHOTS) share/doc/img
	@AMP_BIN=$(CURDIR)/$(BIN) TMPDIR=$(CURDIR)/$(SHOTS) share/dashboard-shots.sh $(CURDIR)/$(SHOTS)/site
	@for shot in overview:index.html task:tasks/T-2026-102.html agents:agents.html; do \
		for size in 1400x900 390x844; do \
			png=share/doc/img/dashboard-$${shot%%:*}-$${size%%x*}.png; \
			node test/web/drive.js shot file://$(CURDIR)/$(SHOTS)/site/$${shot#*:} $(CURDIR)/$$png \
				$${size%%x*} $${size#*x} || exit 1; \
			echo $$png; \
		done; \
	done

# ---- fuzzing and valgrind (test/fuzz/README.md) ---------------------------
# Each test/fuzz/fuzz_<t>.c is a libFuzzer target.  `all` also links it with
# test/fuzz/replay.c as $(BUILD)/test/replay_<t>, which test/run runs: it
# replays test/fuzz/corpus/<t>/ and test/fuzz/regressions/<t>/ with the
# normal compiler, and under the sanitizers in `make asan`.
FUZZ_TARGETS := $(patsubst test/fuzz/fuzz_%.c,%,$(sort $(wildcard test/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_BIN      = $(BUILD)/fuzzers
FUZZ_CFLAGS   = -std=c11 -O1 -g -Wall -Wextra -Werror -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_PACKAGES = clang libclang-rt-14-dev
VALGRIND_PACKAGES = valgrind
BENCH_PACKAGES = valgrind

all: $(FUZZ_TARGETS:%=$(BUILD)/test/replay_%)

$(BUILD)/test/fuzz/%.o: test/fuzz/fuzz.h
.PRECIOUS: $(BUILD)/test/fuzz/%.o

$(BUILD)/test/fuzz/replay_%.o: test/fuzz/replay.c test/fuzz/fuzz.h | $(LIBGIT2_BUILT)
	@mkdir -p $(dir $@)
	$(CC) $(AMP_CPPFLAGS) $(DEPFLAGS) -DFUZZ_TARGET='"$*"' $(CFLAGS) -c -o $@ $<

$(BUILD)/test/replay_%: $(BUILD)/test/fuzz/replay_%.o $(BUILD)/test/fuzz/fuzz_%.o \
		$(BUILD)/test/fuzz/fuzz.o $(LIBAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AMP_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(FUZZ_BIN)/fuzz_%: $(BUILD)/test/fuzz/fuzz_%.o $(BUILD)/test/fuzz/fuzz.o $(LIBAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

.PHONY: fuzz fuzzers fuzz-merge valgrind
fuzzers: $(FUZZ_TARGETS:%=$(FUZZ_BIN)/fuzz_%)

# Runs each target in turn (FUZZ_TARGETS=validate to choose) on a working
# copy of its corpus in build/fuzz/work/; findings go to build/fuzz/findings/.
fuzz:
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(DEBIAN_PACKAGES) $(FUZZ_PACKAGES)"
	@$(MAKE) --no-print-directory BUILD=build/fuzz BIN=build/fuzz/bin CC=clang \
		CFLAGS="$(FUZZ_CFLAGS)" LDFLAGS="-fsanitize=fuzzer,address,undefined" fuzzers
	@test/fuzz/run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Folds what `make fuzz` found (build/fuzz/work/) into the committed corpus,
# keeping only inputs that add coverage.
fuzz-merge:
	@$(MAKE) --no-print-directory BUILD=build/fuzz BIN=build/fuzz/bin CC=clang \
		CFLAGS="$(FUZZ_CFLAGS)" LDFLAGS="-fsanitize=fuzzer,address,undefined" fuzzers
	@test/fuzz/run merge $(FUZZ_TARGETS)

valgrind:
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(DEBIAN_PACKAGES) $(VALGRIND_PACKAGES)"
	@$(MAKE) --no-print-directory all
	@AMP_BIN=$(CURDIR)/$(BIN) test/valgrind

# The pages are installed when built (scdoc present); the zsh completion
# when the tree has one.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) \
		$(DESTDIR)$(DATADIR)/schemas $(DESTDIR)$(DATADIR)/schemas/output \
		$(DESTDIR)$(DATADIR)/doc $(DESTDIR)$(DATADIR)/json-schema $(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(BIN)/amp $(DESTDIR)$(BINDIR)/amp
	@set -e; rel=$$(realpath -m --relative-to=$(LIBEXECDIR) $(BINDIR)/amp); \
	for c in $(CMD_NAMES); do \
		echo ln -sf $$rel $(DESTDIR)$(LIBEXECDIR)/amp-$$c; \
		ln -sf $$rel $(DESTDIR)$(LIBEXECDIR)/amp-$$c; \
	done
	install -m 644 schemas/*.json schemas/README.md $(DESTDIR)$(DATADIR)/schemas/
	install -m 644 schemas/output/*.json $(DESTDIR)$(DATADIR)/schemas/output/
	install -m 644 share/doc/* $(DESTDIR)$(DATADIR)/doc/ 2>/dev/null || true
	install -m 644 share/json-schema/*.json $(DESTDIR)$(DATADIR)/json-schema/
	install -m 644 completions/amp.bash $(DESTDIR)$(BASHCOMPDIR)/amp
	@set -e; for s in 1 7; do \
		pages=$$(ls $(BUILD)/man/*.$$s 2>/dev/null || true); \
		[ -z "$$pages" ] && continue; \
		echo install -d $(DESTDIR)$(MANDIR)/man$$s; install -d $(DESTDIR)$(MANDIR)/man$$s; \
		echo install -m 644 $$pages $(DESTDIR)$(MANDIR)/man$$s/; install -m 644 $$pages $(DESTDIR)$(MANDIR)/man$$s/; \
	done
	@if [ -f completions/_amp ]; then \
		echo install -D -m 644 completions/_amp $(DESTDIR)$(ZSHCOMPDIR)/_amp; \
		install -D -m 644 completions/_amp $(DESTDIR)$(ZSHCOMPDIR)/_amp; \
	fi

# Removes what install put there, each page by the name of its source.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/amp $(DESTDIR)$(BASHCOMPDIR)/amp $(DESTDIR)$(ZSHCOMPDIR)/_amp
	rm -f $(foreach p,$(MAN_SRC:share/man/%.scd=%),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p))
	rm -rf $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DATADIR)

# A Debian-style upstream tarball: amp-$(VERSION)/ holding the tree of HEAD
# (what is committed; `git archive` leaves out build products and local
# changes), written into $(DISTDIR).
DISTDIR ?= .
dist:
	git archive --format=tar.gz --prefix=amp-$(VERSION)/ -o $(DISTDIR)/amp-$(VERSION).tar.gz HEAD
	@echo $(DISTDIR)/amp-$(VERSION).tar.gz

clean:
	rm -rf $(BUILD) $(BIN) amp-$(VERSION).tar.gz

# The header dependencies the compiler wrote (-MMD -MP above).
-include $(wildcard $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(BUILD)/cmd/amp.d \
	$(TEST_SRC:%.c=$(BUILD)/%.d) $(BUILD)/test/fuzz/*.d)
