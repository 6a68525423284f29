#include "human.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void amp_human_start(amp_human *h, git_repository *repo, int json, int pager)
{
	int tty = isatty(STDOUT_FILENO);

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

const char *amp_human_time(const amp_human *h, const char *iso, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	int64_t ms;

	if (!iso)
		return "-";
	if (amp_time_parse(iso, &ms) < 0)
		return amp_term(iso);
	return amp_human_time_ms(h, ms, buf);
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
