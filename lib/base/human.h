/*
 * human.h - the conventions of amp's human output, shared by every read
 * command: times in one zone (local, or UTC with --utc) at one width,
 * relative times and durations in human units, colour only when wanted, and
 * a pager like git's for a terminal.
 *
 * A command adds AMP_HUMAN_OPTIONS (or AMP_HUMAN_TIME_OPTIONS) to its
 * getopt_long table, hands each option getopt returns that it does not know
 * to amp_human_option, and calls amp_human_start once it knows whether it
 * prints --json.
 */
#ifndef AMP_HUMAN_H
#define AMP_HUMAN_H

#include <getopt.h>
#include <git2.h>
#include <jansson.h>
#include <stdint.h>

#include "error.h"

/* getopt_long codes of the shared options, outside the range of chars. */
enum {
	AMP_OPT_UTC = 0x4801,
	AMP_OPT_NO_COLOR,
	AMP_OPT_COLOR,
	AMP_OPT_NO_PAGER,
};

/* --utc, --no-color, --color[=<when>]: for commands that print times and
 * colour but page nothing (amp wait). */
#define AMP_HUMAN_TIME_OPTIONS                                         \
	{ "utc", no_argument, NULL, AMP_OPT_UTC },                     \
	{ "no-color", no_argument, NULL, AMP_OPT_NO_COLOR },           \
	{ "color", optional_argument, NULL, AMP_OPT_COLOR }
/* ...and --no-pager, for the commands that page. */
#define AMP_HUMAN_OPTIONS AMP_HUMAN_TIME_OPTIONS,                      \
	{ "no-pager", no_argument, NULL, AMP_OPT_NO_PAGER }

/* For usage lines. */
#define AMP_HUMAN_TIME_USAGE "[--utc] [--color[=<when>] | --no-color]"
#define AMP_HUMAN_USAGE AMP_HUMAN_TIME_USAGE " [--no-pager]"

typedef struct amp_human {
	int utc;       /* --utc: times in UTC rather than local time (TZ) */
	int color;     /* AMP_COLOR_*: what the options asked; after
			* amp_human_start, 1 when colour is on */
	int no_pager;  /* --no-pager */
	int paged;     /* amp_human_start started a pager */
} amp_human;

enum { AMP_COLOR_AUTO = 0, AMP_COLOR_NEVER, AMP_COLOR_ALWAYS };

/* Takes one getopt_long result `c` (with its `arg`): returns 1 when it is
 * one of the shared options (recorded in h), 0 when it is not, AMP_EUSAGE
 * for a --color value other than always, never or auto (with err). */
int amp_human_option(amp_human *h, int c, const char *arg, amp_error *err);

/*
 * Settles colour and the pager for stdout, before the first output.
 * Colour: never with --json or --no-color/--color=never; always with
 * --color=always or a bare --color (they override NO_COLOR, as a flag
 * given for one run should); else on a TTY only, NO_COLOR (any non-empty
 * value) and TERM=dumb turning it off.  Pager, when `pager` is true and
 * stdout is a TTY, never with --json or --no-pager: $AMP_PAGER, else git
 * config core.pager (of `repo` when not NULL, else the global and
 * system configuration), else $PAGER, else "less"; an empty value or
 * "cat" is none.  It runs under "/bin/sh -c" with LESS=FRX and LV=-c unless
 * set, reading what the command writes to stdout; an exit handler closes
 * stdout and waits for it.  A pager that cannot be started is skipped.
 */
void amp_human_start(amp_human *h, git_repository *repo, int json, int pager);

/* SGR sequences, or "" when colour is off. */
const char *amp_human_sgr(const amp_human *h, const char *sgr);
#define AMP_SGR_RED "\033[31m"
#define AMP_SGR_GREEN "\033[32m"
#define AMP_SGR_YELLOW "\033[33m"
#define AMP_SGR_RESET "\033[0m"

/* Width of every time amp shows to a human: "2026-02-26 15:32:07 +0100". */
#define AMP_HUMAN_TIME_WIDTH 25
#define AMP_HUMAN_TIME_BUFSZ 64

/*
 * An ISO 8601 time as written in a record (any offset, any precision), for
 * a human: in local time or UTC (h->utc), whole seconds, with the offset,
 * always AMP_HUMAN_TIME_WIDTH characters: "2026-02-26 15:32:07 +0100".
 * NULL gives "-"; text that is no such time is returned escaped by
 * amp_term (it is data).  The result is buf or amp_term's buffer.
 */
const char *amp_human_time(const amp_human *h, const char *iso,
			   char buf[AMP_HUMAN_TIME_BUFSZ]);

/* The same for a time in Unix ms; returns buf. */
char *amp_human_time_ms(const amp_human *h, int64_t ms,
			char buf[AMP_HUMAN_TIME_BUFSZ]);

/* `then` relative to `now` (both Unix ms), whole seconds: "2h ago",
 * "in 4m", "now" (less than a second apart).  Returns buf. */
#define AMP_HUMAN_REL_BUFSZ 48
char *amp_human_ago(int64_t then_ms, int64_t now_ms, char buf[AMP_HUMAN_REL_BUFSZ]);

/* The order in which to show the objects of `array`: by the time in their
 * member `key` (any offset, any precision), ties and times that do not
 * parse (which come last) in array order -- the order of the records'
 * sequence numbers.  Returns n indexes the caller frees, or NULL when
 * out of memory or the array is empty. */
size_t *amp_human_time_order(const json_t *array, const char *key);

#endif
