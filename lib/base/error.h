/*
 * error.h - status codes and the error record every libamp function fills.
 *
 * Library functions return AMP_OK (0) or one of the negative AMP_E* codes
 * below and describe the failure in an amp_error; they never print and never
 * exit.  Only cmd/ decides what to print, and amp_exit_code() maps a status to
 * the documented process exit code.
 */
#ifndef AMP_ERROR_H
#define AMP_ERROR_H

#include <stddef.h>

/* Statuses; the exit code of a command is the negated status. */
#define AMP_OK       0
#define AMP_ESCHEMA  (-1) /* a message does not conform to its schema  (exit 1) */
#define AMP_EUSAGE   (-2) /* bad command line                          (exit 2) */
#define AMP_ERULE    (-3) /* refused by a protocol rule                (exit 3) */
#define AMP_EIO      (-4) /* repository, file or system failure        (exit 4) */
#define AMP_ECLAIMED (-6) /* amp claim: another instance holds it      (exit 6) */

#define AMP_PATH_MAX 512
#define AMP_MSG_MAX  1024

/* One error: a status, the JSON pointer of the failing value ("" when the
 * error is not about a value) and a one-line human reason. */
typedef struct amp_error {
	int status;
	char path[AMP_PATH_MAX];
	char message[AMP_MSG_MAX];
} amp_error;

/* Fills err (when not NULL) and returns status, so callers can write
 * `return amp_error_set(err, AMP_EIO, "", "cannot read %s", file);`.
 * path may be NULL for "". */
int amp_error_set(amp_error *err, int status, const char *path,
		  const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* 1 when libgit2's last error (git_error_last) is memory running out: an
 * allocation of its own (GIT_ERROR_NOMEMORY), or a zlib stream that could
 * not start (libgit2 says "failed to init zlib stream", as a zlib error:
 * zlib's inflateInit fails for memory only).  A caller that would take an
 * unreadable object for a damaged one asks this first. */
int amp_error_git_out_of_memory(void);

/* Like amp_error_set, with the reason of the last libgit2 error appended
 * (and "out of memory" after a zlib stream that could not start). */
int amp_error_git(amp_error *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Clears err to "no error". */
void amp_error_clear(amp_error *err);

/* The process exit code for a status: 0 for AMP_OK, 1..4 and 6 for AMP_E*. */
int amp_exit_code(int status);

/* A growable list of errors, for operations (like schema validation) that
 * report every problem rather than the first one.  Zero-initialise it;
 * release with amp_errlist_free. */
typedef struct amp_errlist {
	amp_error *items;
	size_t count;
	size_t alloc;
} amp_errlist;

/* Appends an error; returns status (or AMP_EIO if out of memory). */
int amp_errlist_add(amp_errlist *list, int status, const char *path,
		    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Appends every error of src to dst (src is left untouched). */
int amp_errlist_extend(amp_errlist *dst, const amp_errlist *src);

/* Drops the entries from index `count` onwards (used to roll back the errors
 * of a failed anyOf/oneOf branch). */
void amp_errlist_truncate(amp_errlist *list, size_t count);

void amp_errlist_free(amp_errlist *list);

#endif
