/*
 * doccache.c - the records a batch's reads share (store_int.h).
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * Records shared among reads: during a batch (amp import), the records
 * read by the rules, by blob id: a record's rules read its whole task, so
 * without it the k-th record of a task parses the k - 1 before it again.
 * Blobs are immutable, so an entry cannot go stale; the table is emptied
 * when it is half full, which bounds it.  The documents are shared with
 * the logs that read them (a reference each): the rules only read them.
 * A batch keeps at most half of BATCH_SHARED (store_int.h) records parsed.
 */

struct doc_cache {
	struct doc_slot {
		git_oid id;
		json_t *doc; /* NULL: empty */
	} *slot;
	size_t slots, used; /* slots: a power of two */
};

static void doc_cache_clear(struct doc_cache *dc)
{
	size_t i;

	for (i = 0; i < dc->slots && dc->used; i++)
		if (dc->slot[i].doc) {
			json_decref(dc->slot[i].doc);
			dc->slot[i].doc = NULL;
			dc->used--;
		}
}

static struct doc_slot *doc_cache_slot(struct doc_cache *dc, const git_oid *id)
{
	size_t h;

	memcpy(&h, id->id, sizeof(h));
	for (h &= dc->slots - 1; dc->slot[h].doc && !git_oid_equal(&dc->slot[h].id, id);
	     h = (h + 1) & (dc->slots - 1))
		;
	return &dc->slot[h];
}

json_t *amp_store_docs_get(amp_store *st, const git_oid *id)
{
	struct doc_slot *slot;

	if (!st->docs || !(slot = doc_cache_slot(st->docs, id))->doc)
		return NULL;
	return json_incref(slot->doc);
}

void amp_store_docs_put(amp_store *st, const git_oid *id, json_t *doc)
{
	struct doc_slot *slot;

	if (!st->docs)
		return;
	if (st->docs->used >= st->docs->slots / 2)
		doc_cache_clear(st->docs);
	slot = doc_cache_slot(st->docs, id);
	if (slot->doc)
		return;
	git_oid_cpy(&slot->id, id);
	slot->doc = json_incref(doc);
	st->docs->used++;
}

void amp_store_docs_share(amp_store *st, size_t slots)
{
	size_t n = 16;

	if (st->docs) {
		doc_cache_clear(st->docs);
		free(st->docs->slot);
		free(st->docs);
		st->docs = NULL;
	}
	if (!slots)
		return;
	while (n < slots)
		n *= 2;
	/* Without it the reads are only slower. */
	if (!(st->docs = calloc(1, sizeof(*st->docs))))
		return;
	if (!(st->docs->slot = calloc(n, sizeof(*st->docs->slot)))) {
		free(st->docs);
		st->docs = NULL;
		return;
	}
	st->docs->slots = n;
}

void amp_store_share_records(amp_store *st, int on)
{
	if (!st->batch)
		amp_store_docs_share(st, on ? 2 * AMP_STORE_SHARED : 0);
}
