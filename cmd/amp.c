/*
 * amp - the driver.  Like git, it runs `amp-<name>` for `amp <name>`: first
 * from $AMP_EXEC_PATH, then next to itself (the build tree's bin/), then its
 * libexec dir (<prefix>/libexec/amp), then PATH, so a user's own `amp-foo`
 * on PATH extends the tool.
 *
 * amp's own commands are built into this one program, as git's builtins
 * are: bin/amp-<name> (and <prefix>/libexec/amp/amp-<name>) are links to
 * it, and it runs the command its name says.  `amp <name>` then runs the
 * command in this process, without a second exec and a second load of
 * libgit2 (~3 ms of a ~12 ms send), unless $AMP_EXEC_PATH has an
 * amp-<name>, or the amp-<name> next to amp is another program: then that
 * one runs, as the search order above says.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/errout.h"
#include "base/similar.h"
#include "base/util.h"

/* The commands built in: each cmd/amp-<name>.c, whose main() the Makefile
 * renames amp_main_<name>; builtins.h lists them, one AMP_BUILTIN(name)
 * each. */
#define AMP_BUILTIN(name) int amp_main_##name(int argc, char **argv);
#include "builtins.h"
#undef AMP_BUILTIN

static const struct builtin {
	const char *name;
	int (*run)(int argc, char **argv);
} builtins[] = {
#define AMP_BUILTIN(name) { #name, amp_main_##name },
#include "builtins.h"
#undef AMP_BUILTIN
};

static const struct builtin *builtin_named(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (!strcmp(builtins[i].name, name))
			return &builtins[i];
	return NULL;
}

#ifndef AMP_VERSION
#define AMP_VERSION "0.1.0"
#endif

/* The commands amp ships, for `amp help`, by what a user does with them;
 * others are found on PATH. */
static const struct {
	const char *name;
	const char *summary;
} commands[] = {
	{ NULL, "write to the SSOT" },
	{ "send", "build, validate and commit a message to the SSOT" },
	{ "ack", "acknowledge a message addressed to you" },
	{ "verdict", "send a review_verdict for a task" },
	{ "escalate", "send an escalation to the admin" },
	{ "heartbeat", "say an agent is alive on a task" },
	{ "claim", "take a task on a lease as a named executor instance" },
	{ "release", "give a claimed task back" },
	{ "progress", "report how far the holder of a task is (percent and a note)" },
	{ "ask", "ask the coordinator a clarification question about a task" },
	{ "answer", "answer an executor's clarification question" },
	{ "depend", "make a task's dispatch wait for another task's approval" },
	{ "plan", "set a task's priority, deadline, lock threshold or capability" },
	{ "register", "declare an agent instance's roles and capabilities" },
	{ "import", "commit a log of AMP records (JSON lines) in one ref update" },
	{ NULL, "read it" },
	{ "status", "show the state of one task or of every task" },
	{ "inbox", "list the messages a role has not ACKed yet" },
	{ "wait", "block until a message waits for a role" },
	{ "show", "show a message, its ACK and the messages it refers to" },
	{ "log", "list the records of the SSOT, newest first" },
	{ "errors", "list the messages the SSOT rejected" },
	{ "agents", "list the named agent instances: roles, last write, tasks held" },
	{ "ready", "list the tasks ready to work on" },
	{ "dashboard", "the SSOT as a static web site (and a read-only server)" },
	{ "schema", "print the schema of a message type or payload, or list them" },
	{ "validate", "check AMP/1.0 messages (or any JSON) against the schemas" },
	{ NULL, "enforce the protocol" },
	{ "watch", "enforce the protocol's timeouts and rules" },
	{ "hook", "git hooks that refuse pushes breaking the SSOT's rules" },
	{ "fsck", "verify the whole history of the SSOT: append-only, valid" },
	{ NULL, "share it" },
	{ "sync", "fetch, join and push the SSOT through a git remote" },
	{ "keys", "the keys that may speak as each role (signed records)" },
	{ "mcp", "serve one agent's tools to an MCP client on stdio" },
	{ NULL, "administer it" },
	{ "init", "prepare the SSOT in a git repository" },
	{ "approve", "approve a dispatch whose risk level needs it (admin only)" },
	{ "resume", "lift a suspension or a lock (admin only)" },
	{ "abort", "end a task (admin or coordinator)" },
	{ "gc", "roll the SSOT's packs and loose objects into bigger packs" },
};

/* The text of `amp --help`, which every build of the driver holds. */
static const char help_heading[] = "\nThe AMP/1.0 commands:\n";

static const char usage_text[] =
	"usage: amp [--version] [--help] [--exec-path] [--no-pager] <command> [<args>]\n";

static int is_readable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

static int is_executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* Directories searched before PATH, in order. */
static int exec_dirs(char dirs[3][PATH_MAX])
{
	const char *env = getenv("AMP_EXEC_PATH");
	char self[PATH_MAX];
	int n = 0;

	if (env && *env && snprintf(dirs[n], PATH_MAX, "%s", env) < PATH_MAX)
		n++;
	if (amp_exe_dir(self, sizeof(self)) == 0) {
		if (snprintf(dirs[n], PATH_MAX, "%s", self) < PATH_MAX)
			n++;
		if (snprintf(dirs[n], PATH_MAX, "%s/../libexec/amp", self) < PATH_MAX)
			n++;
	}
	return n;
}

static void print_help(FILE *out)
{
	size_t i;

	fputs(usage_text, out);
	fputs(help_heading, out);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!commands[i].name)
			fprintf(out, "\n %s\n", commands[i].summary);
		else
			fprintf(out, "   %-10s %s\n", commands[i].name, commands[i].summary);
	}
	fputs("\n'amp <command> --help' prints a command's usage, 'amp help <command>' its\n"
	      "manual page, 'amp help config' every setting.\n"
	      "Exit codes: 0 ok, 1 message does not conform, 2 usage, 3 refused by a\n"
	      "protocol rule, 4 repository or I/O failure, 5 amp wait timed out, 6 amp\n"
	      "claim: another instance holds the task.\n",
	      out);
}

/* 1 when `man` knows the page (`man -w` finds it on the MANPATH). */
static int man_has(const char *section, const char *page)
{
	pid_t pid;
	int status, fd;

	fflush(NULL);
	if ((pid = fork()) < 0)
		return 0;
	if (pid == 0) {
		if ((fd = open("/dev/null", O_WRONLY)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("man", "man", "-w", section, page, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * `amp help <topic>`, as `git help`: `man amp-<topic>` when man knows the
 * page; else the page built or installed next to this binary, shown with
 * `man -l` (bin/ -> build/man in the source tree, <BUILD>/bin -> <BUILD>/man,
 * <prefix>/bin -> <prefix>/share/man/manN).  man chooses the pager
 * (MANPAGER, PAGER) and pages only on a terminal.  The guides are section 7,
 * as git's gittutorial(7): "config", "tutorial", "protocol", "sharing".
 */
static int help_page(const char *topic)
{
	static const char *const guides[] = { "config", "tutorial", "protocol", "sharing" };
	const char *section = "1";
	size_t g;
	char page[128], self[PATH_MAX], file[3][PATH_MAX + 256];
	int i;

	/* A topic is a command name: never a path man -l would open. */
	if (!*topic || strlen(topic) > 64 ||
	    strspn(topic, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(topic)) {
		fprintf(stderr, "amp: '%s' is not an amp command. See 'amp --help'.\n",
			amp_term(topic));
		return 2;
	}
	for (g = 0; g < sizeof(guides) / sizeof(guides[0]); g++)
		if (!strcmp(topic, guides[g]))
			section = "7";
	/* `amp help amp` is amp(1), as `git help git` is git(1). */
	snprintf(page, sizeof(page), strcmp(topic, "amp") ? "amp-%s" : "amp", topic);
	if (man_has(section, page)) {
		execlp("man", "man", section, page, (char *)NULL);
		fprintf(stderr, "amp help: error: cannot run man: %s\n", strerror(errno));
		return 4;
	}
	if (amp_exe_dir(self, sizeof(self)) == 0) {
		snprintf(file[0], sizeof(file[0]), "%s/../build/man/%s.%s", self, page, section);
		snprintf(file[1], sizeof(file[1]), "%s/../man/%s.%s", self, page, section);
		snprintf(file[2], sizeof(file[2]), "%s/../share/man/man%s/%s.%s", self, section,
			 page, section);
		for (i = 0; i < 3; i++) {
			if (!is_readable(file[i]))
				continue;
			execlp("man", "man", "-l", file[i], (char *)NULL);
			fprintf(stderr, "amp help: error: cannot run man (%s): the page is %s\n",
				strerror(errno), amp_term(file[i]));
			return 4;
		}
	}
	fprintf(stderr, "amp help: error: no manual page %s(%s): not installed, "
		"and not built next to amp (make man)\n", amp_term(page), section);
	return 4;
}

/* 1 when `path` is this very program (a link to it). */
static int is_self(const char *path)
{
	struct stat a, b;

	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 1 when the n bytes at buf hold the string s. */
static int contains(const char *buf, size_t n, const char *s)
{
	size_t len = strlen(s);
	const char *p = buf, *end = buf + n;

	while ((size_t)(end - p) >= len && (p = memchr(p, s[0], (size_t)(end - p) - len + 1))) {
		if (!memcmp(p, s, len))
			return 1;
		p++;
	}
	return 0;
}

/*
 * 1 when path is a build of this driver other than this one: a link left
 * in bin/ by an older build (a command since removed or renamed, or
 * bin/amp relinked without its links), or another amp's.  Its commands
 * are that build's, not this one's, so amp never runs it.  Told by the
 * driver's help text in the file (read only for a program amp would
 * otherwise run, never for a built-in command found as itself).
 */
static int is_other_amp(const char *path)
{
	struct stat st;
	void *map;
	int fd, found = 0;

	if ((fd = open(path, O_RDONLY)) < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > 4 && (size_t)st.st_size < ((size_t)1 << 30)) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map != MAP_FAILED) {
			found = !memcmp(map, "\177ELF", 4) &&
				contains(map, (size_t)st.st_size, help_heading);
			munmap(map, (size_t)st.st_size);
		}
	}
	close(fd);
	return found;
}

static void exec_or_die(const char *path, char **argv)
{
	execv(path, argv);
	fprintf(stderr, "amp: error: cannot run %s: %s\n", amp_term(path), strerror(errno));
	exit(4);
}

/* Runs `amp-<name>` with argv (argv[0] is the name): returns only when
 * there is none; a built-in command's exit status goes to *code. */
static int run_command(const char *name, int argc, char **argv, int *code)
{
	const struct builtin *self = builtin_named(name);
	const char *env = getenv("AMP_EXEC_PATH"), *p, *end;
	char dirs[3][PATH_MAX], path[PATH_MAX + 300], prog[256];
	int i, n = exec_dirs(dirs), own = env && *env ? 1 : 0;

	snprintf(prog, sizeof(prog), "amp-%s", name);
	for (i = 0; i < n; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dirs[i], prog) >=
		    (int)sizeof(path) || !is_executable(path))
			continue;
		/* The first directory of the search that has amp-<name> decides;
		 * a link to this program is the built-in command.  In amp's own
		 * directories (not $AMP_EXEC_PATH), another build of amp is a
		 * stale link: passed over. */
		if (is_self(path)) {
			if (self)
				break;
			continue;
		}
		if (i >= own && is_other_amp(path))
			continue;
		argv[0] = path;
		exec_or_die(path, argv);
	}
	if (self) {
		argv[0] = prog;
		amp_errout_begin(argc, argv);
		*code = amp_errout_end(self->run(argc, argv));
		return 1;
	}
	/* PATH, as execvp searches it, passing over builds of amp (the build
	 * tree's bin/ is on PATH in the tests, and may be on a user's). */
	for (p = getenv("PATH"); p && *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		/* an empty element is the current directory, as for execvp */
		if (snprintf(path, sizeof(path), "%.*s/%s", end > p ? (int)(end - p) : 1,
			     end > p ? p : ".", prog) >= (int)sizeof(path))
			continue;
		if (!is_executable(path) || is_self(path) || is_other_amp(path))
			continue;
		argv[0] = path;
		exec_or_die(path, argv);
	}
	return 0;
}

/* "amp: 'stauts' is not an amp command", and git's hint of the most
 * similar ones when some are near. */
static int not_a_command(const char *name)
{
	const char *names[sizeof(commands) / sizeof(commands[0]) + 1];
	size_t best[4], n = 0, found, i;

	fprintf(stderr, "amp: '%s' is not an amp command. See 'amp --help'.\n", amp_term(name));
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		names[n++] = commands[i].name;
	names[n++] = "help";
	if ((found = amp_similar(name, names, n, best, 4))) {
		fprintf(stderr, "\nThe most similar command%s\n", found == 1 ? " is" : "s are");
		for (i = 0; i < found; i++)
			fprintf(stderr, "\t%s\n", names[best[i]]);
	}
	return 2;
}

int main(int argc, char **argv)
{
	const char *name, *base = argv[0] ? strrchr(argv[0], '/') : NULL;
	const struct builtin *self;
	char dirs[3][PATH_MAX];
	int code;

	/* Run as amp-<name>: that command. */
	base = base ? base + 1 : argv[0];
	if (base && !strncmp(base, "amp-", 4)) {
		if ((self = builtin_named(base + 4))) {
			amp_errout_begin(argc, argv);
			return amp_errout_end(self->run(argc, argv));
		}
		return not_a_command(base + 4);
	}
	/* git's --no-pager: for the command it runs, and user amp-* too. */
	if (argc >= 2 && !strcmp(argv[1], "--no-pager")) {
		setenv("AMP_PAGER", "cat", 1);
		argv++;
		argc--;
	}
	if (argc < 2) {
		print_help(stderr);
		return 2;
	}
	name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") ||
	    (!strcmp(name, "help") && argc == 2)) {
		print_help(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("amp version %s (AMP/1.0)\n", AMP_VERSION);
		return 0;
	}
	if (!strcmp(name, "--exec-path")) {
		exec_dirs(dirs);
		printf("%s\n", dirs[0]);
		return 0;
	}
	if (!strcmp(name, "help")) {
		if (argc > 3) {
			fprintf(stderr, "usage: amp help [<command>|config|tutorial|protocol|sharing]\n");
			return 2;
		}
		return help_page(argv[2]);
	}
	if (name[0] == '-' || strchr(name, '/')) {
		fprintf(stderr, "amp: error: unknown option: %s\n%s",
			amp_term(name), usage_text);
		return 2;
	}
	if (run_command(name, argc - 1, argv + 1, &code))
		return code;
	return not_a_command(name);
}
