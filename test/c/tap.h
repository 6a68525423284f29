/* tap.h - the TAP lines of the C test programs, which test/run counts:
 * ok() reports one check; tap_done() prints the plan and is main's exit
 * status. */
#ifndef AMP_TEST_TAP_H
#define AMP_TEST_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

static int tap_count, tap_failed;

static void ok(int cond, const char *name)
{
	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_count, name);
}

/* A check that does not apply to this build. */
static inline void tap_skip(const char *name, const char *why)
{
	printf("ok %d - %s # skip %s\n", ++tap_count, name, why);
}

/* The source tree, into buf: beside the build directory (build/test/, or
 * build/asan/test/ under make asan).  -1 when it is not there. */
static inline int tap_source_dir(char *buf, size_t bufsz)
{
	static const char *const up[] = { "/../..", "/../../.." };
	char exe[4096], probe[4200];
	size_t i;

	if (amp_exe_dir(exe, sizeof(exe)) < 0)
		return -1;
	for (i = 0; i < sizeof(up) / sizeof(up[0]); i++) {
		snprintf(probe, sizeof(probe), "%s%s/schemas/message.schema.json", exe, up[i]);
		if (access(probe, R_OK) == 0) {
			snprintf(buf, bufsz, "%s%s", exe, up[i]);
			return 0;
		}
	}
	return -1;
}

/* Removes the temporary directory a test made (mkdtemp), reporting a
 * failure as a check. */
static inline void tap_remove_dir(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ok(0, "remove the test directory");
}

static int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
