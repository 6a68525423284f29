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
#include <stdio.h>

#include "error.h"

/* getopt_long codes of the shared options, outside the range of chars. */
enum {
	AMP_OPT_UTC = 0x4801,
	AMP_OPT_NO_COLOR,
	AMP_OPT_COLOR,
	AMP_OPT_NO_PAGER,
	AMP_OPT_WIDE,
};

/* --utc, --wide, --no-color, --color[=<when>]: for commands that print
 * times and colour but page nothing (amp wait). */
#define AMP_HUMAN_TIME_OPTIONS                                         \
	{ "utc", no_argument, NULL, AMP_OPT_UTC },                     \
	{ "wide", no_argument, NULL, AMP_OPT_WIDE },                   \
	{ "no-color", no_argument, NULL, AMP_OPT_NO_COLOR },           \
	{ "color", optional_argument, NULL, AMP_OPT_COLOR }
/* ...and --no-pager, for the commands that page. */
#define AMP_HUMAN_OPTIONS AMP_HUMAN_TIME_OPTIONS,                      \
	{ "no-pager", no_argument, NULL, AMP_OPT_NO_PAGER }

/* For usage lines. */
#define AMP_HUMAN_TIME_USAGE "[--utc] [--wide] [--color[=<when>] | --no-color]"
#define AMP_HUMAN_USAGE AMP_HUMAN_TIME_USAGE " [--no-pager]"

typedef struct amp_human {
	int utc;       /* --utc: times in UTC rather than local time (TZ) */
	int color;     /* AMP_COLOR_*: what the options asked; after
			* amp_human_start, 1 when colour is on */
	int no_pager;  /* --no-pager */
	int paged;     /* amp_human_start started a pager */
	int wide;      /* --wide: every column in full, whatever the terminal */
	int width;     /* after amp_human_start: the columns a line may take
			* (amp_human_columns), 0 for no limit */
	int64_t now_ms; /* after amp_human_start: "now" for relative times */
	FILE *out;     /* amp_human_out's stream, NULL before */
	char *outbuf;  /* its memory, when it fits lines */
	size_t outlen;
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

/*
 * The columns human output is fitted to (issue 34, "every human output
 * fits 80 columns"): 0 (no limit) when stdout is not a terminal, so that
 * a pipe or a file gets every column in full; else the terminal's width,
 * else $COLUMNS (1..10000), else 80.  amp_human_start sets h->width from
 * it unless --wide or --json.
 */
int amp_human_columns(void);

/*
 * Writes text[0..len) (lines ending in '\n') to `out`, each line fitted to
 * `width` columns (0: as it is): a longer line is cut at a character
 * boundary, never inside a UTF-8 sequence or an SGR colour sequence, and
 * ends with "..." (U+2026) and, when it held colour, a colour reset.  A
 * column is a UTF-8 character (SGR sequences take none).  Returns what
 * 0, or EOF on a write error.
 */
int amp_human_fit(const char *text, size_t len, int width, FILE *out);

/*
 * Where a command prints its human lines, after amp_human_start: stdout
 * when there is no width limit, else a memory stream whose lines
 * amp_human_out_end fits to h->width and prints.  Never fails: stdout
 * when memory is short.
 */
FILE *amp_human_out(amp_human *h);

/* Prints and frees what amp_human_out collected (nothing when it was
 * stdout); then flushes stdout.  Returns 0, or EOF on a write error. */
int amp_human_out_end(amp_human *h);

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

/*
 * The one time format of human output (inbox, status, log, show, ready,
 * claim, wait): with no width limit (h->width 0: --wide, a pipe) the
 * absolute time as amp_human_time writes it; on a terminal, where the
 * columns count, the time relative to h->now_ms as amp_human_ago writes it
 * ("2h ago", "in 4m", "now").  NULL gives "-"; text that is no time is
 * returned escaped by amp_term.  The result is buf or amp_term's buffer.
 */
const char *amp_human_when(const amp_human *h, const char *iso,
			   char buf[AMP_HUMAN_TIME_BUFSZ]);

/* The same for a time in Unix ms; returns buf. */
char *amp_human_when_ms(const amp_human *h, int64_t ms, char buf[AMP_HUMAN_TIME_BUFSZ]);

/* The column amp_human_when's results take: AMP_HUMAN_TIME_WIDTH, or for
 * relative times 8 ("59m ago", "2d3h ago"; a longer one takes more). */
int amp_human_when_width(const amp_human *h);

/* The order in which to show the objects of `array`: by the time in their
 * member `key` (any offset, any precision), ties and times that do not
 * parse (which come last) in array order -- the order of the records'
 * sequence numbers.  Returns n indexes the caller frees, or NULL when
 * out of memory or the array is empty. */
size_t *amp_human_time_order(const json_t *array, const char *key);

#endif
