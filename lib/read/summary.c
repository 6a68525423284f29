/*
 * summary.c - the cached one-line summaries of `amp status` (summary.h).
 *
 * The cache is a text file of one line per task, its fields separated by
 * tabs, so that loading 25,000 tasks is one read and a split of lines, not
 * the parse of a JSON document of 6 MB into 25,000 objects (at 100,000
 * messages that parse was 55% of a warm `amp status`, and its objects 100
 * MB of memory).  The first line says what the file is and the policy it
 * was made under:
 *
 *   amp-status-cache 4 <TAB> <build> <TAB> <policy>
 *
 * then, per task:
 *
 *   task  tree  state  rejects  suspended  locked  messages  unreadable
 *   last_timestamp  deadlines  leases  deps  team
 *
 * task (escaped: it is a tree entry's name, which may hold any byte but
 * NUL and '/'), the task directory's tree id (40 hex digits), the state
 * (lower case and '_'), four counts and two 0/1 flags, the last message's
 * timestamp ("-" when there is none, "s" and the escaped string, or "j"
 * and its JSON text when it is not a string), the ACK deadlines in Unix ms
 * separated by commas, the leases and the dependencies as compact JSON
 * (empty when there are none: most tasks), and what a team reports
 * (issue 33) as compact JSON {"progress", "questions", "released"}
 * (protocol/progress.h, question.h, coord.h; empty when the task has
 * none).  Escaped: '\' as "\\" and every
 * byte below 0x20 and 0x7f as "\xHH", so that no field holds a tab or a
 * newline.  A line that does not read back is ignored (the task is read
 * from its records and the line written again); a file whose first line is
 * not this one, or is of another build (amp_build_id, cache.h: a build may
 * derive states otherwise) or policy, is ignored whole, and so is one that
 * is not a regular file or is larger than amp_cache_bound.
 */
#include <errno.h>
#include "base/gitobj.h"
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/tempfile.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "summary.h"
#include "json/json.h"

#define CACHE_MAGIC "amp-status-cache 4"

/* The time-free summary of one task. */
struct sentry {
	char *task;
	git_oid tree;       /* the task directory's tree */
	char state[24];
	int reject_count, suspended, locked, messages, unreadable;
	char last_kind;     /* '-' none, 's' string, 'j' other JSON */
	char *last;         /* the string, or the JSON text; NULL for '-' */
	int64_t *deadlines; /* ACK deadlines of the messages still waiting */
	size_t ndeadlines;
	char *leases;       /* compact JSON, NULL when none */
	char *deps;         /* compact JSON, NULL when none */
	char *team;         /* compact JSON {"progress", "questions",
			     * "released"}, NULL when the task has none */
	/* Loaded and not read yet: the line's fields after the task, in the
	 * cache's buffer (only task is set); read at the first lookup
	 * (parsed()), written back as they are.  Parsing 25,000 lines was
	 * most of a listing that shows a few open tasks. */
	const char *raw;
	size_t rawlen;
	int borrowed;       /* task points into the cache's buffer */
	int fresh;          /* summarized by this run: written out by spill() */
};

/* A shard directory (tasks/<year>/<shard>) as the default listing last
 * saw it: its tree, how many task directories it holds, and those of them
 * that are not finished (amp_summary_finished), with their trees. */
struct shard {
	char *path;        /* "<year>/<shard>" */
	git_oid tree;
	size_t ntasks, nopen;
	struct open_task {
		char *task;
		git_oid tree;
	} *open;
	int seen;          /* in the listing of this run: written back */
};

struct amp_summaries {
	amp_store *st;
	struct sentry *v;
	size_t n, alloc;
	size_t *slots;  /* open addressing: 1 + the index in v, 0 empty */
	size_t nslots;  /* a power of 2, at least twice n */
	git_odb *odb;  /* the store's, opened at the first hit */
	char policy[128];
	int dirty;
	char *buf;     /* the file as loaded: the raw lines point into it */
	struct shard *shards; /* sorted by path */
	size_t nshards;
	int shards_loaded, shards_dirty;
	/* The new cache, begun when the summaries made by this run passed
	 * SPILL_BYTES (spill()); finished by amp_summaries_close. */
	amp_tempfile spill;
	FILE *spill_f;
	size_t fresh_bytes; /* what the fresh entries held take (sentry_bytes) */
};

/*
 * At most this much of the summaries a run makes is held in memory: past
 * it they are written to the new cache file and dropped (spill()), so that
 * a first listing of an SSOT of 250,000 tasks (1M messages) holds a few
 * thousand summaries at a time instead of all of them, whatever the
 * tasks hold (a last timestamp, leases, dependencies and a team report of
 * up to a record's size each).
 */
#define SPILL_BYTES ((size_t)4 << 20)

static void save_shards(amp_summaries *c);
static void shard_free(struct shard *s);

static void cache_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/status.cache", amp_store_state_dir(st));
}

/* The build and the settings the states depend on, as one string. */
static void policy_key(amp_store *st, char *buf, size_t bufsz)
{
	const amp_policy *p = amp_store_policy(st);

	snprintf(buf, bufsz, "%s\t%d %u %lld", amp_build_id(), p->lock_threshold,
		 p->approval_levels, (long long)p->max_clock_skew_ms);
}

static void sentry_free(struct sentry *e)
{
	if (!e->borrowed)
		free(e->task);
	free(e->last);
	free(e->deadlines);
	free(e->leases);
	free(e->deps);
	free(e->team);
	memset(e, 0, sizeof(*e));
}

/* ---- the text format ------------------------------------------------------- */

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '\\')
			fputs("\\\\", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			putc(ch, f);
	}
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* A new string from field [s, s + len) unescaped; NULL when it is not
 * what put_escaped writes. */
static char *unescaped(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	if (!memchr(s, '\\', len)) {
		/* nothing escaped: most fields */
		memcpy(out, s, len);
		out[len] = '\0';
		return out;
	}
	for (i = 0; i < len; i++) {
		if (s[i] != '\\') {
			*o++ = s[i];
		} else if (i + 1 < len && s[i + 1] == '\\') {
			*o++ = '\\';
			i++;
		} else if (i + 3 < len && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 &&
			   hexval(s[i + 3]) >= 0 && (hexval(s[i + 2]) << 4 | hexval(s[i + 3])) != 0) {
			*o++ = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
			i += 3;
		} else {
			free(out);
			return NULL;
		}
	}
	*o = '\0';
	return out;
}

/* A count or flag of [s, s + len): 0..max, else -1. */
static long long number(const char *s, size_t len, long long max)
{
	long long v = 0;
	size_t i;

	if (!len || len > 19)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= max ? v : -1;
}

static int oid_of_hex(const char *s, size_t len, git_oid *out)
{
	size_t i;

	if (len != GIT_OID_HEXSZ)
		return -1;
	for (i = 0; i < GIT_OID_HEXSZ; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out->id[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Splits [line, line + len) at its tabs into at most max fields; the
 * count, or 0 when there are more.  (memchr: a byte at a time, the split
 * was most of loading 25,000 lines.) */
static size_t split_tabs(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
	size_t k = 0, start = 0;

	for (;;) {
		const char *tab = memchr(line + start, '\t', len - start);

		if (k == max)
			return 0;
		f[k] = line + start;
		flen[k++] = (tab ? (size_t)(tab - line) : len) - start;
		if (!tab)
			return k;
		start = (size_t)(tab - line) + 1;
	}
}

/* Parses the fields of a task line after its task (tree to deps) into e,
 * whose task is not set yet; 0, or -1 (e left empty) when they are not
 * what this file writes. */
static int parse_rest(const char *rest, size_t len, struct sentry *e)
{
	const char *f[13];
	size_t flen[13], i;
	long long v;

	/* f[0], the task, is the caller's */
	if (split_tabs(rest, len, f + 1, flen + 1, 12) != 12 || !flen[2] ||
	    flen[2] >= sizeof(e->state) || oid_of_hex(f[1], flen[1], &e->tree) < 0)
		goto bad;
	for (i = 0; i < flen[2]; i++)
		if (!((f[2][i] >= 'a' && f[2][i] <= 'z') || f[2][i] == '_'))
			goto bad;
	memcpy(e->state, f[2], flen[2]);
	if ((v = number(f[3], flen[3], INT_MAX)) < 0 || (e->reject_count = (int)v, 0) ||
	    (v = number(f[4], flen[4], 1)) < 0 || (e->suspended = (int)v, 0) ||
	    (v = number(f[5], flen[5], 1)) < 0 || (e->locked = (int)v, 0) ||
	    (v = number(f[6], flen[6], INT_MAX)) < 0 || (e->messages = (int)v, 0) ||
	    (v = number(f[7], flen[7], INT_MAX)) < 0 || (e->unreadable = (int)v, 0))
		goto bad;
	if (!flen[8] || (f[8][0] == '-' && flen[8] != 1) ||
	    (f[8][0] != '-' && f[8][0] != 's' && f[8][0] != 'j'))
		goto bad;
	e->last_kind = f[8][0];
	if (e->last_kind != '-' && !(e->last = unescaped(f[8] + 1, flen[8] - 1)))
		goto bad;
	if (flen[9]) {
		const char *p = f[9], *end = f[9] + flen[9];

		e->ndeadlines = 1;
		for (i = 0; i < flen[9]; i++)
			e->ndeadlines += f[9][i] == ',';
		if (!(e->deadlines = calloc(e->ndeadlines, sizeof(*e->deadlines))))
			goto bad;
		for (i = 0; i < e->ndeadlines; i++) {
			const char *comma = memchr(p, ',', (size_t)(end - p));
			size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);

			/* a deadline before 1970 is negative */
			int neg = n && *p == '-';

			if ((v = number(p + neg, n - (size_t)neg, INT64_MAX / 2)) < 0)
				goto bad;
			e->deadlines[i] = neg ? -(int64_t)v : (int64_t)v;
			p += n + 1;
		}
	}
	if ((flen[10] && !(e->leases = unescaped(f[10], flen[10]))) ||
	    (flen[11] && !(e->deps = unescaped(f[11], flen[11]))) ||
	    (flen[12] && !(e->team = unescaped(f[12], flen[12]))))
		goto bad;
	return 0;
bad:
	sentry_free(e);
	return -1;
}

static void put_line(FILE *f, const struct sentry *e)
{
	char hex[GIT_OID_HEXSZ + 1];
	size_t i;

	put_escaped(f, e->task);
	fprintf(f, "\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%c", git_oid_tostr(hex, sizeof(hex), &e->tree),
		e->state, e->reject_count,
		e->suspended, e->locked, e->messages, e->unreadable, e->last_kind);
	if (e->last)
		put_escaped(f, e->last);
	putc('\t', f);
	for (i = 0; i < e->ndeadlines; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)e->deadlines[i]);
	putc('\t', f);
	if (e->leases)
		put_escaped(f, e->leases);
	putc('\t', f);
	if (e->deps)
		put_escaped(f, e->deps);
	putc('\t', f);
	if (e->team)
		put_escaped(f, e->team);
	putc('\n', f);
}

static size_t task_hash(const char *task)
{
	return (size_t)amp_fnv1a_str(AMP_FNV1A_BASIS, task);
}

/* The slot of `task` in c->slots: the one holding it, or the empty one
 * where it goes. */
static size_t *task_slot(amp_summaries *c, const char *task)
{
	size_t h = task_hash(task) & (c->nslots - 1);

	while (c->slots[h] && strcmp(c->v[c->slots[h] - 1].task, task))
		h = (h + 1) & (c->nslots - 1);
	return &c->slots[h];
}

/* The entry of `task`, or NULL. */
static struct sentry *lookup(amp_summaries *c, const char *task)
{
	size_t *slot;

	if (!c->nslots)
		return NULL;
	slot = task_slot(c, task);
	return *slot ? &c->v[*slot - 1] : NULL;
}

/* Room for n entries in c->v and c->slots (empty); -1 when out of memory. */
static int presize(amp_summaries *c, size_t n)
{
	size_t slots = 512;

	while (slots < 2 * n)
		slots *= 2;
	if (!(c->v = malloc(n * sizeof(*c->v))) || !(c->slots = calloc(slots, sizeof(*c->slots))))
		return -1;
	c->alloc = n;
	c->nslots = slots;
	return 0;
}

/* Room for one more entry in c->v and c->slots; -1 when out of memory. */
static int make_room(amp_summaries *c)
{
	size_t i, n;
	size_t *slots;
	struct sentry *grown;

	if (c->n == c->alloc) {
		n = c->alloc ? c->alloc * 2 : 256;
		if (!(grown = realloc(c->v, n * sizeof(*grown))))
			return -1;
		c->v = grown;
		c->alloc = n;
	}
	if (2 * (c->n + 1) <= c->nslots)
		return 0;
	n = c->nslots ? c->nslots * 2 : 512;
	if (!(slots = calloc(n, sizeof(*slots))))
		return -1;
	free(c->slots);
	c->slots = slots;
	c->nslots = n;
	for (i = 0; i < c->n; i++)
		*task_slot(c, c->v[i].task) = i + 1;
	return 0;
}

/* Appends e to the cache (which takes over its memory), replacing the
 * task's entry; the entry as stored, or NULL when out of memory (e is
 * freed). */
static struct sentry *store(amp_summaries *c, struct sentry *e)
{
	struct sentry *old = lookup(c, e->task);

	if (old) {
		sentry_free(old);
		*old = *e;
		return old;
	}
	if (make_room(c) < 0) {
		sentry_free(e);
		return NULL;
	}
	c->v[c->n] = *e;
	*task_slot(c, e->task) = c->n + 1;
	return &c->v[c->n++];
}

/*
 * The state file `path` (the cache, the shards file) whole, one read, when
 * its first line is "<magic> TAB <c's policy>": the buffer (free it), its
 * length in *len and the first line's in *hlen; else NULL (missing, not a
 * regular file, too big, another file or policy: all read as empty).
 */
static char *read_state(amp_summaries *c, const char *path, const char *magic, size_t *len,
			size_t *hlen)
{
	char *buf = NULL, head[64 + sizeof(c->policy)];

	if (amp_cache_read(path, amp_cache_bound(c->st), &buf, len) < 0)
		return NULL;
	*hlen = (size_t)snprintf(head, sizeof(head), "%s\t%s\n", magic, c->policy);
	if (*len < *hlen || memcmp(buf, head, *hlen)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A temporary file beside state file `path` (t: amp_tempfile_commit puts
 * it in place), its first line written; NULL when it cannot be made (best
 * effort: without its caches the listing is slower, not wrong). */
static FILE *state_tmp(amp_summaries *c, const char *path, const char *magic, amp_tempfile *t)
{
	FILE *f;

	if ((mkdir(amp_store_state_dir(c->st), 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_open(t, path, 0) < 0 || !(f = amp_tempfile_stream(t))) {
		amp_tempfile_rollback(t);
		return NULL;
	}
	fprintf(f, "%s\t%s\n", magic, c->policy);
	return f;
}

/* What entry e takes in memory, for SPILL_BYTES. */
static size_t sentry_bytes(const struct sentry *e)
{
	return sizeof(*e) + strlen(e->task) + 1 + (e->last ? strlen(e->last) + 1 : 0) +
	       e->ndeadlines * sizeof(*e->deadlines) + (e->leases ? strlen(e->leases) + 1 : 0) +
	       (e->deps ? strlen(e->deps) + 1 : 0) + (e->team ? strlen(e->team) + 1 : 0);
}

/*
 * Writes the entries this run summarized to the new cache file (begun at
 * the first spill, with its first line) and drops them, keeping those it
 * loaded.  A task looked up again later is read from its records again and
 * written a second time, with the same tree and so the same summary (load
 * keeps the last line of a task).  Best effort like the cache: when the
 * file cannot be made, nothing is dropped.
 */
static void spill(amp_summaries *c)
{
	char path[PATH_MAX + 32];
	size_t i, kept = 0;

	if (!c->spill_f) {
		cache_path(c->st, path, sizeof(path));
		if (!(c->spill_f = state_tmp(c, path, CACHE_MAGIC, &c->spill)))
			return;
	}
	for (i = 0; i < c->n; i++) {
		if (c->v[i].fresh && c->v[i].state[0]) {
			put_line(c->spill_f, &c->v[i]);
			sentry_free(&c->v[i]);
		} else {
			c->v[kept++] = c->v[i];
		}
	}
	c->n = kept;
	memset(c->slots, 0, c->nslots * sizeof(*c->slots));
	for (i = 0; i < c->n; i++)
		*task_slot(c, c->v[i].task) = i + 1;
	c->fresh_bytes = 0;
}

/* The file's lines into c; nothing when it is not a cache of c's policy. */
static void load(amp_summaries *c, const char *path)
{
	char *buf;
	size_t len, hlen;
	const char *p, *end, *nl;

	if (!(buf = read_state(c, path, CACHE_MAGIC, &len, &hlen)))
		return;
	end = buf + len;
	/* Room for the lines at once (a line is 60 bytes or more): growing
	 * the table rehashed every name. */
	if (presize(c, len / 60 + 16) < 0)
		goto cleanup;
	for (p = buf + hlen; p < end; p = nl + 1) {
		struct sentry e = { 0 };
		char *tab;

		if (!(nl = memchr(p, '\n', (size_t)(end - p))))
			break; /* a last line cut short: ignored */
		/* only the task's name now, in place when nothing in it is
		 * escaped (most names): the rest when it is looked up */
		if (!(tab = memchr(p, '\t', (size_t)(nl - p))) || tab == p)
			continue;
		if (memchr(p, '\\', (size_t)(tab - p))) {
			if (!(e.task = unescaped(p, (size_t)(tab - p))) || !*e.task) {
				free(e.task);
				continue;
			}
		} else {
			*tab = '\0';
			e.task = (char *)p;
			e.borrowed = 1;
		}
		e.raw = tab + 1;
		e.rawlen = (size_t)(nl - tab - 1);
		if (!store(c, &e))
			break;
	}
	c->buf = buf;
	return;
cleanup:
	free(buf);
}

/*
 * e with every field read from its line, at its first lookup; NULL when
 * the line does not read back (or names another task): the entry is then
 * emptied (no state: never written back), so that the task is read from
 * its records and stored again.
 */
static struct sentry *parsed(struct sentry *e)
{
	struct sentry full = { 0 };

	if (!e || !e->raw)
		return e;
	if (parse_rest(e->raw, e->rawlen, &full) < 0) {
		e->raw = NULL;
		e->rawlen = 0;
		memset(&e->tree, 0, sizeof(e->tree));
		e->state[0] = '\0';
		return NULL;
	}
	full.task = e->task;
	full.borrowed = e->borrowed;
	*e = full;
	return e;
}

amp_summaries *amp_summaries_open(amp_store *st)
{
	amp_summaries *c = calloc(1, sizeof(*c));
	char path[PATH_MAX + 32];

	if (!c)
		return NULL;
	c->st = st;
	c->spill.fd = -1;
	policy_key(st, c->policy, sizeof(c->policy));
	cache_path(st, path, sizeof(path));
	load(c, path);
	return c;
}

void amp_summaries_close(amp_summaries *c)
{
	char path[PATH_MAX + 32];
	FILE *f;
	size_t i;

	if (!c)
		return;
	cache_path(c->st, path, sizeof(path));
	/* after what was spilled, if anything was */
	f = c->spill_f ? c->spill_f : c->dirty ? state_tmp(c, path, CACHE_MAGIC, &c->spill) : NULL;
	if (f) {
		for (i = 0; i < c->n; i++) {
			if (c->v[i].raw) {
				put_escaped(f, c->v[i].task);
				putc('\t', f);
				fwrite(c->v[i].raw, 1, c->v[i].rawlen, f);
				putc('\n', f);
			} else if (c->v[i].state[0]) {
				put_line(f, &c->v[i]);
			}
		}
		amp_tempfile_commit(&c->spill); /* in place of `path` */
	}
	for (i = 0; i < c->n; i++)
		sentry_free(&c->v[i]);
	free(c->v);
	free(c->slots);
	free(c->buf);
	save_shards(c);
	for (i = 0; i < c->nshards; i++)
		shard_free(&c->shards[i]);
	free(c->shards);
	git_odb_free(c->odb);
	free(c);
}

/* ---- summaries --------------------------------------------------------------- */

/* Compact JSON of v, or NULL when v is empty (or out of memory). */
static char *json_text_if_any(const json_t *v)
{
	return json_array_size(v) ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

/* The time-free part of the task's leases not released (coord.h): who
 * holds it and when each lease runs out, as its records say. */
static json_t *leases_of(const amp_task_log *log)
{
	json_t *out = json_array();
	amp_leases ls;
	size_t i;

	amp_coord_leases(log, &ls);
	for (i = 0; out && i < ls.n; i++)
		if (!ls.v[i].released)
			json_array_append_new(out, json_pack("{s:s,s:s?,s:I}", "agent", ls.v[i].agent,
				"subtask_id", ls.v[i].subtask[0] ? ls.v[i].subtask : NULL,
				"expires_ms", (json_int_t)amp_lease_expires(&ls.v[i])));
	return out;
}

/* The task's dependencies (amp depend), [{"task_id", "soft"}]. */
static json_t *deps_of(const amp_task_log *log)
{
	amp_dep deps[AMP_DEPS_MAX];
	size_t n = amp_coord_deps(log, deps), i;
	json_t *out = json_array();

	for (i = 0; out && i < n; i++)
		json_array_append_new(out, json_pack("{s:s,s:b}", "task_id", deps[i].on,
						     "soft", deps[i].soft));
	return out;
}

/* What a team reports on the task (issue 33): {"progress", "questions",
 * "released"}, a new object, or NULL when it has none (or out of
 * memory). */
static json_t *team_json(const amp_task_log *log)
{
	json_t *p = amp_progress_json(log), *q = amp_questions_json(log), *t = NULL;
	json_t *r = amp_coord_released_json(log);

	if (json_array_size(p) || json_array_size(q) || json_array_size(r))
		t = json_pack("{s:O,s:O,s:O}", "progress", p, "questions", q, "released", r);
	json_decref(p);
	json_decref(q);
	json_decref(r);
	return t;
}

/* team_json as compact JSON, or NULL. */
static char *team_of(const amp_task_log *log)
{
	json_t *t = team_json(log);
	char *text = t ? json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(t);
	return text;
}

/* The time-free summary of a task's log into e (e->task set by the
 * caller); -1 when out of memory. */
static int summarize(const amp_task_log *log, int64_t now_ms, struct sentry *e)
{
	json_t *t = amp_task_status_json(log, now_ms), *l = NULL, *d = NULL;
	const json_t *msgs = json_object_get(t, "messages"), *m, *last;
	const char *state = amp_json_str(t, "state");
	size_t i;
	int status = -1;

	if (!t || !state || strlen(state) >= sizeof(e->state))
		goto cleanup;
	snprintf(e->state, sizeof(e->state), "%s", state);
	e->reject_count = (int)json_integer_value(json_object_get(t, "reject_count"));
	e->suspended = json_is_true(json_object_get(t, "suspended"));
	e->locked = json_is_true(json_object_get(t, "locked"));
	e->messages = (int)json_array_size(msgs);
	e->unreadable = (int)json_array_size(json_object_get(t, "unreadable"));
	last = json_array_size(msgs) ?
	       json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "timestamp") : NULL;
	e->last_kind = !last || json_is_null(last) ? '-' : json_is_string(last) ? 's' : 'j';
	if (e->last_kind == 's' && !(e->last = strdup(json_string_value(last))))
		goto cleanup;
	if (e->last_kind == 'j' && !(e->last = json_dumps(last, JSON_COMPACT | JSON_ENCODE_ANY)))
		goto cleanup;
	if (json_array_size(msgs) && !(e->deadlines = calloc(json_array_size(msgs), sizeof(int64_t))))
		goto cleanup;
	json_array_foreach(msgs, i, m) {
		const char *ack = amp_json_str(m, "ack_state"), *due = amp_json_str(m, "ack_deadline");
		int64_t ms;

		if (ack && due && (!strcmp(ack, "pending") || !strcmp(ack, "overdue")) &&
		    amp_time_parse(due, &ms) == 0)
			e->deadlines[e->ndeadlines++] = ms;
	}
	l = leases_of(log);
	d = deps_of(log);
	if (!l || !d || (json_array_size(l) && !(e->leases = json_text_if_any(l))) ||
	    (json_array_size(d) && !(e->deps = json_text_if_any(d))))
		goto cleanup;
	e->team = team_of(log);
	status = 0;
cleanup:
	json_decref(t);
	json_decref(l);
	json_decref(d);
	return status;
}

int amp_summary_team_reports(const amp_task_log *log, int64_t now_ms, int finished_too,
			     json_t **out, amp_error *err)
{
	amp_summary_brief b = { 0 };
	struct sentry e = { .last_kind = '-' };
	json_t *team = team_json(log);
	int status = AMP_OK;

	*out = NULL;
	if (!team)
		return AMP_OK;
	if (finished_too)
		goto reports;
	/* Finished or not as the listing judges it, from the same summary. */
	if (summarize(log, now_ms, &e) < 0 || strlen(e.state) >= sizeof(b.state)) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	memcpy(b.state, e.state, sizeof(b.state));
	b.unreadable = e.unreadable;
	b.acks_pending = e.ndeadlines; /* pending or overdue: both awaited */
	if (amp_summary_finished(&b))
		goto cleanup;
reports:
	if (!(*out = json_pack("{s:s,s:O,s:O,s:O}", "task_id", log->task_id,
			       "progress", json_object_get(team, "progress"),
			       "questions", json_object_get(team, "questions"),
			       "released", json_object_get(team, "released"))))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
cleanup:
	sentry_free(&e);
	json_decref(team);
	return status;
}

/*
 * The time-free summary of `task`: from the cache when the task's tree is
 * the one it holds (and still in the object database), else from its
 * records (and cached).  Borrowed from the cache, or, without one, *owned
 * (free with sentry_free and free).  NULL with err filled on error.
 */
static const struct sentry *entry(amp_summaries *c, amp_store *st, git_tree *root,
				  const char *task, const git_oid *tree, int64_t now_ms,
				  struct sentry **owned, amp_error *err)
{
	git_tree_entry *te = NULL;
	char dir[128];
	const struct sentry *hit = NULL;
	struct sentry e = { 0 }, *kept;
	struct sentry *known;
	amp_task_log log;
	int keep;

	*owned = NULL;
	/* Here, where no entry this file returned is still held (callers
	 * copy what they keep, as a store may move the entries too). */
	if (c && c->fresh_bytes > SPILL_BYTES)
		spill(c);
	/* The task directory's tree (the listing's, else looked up): the
	 * same id, the same records. */
	if (c && !tree && amp_store_task_lookup(root, task, &te, dir, sizeof(dir)) == 0)
		tree = git_tree_entry_id(te);
	if (c && tree) {
		if ((known = parsed(lookup(c, task))) && git_oid_equal(&known->tree, tree))
			hit = known;
		/* A tree that is gone from the object database is damage
		 * the records must show. */
		if (hit && ((!c->odb && git_repository_odb(&c->odb, amp_store_repo(st)) < 0) ||
			    !git_odb_exists(c->odb, tree)))
			hit = NULL;
	}
	/* Cached under its tree, when the cache and the tree are known. */
	keep = !hit && c && tree;
	if (keep)
		git_oid_cpy(&e.tree, tree); /* tree may be te's */
	git_tree_entry_free(te);
	git_error_clear();
	if (hit)
		return hit;
	if (amp_store_read_task(st, root, task, &log, err) < 0)
		return NULL;
	e.last_kind = '-';
	if (summarize(&log, now_ms, &e) < 0 || !(e.task = strdup(task))) {
		amp_task_log_free(&log);
		sentry_free(&e);
		amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	amp_task_log_free(&log);
	if (keep) {
		c->dirty = 1;
		e.fresh = 1;
		c->fresh_bytes += sentry_bytes(&e);
		if (!(kept = store(c, &e)))
			amp_error_set(err, AMP_EIO, "", "out of memory");
		return kept;
	}
	if (!(*owned = malloc(sizeof(**owned)))) {
		sentry_free(&e);
		amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	**owned = e;
	return *owned;
}

/* The "claims" of the summary at now_ms: the leases, each expired or not
 * against now (like the ACK deadlines). */
static json_t *claims_at(const char *leases, int64_t now_ms)
{
	json_t *out = json_array(), *all = leases ? amp_json_loadb(leases, strlen(leases), 0, NULL, NULL) : NULL;
	const json_t *l;
	char until[AMP_TIME_BUFSZ];
	size_t i;

	json_array_foreach(all, i, l) {
		int64_t exp = (int64_t)json_integer_value(json_object_get(l, "expires_ms"));

		json_array_append_new(out, json_pack("{s:O,s:O,s:s,s:b}", "agent",
			json_object_get(l, "agent"), "subtask_id", json_object_get(l, "subtask_id"),
			"expires", amp_time_format(exp, until), "expired", now_ms > exp));
	}
	json_decref(all);
	return out;
}

/* The "waits_for" of deps: each dependency not approved, with its state
 * ("new": no records), read from its own summary (cached too). */
static json_t *waits(amp_summaries *c, amp_store *st, git_tree *root, const char *deps,
		     int64_t now_ms, amp_error *err)
{
	json_t *out = json_array(), *all = deps ? amp_json_loadb(deps, strlen(deps), 0, NULL, NULL) : NULL;
	const json_t *d;
	size_t i;

	json_array_foreach(all, i, d) {
		const char *on = amp_json_str(d, "task_id");
		const struct sentry *s;
		struct sentry *owned;
		char dir[128], state[sizeof(s->state)];

		/* A hand-made depend record naming no task waits for nothing. */
		if (!on || amp_store_task_dir(AMP_LAYOUT_FLAT, on, dir, sizeof(dir)) < 0)
			continue;
		/* on is borrowed from all, which the lookup does not touch;
		 * the state is copied before the next lookup can move the
		 * cache's entries. */
		if (!(s = entry(c, st, root, on, NULL, now_ms, &owned, err))) {
			json_decref(out);
			out = NULL;
			break;
		}
		snprintf(state, sizeof(state), "%s", s->state);
		if (owned) {
			sentry_free(owned);
			free(owned);
		}
		if (strcmp(state, "approved"))
			json_array_append_new(out, json_pack("{s:s,s:O,s:s}", "task_id", on, "soft",
							     json_object_get(d, "soft"), "state", state));
	}
	json_decref(all);
	return out;
}

/* The ACKs still awaited at now_ms: *pending before their deadline,
 * *overdue past it. */
static void count_acks(const struct sentry *e, int64_t now_ms, size_t *pending,
		       size_t *overdue)
{
	size_t i;

	*pending = *overdue = 0;
	for (i = 0; i < e->ndeadlines; i++) {
		if (now_ms > e->deadlines[i])
			(*overdue)++;
		else
			(*pending)++;
	}
}

/* Member `key` of the summary's team JSON (an array; [] when none). */
static json_t *team_part(const struct sentry *e, const char *key)
{
	json_t *all = e->team ? amp_json_loadb(e->team, strlen(e->team), 0, NULL, NULL) : NULL, *part;

	part = json_is_array(json_object_get(all, key)) ? json_incref(json_object_get(all, key))
						       : json_array();
	json_decref(all);
	return part;
}

/* The summary e at now_ms, in the order amp status prints the fields. */
static json_t *at_time(const char *task, const struct sentry *e, int64_t now_ms)
{
	json_t *out = json_object(), *last;
	size_t pending, overdue;

	count_acks(e, now_ms, &pending, &overdue);
	last = e->last_kind == 's' ? json_string(e->last) :
	       e->last_kind == 'j' ? amp_json_loadb(e->last, strlen(e->last), JSON_DECODE_ANY, NULL, NULL) : json_null();
	if (!out || !last ||
	    json_object_set_new(out, "task_id", json_string(task)) < 0 ||
	    json_object_set_new(out, "state", json_string(e->state)) < 0 ||
	    json_object_set_new(out, "reject_count", json_integer(e->reject_count)) < 0 ||
	    json_object_set_new(out, "suspended", json_boolean(e->suspended)) < 0 ||
	    json_object_set_new(out, "locked", json_boolean(e->locked)) < 0 ||
	    json_object_set_new(out, "messages", json_integer(e->messages)) < 0 ||
	    json_object_set_new(out, "acks_pending", json_integer((json_int_t)pending)) < 0 ||
	    json_object_set_new(out, "acks_overdue", json_integer((json_int_t)overdue)) < 0 ||
	    json_object_set_new(out, "unreadable", json_integer(e->unreadable)) < 0 ||
	    json_object_set(out, "last_timestamp", last) < 0 ||
	    json_object_set_new(out, "claims", claims_at(e->leases, now_ms)) < 0 ||
	    json_object_set_new(out, "progress", team_part(e, "progress")) < 0 ||
	    json_object_set_new(out, "questions", team_part(e, "questions")) < 0 ||
	    json_object_set_new(out, "released", team_part(e, "released")) < 0) {
		json_decref(out);
		out = NULL;
	}
	json_decref(last);
	return out;
}

int amp_summary_brief_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			  const git_oid *tree, int64_t now_ms, amp_summary_brief *out,
			  amp_error *err)
{
	const struct sentry *s;
	struct sentry *owned;

	memset(out, 0, sizeof(*out));
	if (!(s = entry(c, st, root, task, tree, now_ms, &owned, err)))
		return AMP_EIO;
	_Static_assert(sizeof(out->state) == sizeof(s->state), "one state size");
	memcpy(out->state, s->state, sizeof(out->state)); /* ends in a NUL */
	out->reject_count = s->reject_count;
	out->messages = s->messages;
	out->unreadable = s->unreadable;
	count_acks(s, now_ms, &out->acks_pending, &out->acks_overdue);
	out->extras = s->leases || s->deps || s->team;
	if (owned) {
		sentry_free(owned);
		free(owned);
	}
	return AMP_OK;
}

json_t *amp_summary_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			int64_t now_ms, amp_error *err)
{
	const struct sentry *s;
	struct sentry *owned;
	json_t *out, *w;
	char *deps;

	amp_store_walk_step();
	if (!(s = entry(c, st, root, task, NULL, now_ms, &owned, err)))
		return NULL;
	out = at_time(task, s, now_ms);
	/* A copy: the dependencies' lookups may move the cache's entries. */
	deps = s->deps ? strdup(s->deps) : NULL;
	if (owned) {
		sentry_free(owned);
		free(owned);
	}
	w = out ? waits(c, st, root, deps, now_ms, err) : NULL;
	free(deps);
	if (!out || !w) {
		json_decref(out);
		json_decref(w);
		if (!out)
			amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	json_object_set_new(out, "waits_for", w);
	return out;
}

/* ---- the default listing: tasks not finished ---------------------------------- */

/*
 * The shards file, <git common dir>/amp/status.shards, beside the cache:
 *
 *   amp-status-shards 1 <TAB> <policy>
 *
 * then, per shard directory the default listing saw:
 *
 *   path  tree  ntasks  [task  tree]...
 *
 * path "<year>/<shard>" and the task names escaped as in the cache, tree
 * ids in hex.  A shard whose tree is the one recorded holds the same task
 * directories with the same records, hence the same states: its tasks are
 * not read again.  A line that does not read back is ignored (that shard
 * is read); a file of another policy or version, whole.
 */
#define SHARDS_MAGIC "amp-status-shards 1"

static void shards_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/status.shards", amp_store_state_dir(st));
}

static void shard_free(struct shard *s)
{
	size_t i;

	for (i = 0; i < s->nopen; i++)
		free(s->open[i].task);
	free(s->open);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

static int cmp_shard(const void *a, const void *b)
{
	return strcmp(((const struct shard *)a)->path, ((const struct shard *)b)->path);
}

/* One line of the shards file into s; -1 (s empty) when it is not one. */
static int parse_shard(const char *line, size_t len, struct shard *s)
{
	/* Fields for 256 open tasks (a shard of task ids holds at most 100
	 * tasks); a line with more does not read back: that shard is read. */
	enum { MAXF = 3 + 2 * 256 };
	const char *f[MAXF];
	size_t flen[MAXF], k, i;
	long long v;

	memset(s, 0, sizeof(*s));
	k = split_tabs(line, len, f, flen, MAXF);
	if (k < 3 || (k - 3) % 2 || oid_of_hex(f[1], flen[1], &s->tree) < 0 ||
	    (v = number(f[2], flen[2], INT_MAX)) < 0 || (size_t)v < (k - 3) / 2 ||
	    !(s->path = unescaped(f[0], flen[0])) || !*s->path)
		goto bad;
	s->ntasks = (size_t)v;
	if (k > 3 && !(s->open = calloc((k - 3) / 2, sizeof(*s->open))))
		goto bad;
	for (i = 3; i < k; i += 2) {
		struct open_task *t = &s->open[s->nopen];

		if (oid_of_hex(f[i + 1], flen[i + 1], &t->tree) < 0 ||
		    !(t->task = unescaped(f[i], flen[i])) || !*t->task) {
			free(t->task);
			goto bad;
		}
		s->nopen++;
	}
	return 0;
bad:
	shard_free(s);
	return -1;
}

/* The shards file into c->shards, sorted by path (once). */
static void load_shards(amp_summaries *c)
{
	char path[PATH_MAX + 32], *buf;
	const char *p, *end, *nl;
	size_t len, hlen, alloc = 0;

	if (c->shards_loaded)
		return;
	c->shards_loaded = 1;
	shards_path(c->st, path, sizeof(path));
	if (!(buf = read_state(c, path, SHARDS_MAGIC, &len, &hlen)))
		return;
	end = buf + len;
	for (p = buf + hlen; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
		struct shard s;

		if (parse_shard(p, (size_t)(nl - p), &s) < 0)
			continue;
		if (c->nshards == alloc) {
			struct shard *grown;

			alloc = alloc ? alloc * 2 : 64;
			if (!(grown = realloc(c->shards, alloc * sizeof(*grown)))) {
				shard_free(&s);
				break;
			}
			c->shards = grown;
		}
		c->shards[c->nshards++] = s;
	}
	if (c->nshards)
		qsort(c->shards, c->nshards, sizeof(*c->shards), cmp_shard);
	free(buf);
}

static struct shard *find_shard(amp_summaries *c, const char *path)
{
	struct shard key = { .path = (char *)path };

	return c->nshards ? bsearch(&key, c->shards, c->nshards, sizeof(*c->shards), cmp_shard) :
			    NULL;
}

/* Writes the shards the listing saw, when one changed (best effort, like
 * the cache). */
static void save_shards(amp_summaries *c)
{
	char path[PATH_MAX + 32], hex[GIT_OID_HEXSZ + 1];
	amp_tempfile t = { .fd = -1 };
	FILE *f;
	size_t i, k;

	shards_path(c->st, path, sizeof(path));
	if (!c->shards_dirty || !(f = state_tmp(c, path, SHARDS_MAGIC, &t)))
		return;
	for (i = 0; i < c->nshards; i++) {
		const struct shard *s = &c->shards[i];

		if (!s->seen)
			continue;
		put_escaped(f, s->path);
		fprintf(f, "\t%s\t%zu", git_oid_tostr(hex, sizeof(hex), &s->tree), s->ntasks);
		for (k = 0; k < s->nopen; k++) {
			putc('\t', f);
			put_escaped(f, s->open[k].task);
			fprintf(f, "\t%s", git_oid_tostr(hex, sizeof(hex), &s->open[k].tree));
		}
		putc('\n', f);
	}
	amp_tempfile_commit(&t);
}

int amp_summary_finished(const amp_summary_brief *b)
{
	return (!strcmp(b->state, "approved") || !strcmp(b->state, "aborted")) &&
	       !b->acks_pending && !b->acks_overdue && !b->unreadable;
}

/* The growing list of amp_summary_list_open. */
struct open_list {
	struct open_task *v;
	size_t n, alloc;
};

static int open_list_add(struct open_list *l, const char *task, const git_oid *tree)
{
	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? l->alloc * 2 : 64;
		struct open_task *grown = realloc(l->v, alloc * sizeof(*grown));

		if (!grown)
			return -1;
		l->v = grown;
		l->alloc = alloc;
	}
	if (!(l->v[l->n].task = strdup(task)))
		return -1;
	git_oid_cpy(&l->v[l->n++].tree, tree);
	return 0;
}

/*
 * Reads shard tree `tree` (tasks/<path>) into *out: each task directory's
 * brief summary decides whether it is open.  *cacheable is cleared when a
 * task could not be read (it is listed open, and the listing reports it).
 */
static int read_shard(amp_summaries *c, amp_store *st, git_tree *root, const char *path,
		      const git_oid *tree, int64_t now_ms, struct shard *out, int *cacheable)
{
	git_tree *sub = NULL;
	struct open_list l = { 0 };
	size_t i, n;
	int status = -1;

	memset(out, 0, sizeof(*out));
	*cacheable = 1;
	if (amp_git_tree_lookup(&sub, amp_store_repo(st), tree) < 0 || !(out->path = strdup(path)))
		goto cleanup;
	git_oid_cpy(&out->tree, tree);
	n = git_tree_entrycount(sub);
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(sub, i);
		amp_summary_brief b;
		amp_error err;
		int bad;

		if (!amp_store_task_in_place(st, path, e)) {
			*cacheable = 0; /* reported by every command that lists it */
			continue;
		}
		out->ntasks++;
		bad = amp_summary_brief_get(c, st, root, git_tree_entry_name(e), git_tree_entry_id(e),
					    now_ms, &b, &err) < 0;
		if (bad)
			*cacheable = 0;
		if ((bad || !amp_summary_finished(&b)) &&
		    open_list_add(&l, git_tree_entry_name(e), git_tree_entry_id(e)) < 0)
			goto cleanup;
	}
	out->open = l.v;
	out->nopen = l.n;
	l.v = NULL;
	l.n = 0;
	status = 0;
cleanup:
	for (i = 0; i < l.n; i++)
		free(l.v[i].task);
	free(l.v);
	if (status < 0)
		shard_free(out);
	git_tree_free(sub);
	return status;
}

/* Keeps s (taken over) as the record of its shard, replacing the old one
 * (at `old`, or NULL); -1 when out of memory (s freed). */
static int keep_shard(amp_summaries *c, struct shard *old, struct shard *s)
{
	struct shard *grown;

	s->seen = 1;
	c->shards_dirty = 1;
	if (old) {
		shard_free(old);
		*old = *s;
		return 0;
	}
	if (!(grown = realloc(c->shards, (c->nshards + 1) * sizeof(*grown)))) {
		shard_free(s);
		return -1;
	}
	c->shards = grown;
	c->shards[c->nshards++] = *s;
	qsort(c->shards, c->nshards, sizeof(*c->shards), cmp_shard);
	return 0;
}

static int cmp_open_task(const void *a, const void *b)
{
	return strcmp(((const struct open_task *)a)->task, ((const struct open_task *)b)->task);
}

int amp_summary_list_open(amp_summaries *c, amp_store *st, git_tree *root, int64_t now_ms,
			  char ***ids, git_oid **trees, size_t *count, size_t *finished,
			  amp_error *err)
{
	git_tree_entry *tasks = NULL;
	git_tree *top = NULL, *year = NULL;
	struct open_list l = { 0 };
	amp_flat shards = { 0 };
	size_t y, ny, i, k, ns;
	char path[3 * 256 + 3];
	int rc, status = AMP_OK, layout;

	*ids = NULL;
	*trees = NULL;
	*count = *finished = 0;
	if (c)
		load_shards(c);
	rc = git_tree_entry_bypath(&tasks, root, "tasks");
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0 || amp_git_tree_lookup(&top, amp_store_repo(st), git_tree_entry_id(tasks)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read tasks/");
		goto cleanup;
	}
	/* tasks/<year>/<shard>/<task_id>; layout 2's shard is <A>/<B>
	 * (store.h "Layout"), the shards of a year read through its <A>s */
	if ((layout = amp_store_layout(st, root, err)) < 0) {
		status = layout;
		goto cleanup;
	}
	ny = git_tree_entrycount(top);
	for (y = 0; y < ny; y++) {
		const git_tree_entry *ye = git_tree_entry_byindex(top, y);

		if (git_tree_entry_type(ye) != GIT_OBJECT_TREE)
			continue;
		git_tree_free(year);
		year = NULL;
		if (amp_git_tree_lookup(&year, amp_store_repo(st), git_tree_entry_id(ye)) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot list tasks");
			goto cleanup;
		}
		amp_flat_free(&shards);
		if (amp_store_flatten(amp_store_repo(st), year, amp_store_shard_levels(layout),
				      &shards) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot list tasks");
			goto cleanup;
		}
		ns = shards.count;
		for (i = 0; i < ns; i++) {
			const git_tree_entry *se = shards.v[i].e;
			struct shard *known, fresh, *s;
			int cacheable;

			if (git_tree_entry_type(se) != GIT_OBJECT_TREE)
				continue;
			snprintf(path, sizeof(path), "%s/%s%s%s", git_tree_entry_name(ye),
				 shards.v[i].sub, *shards.v[i].sub ? "/" : "", git_tree_entry_name(se));
			known = c ? find_shard(c, path) : NULL;
			if (known && git_oid_equal(&known->tree, git_tree_entry_id(se))) {
				s = known;
				s->seen = 1;
			} else {
				if (read_shard(c, st, root, path, git_tree_entry_id(se), now_ms, &fresh,
					       &cacheable) < 0) {
					status = amp_error_git(err, AMP_EIO, "cannot list tasks/%s", path);
					goto cleanup;
				}
				/* kept in the cache, or listed from `fresh` and freed */
				if (c && cacheable && keep_shard(c, known, &fresh) == 0)
					s = known ? known : find_shard(c, path);
				else
					s = &fresh;
			}
			for (k = 0; k < s->nopen; k++)
				if (open_list_add(&l, s->open[k].task, &s->open[k].tree) < 0) {
					if (s == &fresh)
						shard_free(&fresh);
					status = amp_error_set(err, AMP_EIO, "", "out of memory");
					goto cleanup;
				}
			*finished += s->ntasks - s->nopen;
			if (s == &fresh)
				shard_free(&fresh);
		}
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_open_task);
	if (!(*ids = malloc((l.n ? l.n : 1) * sizeof(**ids))) ||
	    !(*trees = malloc((l.n ? l.n : 1) * sizeof(**trees)))) {
		free(*ids);
		*ids = NULL;
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < l.n; i++) {
		(*ids)[i] = l.v[i].task;
		git_oid_cpy(&(*trees)[i], &l.v[i].tree);
	}
	*count = l.n;
	l.n = 0; /* the names are the caller's now */
cleanup:
	for (i = 0; i < l.n; i++)
		free(l.v[i].task);
	free(l.v);
	amp_flat_free(&shards);
	git_tree_free(year);
	git_tree_free(top);
	git_tree_entry_free(tasks);
	return status;
}
