#include "human.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "util.h"

int amp_human_option(amp_human *h, int c, const char *arg, amp_error *err)
{
	switch (c) {
	case AMP_OPT_UTC:
		h->utc = 1;
		return 1;
	case AMP_OPT_NO_COLOR:
		h->color = AMP_COLOR_NEVER;
		return 1;
	case AMP_OPT_COLOR:
		/* git's spelling: a bare --color is "always". */
		if (!arg || !strcmp(arg, "always"))
			h->color = AMP_COLOR_ALWAYS;
		else if (!strcmp(arg, "never"))
			h->color = AMP_COLOR_NEVER;
		else if (!strcmp(arg, "auto"))
			h->color = AMP_COLOR_AUTO;
		else
			return amp_error_set(err, AMP_EUSAGE, "",
					     "--color: '%s' is not always, never or auto", arg);
		return 1;
	case AMP_OPT_NO_PAGER:
		h->no_pager = 1;
		return 1;
	case AMP_OPT_WIDE:
		h->wide = 1;
		return 1;
	default:
		return 0;
	}
}

static pid_t pager_pid = -1;

/* At exit: the pager sees the end of its input, and the shell prompt comes
 * back only after it has quit. */
static void wait_pager(void)
{
	int status;

	fflush(stdout);
	close(STDOUT_FILENO);
	while (waitpid(pager_pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* The pager command, as git picks it; NULL when there is none. The result
 * is the environment's string or a static copy of the config value. */
static const char *pager_command(git_repository *repo)
{
	static char from_config[4096];
	const char *p = getenv("AMP_PAGER");
	git_config *cfg = NULL, *snap = NULL;
	const char *v;

	if (!p) {
		if ((repo ? git_repository_config(&cfg, repo) : git_config_open_default(&cfg)) == 0 &&
		    git_config_snapshot(&snap, cfg) == 0 &&
		    git_config_get_string(&v, snap, "core.pager") == 0) {
			snprintf(from_config, sizeof(from_config), "%s", v);
			p = from_config;
		}
		git_config_free(snap);
		git_config_free(cfg);
	}
	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less";
	return *p && strcmp(p, "cat") ? p : NULL;
}

static void start_pager(git_repository *repo, amp_human *h)
{
	const char *cmd = pager_command(repo);
	int fd[2];
	pid_t pid;

	if (!cmd || pipe(fd) < 0)
		return;
	fflush(stdout);
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		dup2(fd[0], STDIN_FILENO);
		close(fd[0]);
		close(fd[1]);
		/* git's defaults: quit when it fits one screen, pass colour
		 * through, leave the screen as it is. */
		setenv("LESS", "FRX", 0);
		setenv("LV", "-c", 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	dup2(fd[1], STDOUT_FILENO);
	close(fd[0]);
	close(fd[1]);
	pager_pid = pid;
	h->paged = 1;
	atexit(wait_pager);
}

int amp_human_columns(void)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	char *end;
	long n;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (env && *env) {
		errno = 0;
		n = strtol(env, &end, 10);
		if (!errno && !*end && n >= 1 && n <= 10000)
			return (int)n;
	}
	return 80;
}

/* The length of the SGR sequence at s ("\033[...m"), 0 when none starts
 * there: amp's own colour, the only escape human output holds (amp_term
 * escapes every other control). */
static size_t sgr_len(const char *s)
{
	size_t i = 2;

	if (s[0] != '\033' || s[1] != '[')
		return 0;
	while ((s[i] >= '0' && s[i] <= '9') || s[i] == ';')
		i++;
	return s[i] == 'm' ? i + 1 : 0;
}

/* Writes the line s[0..len) fitted to width columns. */
static int fit_line(const char *s, size_t len, int width, FILE *out)
{
	size_t i = 0, cut = 0, n;
	int cols = 0, colored = 0;

	while (i < len) {
		if ((n = sgr_len(s + i))) {
			colored = 1;
			i += n;
			continue;
		}
		if (cols == width - 1)
			cut = i; /* where "..." goes, if the rest does not fit */
		if (++cols > width)
			break;
		/* to the next character: past the UTF-8 continuation bytes */
		for (i++; i < len && ((unsigned char)s[i] & 0xC0) == 0x80; i++)
			;
	}
	if (cols <= width)
		return fwrite(s, 1, len, out) == len ? 0 : EOF;
	if (fwrite(s, 1, cut, out) != cut || fputs("\xe2\x80\xa6", out) == EOF)
		return EOF;
	return colored ? fputs(AMP_SGR_RESET, out) : 0;
}

int amp_human_fit(const char *text, size_t len, int width, FILE *out)
{
	const char *end = text + len, *nl;

	if (width <= 0)
		return fwrite(text, 1, len, out) == len ? 0 : EOF;
	for (; text < end; text = nl + 1) {
		size_t n = (nl = memchr(text, '\n', (size_t)(end - text))) ? (size_t)(nl - text)
									    : (size_t)(end - text);

		if (fit_line(text, n, width, out) == EOF)
			return EOF;
		if (!nl)
			return 0;
		if (fputc('\n', out) == EOF)
			return EOF;
	}
	return 0;
}

FILE *amp_human_out(amp_human *h)
{
	if (!h->out)
		h->out = h->width > 0 ? open_memstream(&h->outbuf, &h->outlen) : NULL;
	if (!h->out)
		h->out = stdout;
	return h->out;
}

int amp_human_out_end(amp_human *h)
{
	int status = 0;

	if (h->out && h->out != stdout) {
		if (fclose(h->out) == 0 && h->outbuf)
			status = amp_human_fit(h->outbuf, h->outlen, h->width, stdout);
		free(h->outbuf);
		h->outbuf = NULL;
	}
	h->out = NULL;
	return fflush(stdout) == EOF ? EOF : status;
}

void amp_human_start(amp_human *h, git_repository *repo, int json, int pager)
{
	int tty = isatty(STDOUT_FILENO);
	amp_error err;

	/* Measured before the pager takes stdout: the terminal is behind it. */
	h->width = json || h->wide ? 0 : amp_human_columns();
	if (amp_clock_now_ms(&h->now_ms, &err) < 0)
		h->now_ms = 0;

	/* Decided before the pager takes stdout: the terminal is behind it. */
	if (json || h->color == AMP_COLOR_NEVER)
		h->color = 0;
	else if (h->color == AMP_COLOR_ALWAYS)
		h->color = 1;
	else
		h->color = amp_use_color(stdout);
	if (pager && tty && !json && !h->no_pager)
		start_pager(repo, h);
}

const char *amp_human_sgr(const amp_human *h, const char *sgr)
{
	return h->color ? sgr : "";
}

char *amp_human_time_ms(const amp_human *h, int64_t ms, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	/* Whole seconds, rounded down, also before 1970. */
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	struct tm tm;
	char rest[32];

	if (!(h->utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !strftime(rest, sizeof(rest), "%m-%d %H:%M:%S %z", &tm)) {
		snprintf(buf, AMP_HUMAN_TIME_BUFSZ, "%-*s", AMP_HUMAN_TIME_WIDTH, "?");
		return buf;
	}
	/* %Y does not pad years before 1000 to four digits. */
	snprintf(buf, AMP_HUMAN_TIME_BUFSZ, "%04d-%s", tm.tm_year + 1900, rest);
	return buf;
}

/* An ISO 8601 time `iso` as `fmt` writes its Unix ms: "-" for NULL, text
 * that is no time escaped (amp_human_time, amp_human_when). */
static const char *iso_as(const amp_human *h, const char *iso, char *buf,
			  char *(*fmt)(const amp_human *, int64_t, char *))
{
	int64_t ms;

	if (!iso)
		return "-";
	if (amp_time_parse(iso, &ms) < 0)
		return amp_term(iso);
	return fmt(h, ms, buf);
}

const char *amp_human_time(const amp_human *h, const char *iso, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	return iso_as(h, iso, buf, amp_human_time_ms);
}

char *amp_human_ago(int64_t then_ms, int64_t now_ms, char buf[AMP_HUMAN_REL_BUFSZ])
{
	char d[AMP_DURATION_BUFSZ];
	/* Whole seconds between the two, as the deadlines count them. */
	long long s = (long long)(now_ms / 1000 - then_ms / 1000);

	if (s == 0)
		snprintf(buf, AMP_HUMAN_REL_BUFSZ, "now");
	else if (s > 0)
		snprintf(buf, AMP_HUMAN_REL_BUFSZ, "%s ago", amp_duration_format(s, d));
	else
		snprintf(buf, AMP_HUMAN_REL_BUFSZ, "in %s", amp_duration_format(s, d));
	return buf;
}

char *amp_human_when_ms(const amp_human *h, int64_t ms, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	if (!h->width)
		return amp_human_time_ms(h, ms, buf);
	return amp_human_ago(ms, h->now_ms, buf);
}

const char *amp_human_when(const amp_human *h, const char *iso, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	return iso_as(h, iso, buf, amp_human_when_ms);
}

int amp_human_when_width(const amp_human *h)
{
	/* "59m ago", "in 23h", "2d3h ago"; a longer one ("23h59m ago")
	 * pushes the rest of its line on. */
	return h->width ? 8 : AMP_HUMAN_TIME_WIDTH;
}

struct timed {
	int64_t ms;
	size_t index;
};

static int by_time(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

size_t *amp_human_time_order(const json_t *array, const char *key)
{
	size_t n = json_array_size(array), i, *order = NULL;
	struct timed *t;

	if (!n || !(t = malloc(n * sizeof(*t))))
		return NULL;
	for (i = 0; i < n; i++) {
		const char *s = json_string_value(json_object_get(json_array_get(array, i), key));

		t[i].index = i;
		if (!s || amp_time_parse(s, &t[i].ms) < 0)
			t[i].ms = INT64_MAX;
	}
	qsort(t, n, sizeof(*t), by_time);
	if ((order = malloc(n * sizeof(*order))))
		for (i = 0; i < n; i++)
			order[i] = t[i].index;
	free(t);
	return order;
}
