/*
 * clock.h - "now" and ISO 8601 times.
 *
 * Every command takes the current time from amp_clock_now_ms(), which honours
 * the AMP_NOW environment variable so that timeouts are testable without
 * sleeping.
 */
#ifndef AMP_CLOCK_H
#define AMP_CLOCK_H

#include <stdint.h>

#include "error.h"

/* The last second AMP_NOW may name: 9999-12-31T23:59:59Z. */
#define AMP_CLOCK_MAX_SEC 253402300799LL

/* Milliseconds since the Unix epoch: AMP_NOW when set (an ISO 8601 time with
 * offset, or an integer of Unix seconds, in the years 1970..9999), else the
 * system clock.  A malformed or out-of-range AMP_NOW is an AMP_EUSAGE error
 * rather than a silent fallback. */
int amp_clock_now_ms(int64_t *out, amp_error *err);

/* Parses an RFC 3339 / ISO 8601 date-time with a zone offset
 * ("2026-02-26T14:32:07+00:00", "2026-02-26T14:32:07.5Z") into Unix ms.
 * Returns 0, or -1 when s is not such a time (no offset, bad field ranges,
 * trailing text).  A leap second (:60) is accepted only at 23:59:60 UTC. */
int amp_time_parse(const char *s, int64_t *ms_out);

/* Writes ms as "YYYY-MM-DDTHH:MM:SS+00:00" (UTC, whole seconds, plus
 * ".mmm" when ms is not a whole second) into buf; returns buf. */
#define AMP_TIME_BUFSZ 40
char *amp_time_format(int64_t ms, char buf[AMP_TIME_BUFSZ]);

/* The monotonic clock in ms: for timeouts measured in real time, which
 * AMP_NOW does not shorten and a clock change does not move. */
int64_t amp_monotonic_ms(void);

#endif
