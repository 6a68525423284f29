/* tap.h - the TAP lines of the C test programs, which test/run counts:
 * ok() reports one check; tap_done() prints the plan and is main's exit
 * status. */
#ifndef AMP_TEST_TAP_H
#define AMP_TEST_TAP_H

#include <stdio.h>

static int tap_count, tap_failed;

static void ok(int cond, const char *name)
{
	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_count, name);
}

static int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
