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

/* The last second a commit amp writes can be dated: 2106-02-07T06:28:15Z.
 * libgit2 writes a signature's time as an unsigned 32-bit number, so a
 * later date would be stored as one in 1970 (and amp watch, reading the
 * arrival of its own escalations from their commits, would find them a
 * century late and escalate them again, without end). */
#define AMP_CLOCK_COMMIT_MAX_SEC 4294967295LL

/* AMP_OK when a commit can be dated `ms`; else AMP_EUSAGE, naming the
 * time and the bound, so that nothing is written with a wrong date. */
int amp_clock_check_commit(int64_t ms, amp_error *err);

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
