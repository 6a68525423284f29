/*
 * import.h - amp import: a log of AMP records (JSON lines of whole message
 * envelopes, as amp send --envelope takes them, and ACK records, as amp ack
 * writes them) committed to the SSOT in one process and one ref update.
 */
#ifndef AMP_IMPORT_H
#define AMP_IMPORT_H

#include <stdio.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

typedef struct amp_import_result {
	size_t imported;    /* records of the input written, one commit each */
	size_t duplicates;  /* records already in the SSOT as they are */
	size_t escalations; /* records amp wrote with them: a lock, a
			     * conflict, an ack_timeout, as amp send does */
	size_t lines;       /* lines read */
	size_t line;        /* the line that failed (0: none) */
	char tip[GIT_OID_HEXSZ + 1]; /* the messages ref after the import */
} amp_import_result;

/*
 * Reads `in` (any stream: a pipe is spooled to a temporary file, so that
 * the records can be read again if a writer outside amp moves the ref
 * meanwhile) and commits every record, in the order of the lines, as
 * amp_send_import_record checks and writes it: one commit per record, all
 * built in memory on the tip and the ref moved once, by compare-and-swap
 * (amp_store_update_batch).  Empty lines are skipped; a line is at most
 * AMP_LIMIT_MESSAGE_BYTES.  All or nothing: the first line that fails
 * stops the import with nothing written, its number in res->line and its
 * reasons in `errors` (paths within the record); the status is that of the
 * failure (AMP_ESCHEMA, AMP_ERULE, AMP_EIO).
 */
int amp_import(amp_store *st, amp_schema_set *set, FILE *in,
	       amp_import_result *res, amp_errlist *errors);

#endif
