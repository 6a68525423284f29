/*
 * task_fold.c - a task's state after each of its records, in one pass
 * (task_fold.h).
 */
#include "task_fold.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "record/record.h"

void amp_task_fold_init(amp_task_fold *f)
{
	memset(f, 0, sizeof(*f));
}

void amp_task_fold_free(amp_task_fold *f)
{
	amp_task_state_free(&f->s);
	free(f->pending);
	free(f->named);
	memset(f, 0, sizeof(*f));
}

static size_t name_slot(const amp_task_fold *f, const char *id)
{
	size_t h = (size_t)amp_fnv1a_str(AMP_FNV1A_BASIS, id) & (f->nslots - 1);

	while (f->named[h] && strcmp(f->named[h], id))
		h = (h + 1) & (f->nslots - 1);
	return h;
}

static int is_named(const amp_task_fold *f, const char *id)
{
	return f->nnamed && f->named[name_slot(f, id)];
}

/* Adds id (borrowed) to the set; -1 when out of memory. */
static int add_named(amp_task_fold *f, const char *id)
{
	if (!id)
		return 0;
	if (2 * (f->nnamed + 1) > f->nslots) {
		const char **old = f->named;
		size_t i, n = f->nslots;

		f->nslots = n ? 2 * n : 16;
		if (!(f->named = calloc(f->nslots, sizeof(*f->named)))) {
			f->named = old;
			f->nslots = n;
			return -1;
		}
		for (i = 0; i < n; i++)
			if (old[i])
				f->named[name_slot(f, old[i])] = old[i];
		free(old);
	}
	if (!f->named[name_slot(f, id)]) {
		f->named[name_slot(f, id)] = id;
		f->nnamed++;
	}
	return 0;
}

/* The ids record e names that a later record may answer: the dispatch an
 * approve approves, the requests a verdict's context_ref names (whether
 * its writer was allowed to or not: more than needed is only slower). */
static int note_names(amp_task_fold *f, const amp_entry *e)
{
	const char *type = amp_json_str(e->doc, "type");
	const json_t *v;
	size_t i;

	if (!type)
		return 0;
	if (e->kind == AMP_ENTRY_CTL && !strcmp(type, "approve"))
		return add_named(f, amp_json_str(e->doc, "approves"));
	if (e->kind == AMP_ENTRY_MSG && !strcmp(type, "review_verdict"))
		json_array_foreach(json_object_get(e->doc, "context_ref"), i, v)
			if (add_named(f, json_string_value(v)) < 0)
				return -1;
	return 0;
}

/* ACK e makes the latest message awaiting it (of its id) the last
 * successful one when it comes after the current one. */
static void promote(amp_task_fold *f, const amp_task_log *view, const amp_entry *e)
{
	size_t k = f->npending;

	while (k-- > 0)
		if (!strcmp(view->entries[f->pending[k]].id, e->id))
			break;
	if (k == (size_t)-1 || f->pending[k] + 1 <= f->last_success)
		return;
	f->last_success = f->pending[k] + 1;
	f->s.last_successful_msg_id = view->entries[f->pending[k]].id;
	/* the messages before it can no longer be the last successful one */
	memmove(f->pending, f->pending + k + 1, (f->npending - k - 1) * sizeof(*f->pending));
	f->npending -= k + 1;
}

/* Applies entry j of view (its last, or any when refolding). */
static int apply(amp_task_fold *f, const amp_task_log *view, size_t j)
{
	const amp_entry *e = &view->entries[j];
	int r;

	if (note_names(f, e) < 0)
		return -1;
	r = amp_task_state_step(view, &f->s, &f->alloc, j);
	if (e->kind == AMP_ENTRY_ACK)
		promote(f, view, e);
	if (r == AMP_STEP_SUCCESS) {
		f->last_success = j + 1;
		f->npending = 0;
	} else if (r == AMP_STEP_UNACKED) {
		if (f->npending == f->palloc) {
			size_t n = f->palloc ? 2 * f->palloc : 16;
			size_t *grown = realloc(f->pending, n * sizeof(*grown));

			if (!grown)
				return -1;
			f->pending = grown;
			f->palloc = n;
		}
		f->pending[f->npending++] = j;
	}
	return 0;
}

/* Every record of view again, each with lookups into all of them:
 * amp_task_state_compute's own pass. */
static int refold(amp_task_fold *f, const amp_task_log *view)
{
	size_t j;

	amp_task_state_free(&f->s);
	f->alloc = f->npending = f->last_success = 0;
	if (f->named)
		memset(f->named, 0, f->nslots * sizeof(*f->named));
	f->nnamed = 0;
	amp_task_state_begin(view, &f->s);
	for (j = 0; j < view->count; j++)
		if (apply(f, view, j) < 0)
			return -1;
	return 0;
}

/* 1 when e, the last record of view, changes what an earlier record
 * applied: a message whose ACK came before it (that ACK moved nothing),
 * or one an approve or a verdict named; an ACK of a dispatch an approve
 * named (the approve looked for it). */
static int changes_earlier(const amp_task_fold *f, const amp_task_log *view, const amp_entry *e)
{
	if (e->kind == AMP_ENTRY_MSG && amp_task_log_find(view, AMP_ENTRY_ACK, e->id))
		return 1;
	return e->kind != AMP_ENTRY_CTL && e->id && is_named(f, e->id);
}

const amp_task_state *amp_task_fold_to(amp_task_fold *f, const amp_task_log *log, size_t n)
{
	amp_task_log view = *log;
	size_t j;

	if (n < f->upto || !f->upto) {
		view.count = n;
		if (refold(f, &view) < 0)
			return NULL;
		f->upto = n;
	}
	for (j = f->upto; j < n; j++) {
		view.count = j + 1;
		if (!changes_earlier(f, &view, &log->entries[j])) {
			if (apply(f, &view, j) < 0)
				return NULL;
		} else if (refold(f, &view) < 0) {
			return NULL;
		} else {
			f->refolds += view.count;
		}
	}
	f->upto = n;
	amp_task_state_end(&f->s);
	return &f->s;
}
