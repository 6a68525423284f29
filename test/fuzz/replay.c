/*
 * replay.c - runs a fuzz target on files, without libFuzzer, so that the
 * committed corpus and every past finding are replayed by `make test` with
 * the normal compiler (and by `make asan` under the sanitizers).
 *
 *   replay_<target> [file|dir]...
 *
 * Without arguments: test/fuzz/corpus/<target>/ and
 * test/fuzz/regressions/<target>/ of the source tree.  Each input runs in
 * a child process, so that a crash names its file and does not hide the
 * next one; prints one TAP line per input and exits 1 when any failed.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "base/util.h"

#ifndef FUZZ_TARGET
#error "build with -DFUZZ_TARGET='\"name\"'"
#endif

/* Generous: an input takes milliseconds, but valgrind and ASan are slow. */
#define INPUT_TIMEOUT_SEC 120

static int n, failed;

/* The name shown for a file: relative to test/fuzz/ when inside it. */
static const char *shown(const char *path)
{
	static char prefix[4200];
	size_t len;

	snprintf(prefix, sizeof(prefix), "%s/test/fuzz/", fuzz_tree());
	len = strlen(prefix);
	return strncmp(path, prefix, len) ? path : path + len;
}

static void run_one(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	amp_error err;
	pid_t pid;
	int wstatus;

	if (amp_read_file(path, &buf, &len, &err) < 0) {
		printf("not ok %d - %s: %s\n", ++n, shown(path), err.message);
		failed++;
		return;
	}
	fflush(stdout);
	if ((pid = fork()) < 0) {
		printf("not ok %d - %s: fork: %s\n", ++n, shown(path), strerror(errno));
		failed++;
		free(buf);
		return;
	}
	if (pid == 0) {
		alarm(INPUT_TIMEOUT_SEC);
		LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
		free(buf);
		exit(0); /* runs the leak check of a sanitizer build */
	}
	free(buf);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
		printf("ok %d - %s\n", ++n, shown(path));
		return;
	}
	failed++;
	if (WIFSIGNALED(wstatus))
		printf("not ok %d - %s: killed by signal %d%s\n", ++n, shown(path),
		       WTERMSIG(wstatus),
		       WTERMSIG(wstatus) == SIGALRM ? " (timeout)" : "");
	else
		printf("not ok %d - %s: exit status %d\n", ++n, shown(path),
		       WEXITSTATUS(wstatus));
}

static void run_dir(const char *dir, int must_exist)
{
	struct dirent **names = NULL;
	char path[8400];
	int count, i;

	if ((count = scandir(dir, &names, NULL, alphasort)) < 0) {
		if (must_exist || errno != ENOENT) {
			printf("not ok %d - %s: %s\n", ++n, shown(dir), strerror(errno));
			failed++;
		}
		return;
	}
	for (i = 0; i < count; i++) {
		if (names[i]->d_name[0] != '.' && strcmp(names[i]->d_name, "README.md")) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			run_one(path);
		}
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	char dir[4200];
	struct stat sb;
	int i;

	LLVMFuzzerInitialize(&argc, &argv);
	if (argc < 2) {
		snprintf(dir, sizeof(dir), "%s/test/fuzz/corpus/%s", fuzz_tree(), FUZZ_TARGET);
		run_dir(dir, 1);
		snprintf(dir, sizeof(dir), "%s/test/fuzz/regressions/%s", fuzz_tree(), FUZZ_TARGET);
		run_dir(dir, 0);
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			run_dir(argv[i], 1);
		else
			run_one(argv[i]);
	}
	if (!n) {
		printf("not ok 1 - %s: no input replayed\n", FUZZ_TARGET);
		failed++;
	}
	printf("1..%d\n", n ? n : 1);
	return failed ? 1 : 0;
}
