#include "clock.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil), so no libc time zone is involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

static int digits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int dim[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dim[m - 1];
}

int amp_time_parse(const char *s, int64_t *ms_out)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, frac_ms = 0;
	int64_t t;

	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
	    *p++ != '-' || digits(&p, 2, &d))
		return -1;
	if (*p != 'T' && *p != 't')
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
	    *p++ != ':' || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		int n = 0;

		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (n < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
			n++;
			p++;
		}
		for (; n < 3; n++)
			frac_ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
			return -1;
		if (oh > 23 || om > 59)
			return -1;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	if (sec == 60) {
		/* RFC 3339 §5.7: a leap second is the last second of a UTC day. */
		int utc_min = h * 60 + mi - sign * (oh * 60 + om);

		utc_min = ((utc_min % 1440) + 1440) % 1440;
		if (utc_min != 23 * 60 + 59)
			return -1;
	}
	t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + (sec == 60 ? 59 : sec);
	t -= (int64_t)sign * (oh * 3600 + om * 60);
	if (ms_out)
		*ms_out = t * 1000 + frac_ms;
	return 0;
}

char *amp_time_format(int64_t ms, char buf[AMP_TIME_BUFSZ])
{
	int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
	int64_t rem = secs - days * 86400;
	int msec = (int)(ms - secs * 1000);
	unsigned m, d;
	int y, n;

	civil_from_days(days, &y, &m, &d);
	n = snprintf(buf, AMP_TIME_BUFSZ, "%04d-%02u-%02uT%02d:%02d:%02d", y, m,
		     d, (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
	if (n < 0 || n >= AMP_TIME_BUFSZ - 12)
		return buf;
	if (msec)
		n += snprintf(buf + n, AMP_TIME_BUFSZ - (size_t)n, ".%03d", msec);
	snprintf(buf + n, AMP_TIME_BUFSZ - (size_t)n, "+00:00");
	return buf;
}

int amp_clock_check_commit(int64_t ms, amp_error *err)
{
	char when[AMP_TIME_BUFSZ], max[AMP_TIME_BUFSZ];

	if (ms >= 0 && ms / 1000 <= AMP_CLOCK_COMMIT_MAX_SEC)
		return AMP_OK;
	return amp_error_set(err, AMP_EUSAGE, "",
			     "%s is past %s, the last time a commit can be dated (git, as libgit2 writes it, holds 32 bits): nothing was written",
			     amp_time_format(ms, when), amp_time_format(AMP_CLOCK_COMMIT_MAX_SEC * 1000, max));
}

int amp_clock_now_ms(int64_t *out, amp_error *err)
{
	const char *env = getenv("AMP_NOW");
	struct timespec ts;

	if (env && *env) {
		long long secs;

		/* Years 1970..9999: what a message's timestamp can carry. */
		if (amp_time_parse(env, out) == 0) {
			if (*out >= 0 && *out <= AMP_CLOCK_MAX_SEC * 1000 + 999)
				return AMP_OK;
			return amp_error_set(err, AMP_EUSAGE, "",
					     "AMP_NOW: %s is out of range (years 1970..9999)",
					     env);
		}
		if (strspn(env, "-0123456789") != strlen(env))
			return amp_error_set(err, AMP_EUSAGE, "",
					     "AMP_NOW: '%s' is neither an ISO 8601 time with offset nor Unix seconds",
					     env);
		if (amp_parse_int("AMP_NOW", env, 0, AMP_CLOCK_MAX_SEC, &secs, err) < 0)
			return AMP_EUSAGE;
		*out = (int64_t)secs * 1000;
		return AMP_OK;
	}
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return amp_error_set(err, AMP_EIO, "", "clock_gettime: %s",
				     strerror(errno));
	*out = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return AMP_OK;
}

int64_t amp_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
