/*
 * reccache.h - the records of a long task, parsed once and kept between
 * processes (issue 12: a send into a task of 1,000 records costs about what
 * a send into a fresh task does).
 *
 * Reading a task inflates and parses every one of its records, and in a
 * task of a thousand records that was four fifths of a send.  For a task of
 * at least AMP_RECCACHE_MIN_RECORDS records, the reader (records.c read_task)
 * keeps each record it parsed in <state dir>/records/<task id>, keyed by
 * the record's blob id, in a binary form that loads without lexing: a blob
 * id names its content, and the file names the build that parsed it
 * (amp_build_id, cache.h; a file of another build is not read), so an
 * entry cannot go stale.  The file is written
 * again (temporary name, then rename) once AMP_RECCACHE_SLACK records had
 * to be parsed from git, so no read parses more than that many.  A file
 * that is not amp's, cut short or damaged (its CRC-32 does not match) is
 * ignored and written again.  It is as trusted as the rest of the git
 * directory: the checksum catches damage, not a forgery; a decoded record
 * is still a JSON value amp could have parsed (valid UTF-8, no NUL, no
 * duplicate member, nesting within AMP_LIMIT_DEPTH), or it is a miss.
 */
#ifndef AMP_RECCACHE_H
#define AMP_RECCACHE_H

#include <git2.h>
#include <jansson.h>
#include <stddef.h>

#include "store.h"

/* Shorter tasks parse in about the time the file takes to load. */
#define AMP_RECCACHE_MIN_RECORDS 64
/* Records parsed from git before the file is written again. */
#define AMP_RECCACHE_SLACK 16

typedef struct amp_reccache amp_reccache;

/* The cache of task_id under state_dir, or NULL when there is none or it
 * is not valid (then the records are parsed from git).  Free with
 * amp_reccache_free. */
amp_reccache *amp_reccache_load(const char *state_dir, const char *task_id);

/* The record of blob `id`, decoded: a new reference the caller owns; NULL
 * when the cache has none or its entry does not decode. */
json_t *amp_reccache_get(amp_reccache *c, const git_oid *id);

/*
 * Writes the cache of task_id: record entries[i].doc under blob ids[i] for
 * i < n (an entry of `old`, may be NULL, is copied as it is), then the entries of
 * `old` that are not among them (records of another version of the task:
 * a fetched ref, a tree read before), up to n of those, so the file stays
 * bounded.  Best effort: 0 when written, -1 when not (without it reads are
 * only slower).
 */
int amp_reccache_save(const char *state_dir, const char *task_id, const amp_reccache *old,
		      const git_oid *ids, const amp_entry *entries, size_t n);

void amp_reccache_free(amp_reccache *c);

/*
 * From now on, the records amp_reccache_get decodes live in memory this
 * process only gives back when it exits: each of a record's ~40 values is
 * a pointer bump instead of a malloc, and its json_decref a free of
 * nothing (a send into a task of 1,000 records: 53M -> 41M instructions).
 * At most 32 MiB (~13,000 records): past them, records come from malloc
 * again.  Installs jansson allocation functions for the whole
 * process (jansson's other values still come from malloc and go back to
 * free).  For a command that reads a bounded number of tasks and exits
 * (amp send, amp ack ...), never for one that runs on (amp watch): its
 * memory would only grow.  Does nothing under AddressSanitizer, so that
 * the records' lifetimes stay checked there.
 */
void amp_reccache_arena(void);

#endif
