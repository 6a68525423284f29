/*
 * tasklog.c - the task log, the protocol's data model that the store fills
 * (store.h, "The task log"): a task's records in order, the ones set
 * aside, the unreadable ones, and the index that finds a record by id.
 * Pure: no repository.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

const amp_policy amp_policy_default = {
	AMP_POLICY_LOCK_THRESHOLD, (int64_t)AMP_POLICY_HEARTBEAT_SEC * 1000,
	(int64_t)AMP_POLICY_CLOCK_SKEW_SEC * 1000, AMP_RISK_HIGH,
};

unsigned amp_risk_bit(const char *risk_level)
{
	if (!risk_level)
		return 0;
	return !strcmp(risk_level, "low") ? AMP_RISK_LOW :
	       !strcmp(risk_level, "medium") ? AMP_RISK_MEDIUM :
	       !strcmp(risk_level, "high") ? AMP_RISK_HIGH : 0;
}

int amp_task_log_add_bad(amp_task_log *log, int seq, amp_entry_kind kind, char *id,
			 const char *name, const char *reason)
{
	amp_bad_record *bigger, *b;

	if (!(bigger = realloc(log->bad, (log->nbad + 1) * sizeof(*bigger))))
		return -1;
	log->bad = bigger;
	b = &log->bad[log->nbad];
	b->seq = seq;
	b->kind = kind;
	b->id = id;
	b->name = strdup(name);
	b->reason = strdup(reason);
	if (!b->name || !b->reason) {
		free(b->name);
		free(b->reason);
		return -1;
	}
	log->nbad++;
	return 0;
}

int amp_entry_is_marker(const amp_entry *e, const char **record)
{
	const char *type, *from;

	/* Only a control record is one: a message or an ACK is answered
	 * without looking into it (every reader asks of every record). */
	*record = NULL;
	if (e->kind != AMP_ENTRY_CTL)
		return 0;
	type = json_string_value(json_object_get(e->doc, "type"));
	from = json_string_value(json_object_get(e->doc, "from"));
	*record = json_string_value(json_object_get(e->doc, "record"));
	return type && !strcmp(type, "superseded") && from && !strcmp(from, "system") &&
	       *record;
}

/* 1 when entry e is the record file `name`. */
static int entry_is_named(const amp_entry *e, const char *name)
{
	char buf[AMP_PATH_MAX];

	return amp_store_entry_name(e->seq, e->kind, e->id, buf, sizeof(buf)) == 0 &&
	       !strcmp(buf, name);
}

/* Moves each record a marker names, when it is the record right after the
 * marker (the next sequence number), from log->entries to log->superseded.
 * -1 when out of memory. */
static int set_aside_superseded(amp_task_log *log)
{
	size_t i, kept = 0;
	int aside_seq = -1;

	for (i = 0; i < log->count; i++) {
		amp_entry *e = &log->entries[i];
		const char *record;

		if (e->seq == aside_seq && kept > 0 &&
		    amp_entry_is_marker(&log->entries[kept - 1], &record) &&
		    entry_is_named(e, record)) {
			amp_entry *more = realloc(log->superseded,
						  (log->nsuperseded + 1) * sizeof(*more));

			if (!more)
				return -1;
			log->superseded = more;
			log->superseded[log->nsuperseded++] = *e;
			continue;
		}
		if (amp_entry_is_marker(e, &record))
			aside_seq = e->seq + 1;
		log->entries[kept++] = *e;
	}
	log->count = kept;
	return 0;
}

/*
 * The index behind amp_task_log_find: open addressing from (kind, id) to
 * the first entry holding them.  Rules look records up by id for each
 * record they check (the ACK of a message, the request a verdict answers),
 * so a scan per lookup made a task of n records cost n^2 compares per
 * pass, and amp watch --full, which checks each record against the records
 * before it, n^3: 2 s for a task of 1,000 records.  Entries are only ever
 * appended (amp_task_log_append), so the index grows with them; an entries
 * array it was not built for is indexed from scratch.
 */
struct amp_log_index {
	const amp_entry *entries; /* the array indexed */
	size_t indexed;           /* entries[0..indexed) are in the table */
	size_t cap;               /* slots, a power of two; 0: none yet */
	size_t *slots;            /* entry index + 1; 0: empty */
};

static size_t index_hash(amp_entry_kind kind, const char *id)
{
	return (size_t)amp_fnv1a_str(AMP_FNV1A_BASIS ^ (unsigned char)kind, id);
}

/* The slot of (kind, id): the one holding it, else the empty one where it
 * would go. */
static size_t *index_slot(struct amp_log_index *x, amp_entry_kind kind, const char *id)
{
	size_t i = index_hash(kind, id) & (x->cap - 1);

	while (x->slots[i]) {
		const amp_entry *e = &x->entries[x->slots[i] - 1];

		if (e->kind == kind && !strcmp(e->id, id))
			break;
		i = (i + 1) & (x->cap - 1);
	}
	return &x->slots[i];
}

/* Brings x up to log's first `count` entries; -1 when out of memory. */
static int index_update(struct amp_log_index *x, const amp_task_log *log)
{
	size_t i, *slot;

	if (x->entries != log->entries) {
		free(x->slots);
		memset(x, 0, sizeof(*x));
		x->entries = log->entries;
	}
	if (x->indexed >= log->count)
		return 0;
	if (log->count * 2 > x->cap) {
		size_t cap = 64;

		while (cap < log->count * 2)
			cap *= 2;
		free(x->slots);
		if (!(x->slots = calloc(cap, sizeof(*x->slots)))) {
			memset(x, 0, sizeof(*x));
			return -1;
		}
		x->cap = cap;
		x->indexed = 0;
		x->entries = log->entries;
	}
	for (i = x->indexed; i < log->count; i++) {
		slot = index_slot(x, log->entries[i].kind, log->entries[i].id);
		if (!*slot) /* the first one wins, as a scan finds it */
			*slot = i + 1;
	}
	x->indexed = log->count;
	return 0;
}

static void index_free(struct amp_log_index *x)
{
	if (x) {
		free(x->slots);
		free(x);
	}
}

int amp_task_log_settle(amp_task_log *log)
{
	if (set_aside_superseded(log) < 0)
		return -1;
	/* After the set-aside, which moves entries: the index is built for
	 * the array as lookups find it.  Without one, lookups scan. */
	log->index = calloc(1, sizeof(*log->index));
	return 0;
}

int amp_task_log_append(amp_task_log *log, int seq, amp_entry_kind kind, const char *id,
			json_t *doc, int aside)
{
	amp_entry **list = aside ? &log->superseded : &log->entries;
	size_t *count = aside ? &log->nsuperseded : &log->count;
	amp_entry *more = realloc(*list, (*count + 1) * sizeof(*more));
	char *copy = strdup(id);

	if (!more || !copy) {
		if (more)
			*list = more;
		free(copy);
		json_decref(doc);
		return -1;
	}
	*list = more;
	more[*count].seq = seq;
	more[*count].kind = kind;
	more[*count].id = copy;
	more[*count].doc = doc;
	(*count)++;
	if (seq >= log->next_seq)
		log->next_seq = seq + 1;
	return 0;
}

const amp_entry *amp_task_log_marker(const amp_task_log *log, const amp_entry *s)
{
	const char *record;
	size_t i;

	for (i = 0; i < log->count; i++)
		if (log->entries[i].seq == s->seq - 1 && amp_entry_is_marker(&log->entries[i], &record) &&
		    entry_is_named(s, record))
			return &log->entries[i];
	return NULL;
}

void amp_task_log_free(amp_task_log *log)
{
	size_t i;

	for (i = 0; i < log->count; i++) {
		free(log->entries[i].id);
		json_decref(log->entries[i].doc);
	}
	for (i = 0; i < log->nbad; i++) {
		free(log->bad[i].id);
		free(log->bad[i].name);
		free(log->bad[i].reason);
	}
	for (i = 0; i < log->nsuperseded; i++) {
		free(log->superseded[i].id);
		json_decref(log->superseded[i].doc);
	}
	free(log->entries);
	free(log->bad);
	free(log->superseded);
	index_free(log->index);
	log->index = NULL;
	log->entries = log->superseded = NULL;
	log->bad = NULL;
	log->count = log->nbad = log->nsuperseded = 0;
}

int amp_task_log_id_taken(const amp_task_log *log, const char *msg_id)
{
	size_t i;

	if (amp_task_log_find(log, AMP_ENTRY_MSG, msg_id))
		return 1;
	for (i = 0; i < log->nbad; i++)
		if (log->bad[i].kind == AMP_ENTRY_MSG && !strcmp(log->bad[i].id, msg_id))
			return 1;
	for (i = 0; i < log->nsuperseded; i++)
		if (log->superseded[i].kind == AMP_ENTRY_MSG && !strcmp(log->superseded[i].id, msg_id))
			return 1;
	return 0;
}

/* Entries compared by lookups that had no index (amp_task_log_scanned). */
static unsigned long scanned;

unsigned long amp_task_log_scanned(void)
{
	return scanned;
}

int amp_task_log_own_index(amp_task_log *log)
{
	log->index = calloc(1, sizeof(*log->index));
	return log->index ? 0 : -1;
}

void amp_task_log_view_free(amp_task_log *log)
{
	free(log->entries);
	index_free(log->index);
	log->entries = NULL;
	log->index = NULL;
	log->count = 0;
}

const amp_entry *amp_task_log_find(const amp_task_log *log,
				   amp_entry_kind kind, const char *msg_id)
{
	size_t i, *slot;

	/* An empty view has nothing indexed (and no table yet). */
	if (log->index && index_update(log->index, log) == 0 && log->index->cap) {
		slot = index_slot(log->index, kind, msg_id);
		/* a prefix view sees only its own entries */
		return *slot && *slot - 1 < log->count ? &log->entries[*slot - 1] : NULL;
	}
	for (i = 0; i < log->count; i++) {
		scanned++;
		if (log->entries[i].kind == kind &&
		    strcmp(log->entries[i].id, msg_id) == 0)
			return &log->entries[i];
	}
	return NULL;
}
