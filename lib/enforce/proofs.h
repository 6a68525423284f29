/*
 * proofs.h - which proof of its author each record carries (issue 32):
 * what `amp fsck --proofs` lists.  A record's own signature (recsig.h)
 * says who wrote the record; a commit's signature (sign.h) says who put
 * it on the ref, and proves the record's author only when that key may
 * write the record's role; an old SSOT's records may carry neither.
 */
#ifndef AMP_PROOFS_H
#define AMP_PROOFS_H

#include <jansson.h>

#include "base/error.h"
#include "store/store.h"

/* How many records carry each proof. */
typedef struct amp_proof_counts {
	size_t record;  /* a record signature verified for its role */
	size_t commit;  /* no record signature; its commit's signature is by a
			 * key of its role */
	size_t none;    /* neither (unsigned, or a signature that fails) */
} amp_proof_counts;

/*
 * Appends to `out` (a JSON array) one object per record of the messages
 * ref, oldest commit first: {"commit" (40 hex digits), "file", "from",
 * "proof": "record" | "commit" | "none", "principal" (the key's, for
 * "record" and "commit"), "reason" (for "none": why neither proves it)},
 * checked against amp.allowedSigners, and counts them.  AMP_EUSAGE when
 * there is no amp.allowedSigners (nothing to check a key against),
 * AMP_EIO when the ref cannot be walked.
 */
int amp_fsck_proofs(amp_store *st, json_t *out, amp_proof_counts *counts, amp_error *err);

#endif
