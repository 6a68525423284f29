#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "base/clock.h"
#include "record/record.h"
#include "registry.h"
#include "base/util.h"

/* ---- leases ---------------------------------------------------------------- */

int64_t amp_lease_expires(const amp_lease *l)
{
	return l->renewed_ms + l->ttl_ms;
}

/* A lease of `subtask` and one of l->subtask overlap: the same subtask, or
 * either is the whole task. */
static int overlaps(const amp_lease *l, const char *subtask)
{
	return !subtask || !*subtask || !l->subtask[0] || !strcmp(l->subtask, subtask);
}

const amp_lease *amp_coord_conflict(const amp_leases *ls, const char *subtask,
				    const char *agent, int64_t at_ms)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (amp_lease_in_force(&ls->v[i], at_ms) && overlaps(&ls->v[i], subtask) &&
		    (!agent || strcmp(ls->v[i].agent, agent)))
			return &ls->v[i];
	return NULL;
}

const amp_lease *amp_coord_holder(const amp_leases *ls, int64_t at_ms)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (amp_lease_in_force(&ls->v[i], at_ms))
			return &ls->v[i];
	return NULL;
}

/* Renews the leases in force at `at` (of `agent` only, when not NULL). */
static void renew(amp_leases *ls, const char *agent, int64_t at)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (amp_lease_in_force(&ls->v[i], at) && (!agent || !strcmp(ls->v[i].agent, agent)) &&
		    at > ls->v[i].renewed_ms)
			ls->v[i].renewed_ms = at;
}

/* The lease of claim record `name`, or NULL. */
static amp_lease *lease_named(amp_leases *ls, const char *name)
{
	size_t i;

	for (i = 0; name && i < ls->n; i++)
		if (!strcmp(ls->v[i].claim, name))
			return &ls->v[i];
	return NULL;
}

/* Drops released leases when the array is full, so a long-lived task with
 * many rounds keeps room; -1 when every slot holds a live lease. */
static int make_room(amp_leases *ls)
{
	size_t i, k = 0;

	if (ls->n < AMP_LEASES_MAX)
		return 0;
	for (i = 0; i < ls->n; i++)
		if (!ls->v[i].released)
			ls->v[k++] = ls->v[i];
	ls->n = k;
	return ls->n < AMP_LEASES_MAX ? 0 : -1;
}

/* A claim in force where it stands: 0 (applied), else why not. */
static const char *apply_claim(amp_leases *ls, const char *name, const json_t *doc)
{
	const char *agent = amp_json_str(doc, "agent"), *sub = amp_json_str(doc, "subtask_id");
	json_int_t ttl = json_integer_value(json_object_get(doc, "ttl_sec"));
	int64_t at = amp_record_time(doc);
	amp_lease *l;
	size_t i;

	if (!agent || at < 0 || ttl < 1)
		return "it names no agent, time or ttl";
	if (amp_coord_conflict(ls, sub, agent, at))
		return "held";
	/* The holder claiming again renews its lease. */
	for (i = 0; i < ls->n; i++) {
		l = &ls->v[i];
		if (amp_lease_in_force(l, at) && !strcmp(l->agent, agent) &&
		    !strcmp(l->subtask, sub ? sub : "")) {
			l->renewed_ms = at;
			l->ttl_ms = (int64_t)ttl * 1000;
			return NULL;
		}
	}
	if (make_room(ls) < 0)
		return "the task has too many leases in force";
	l = &ls->v[ls->n++];
	memset(l, 0, sizeof(*l));
	snprintf(l->subtask, sizeof(l->subtask), "%s", sub ? sub : "");
	snprintf(l->agent, sizeof(l->agent), "%s", agent);
	snprintf(l->claim, sizeof(l->claim), "%s", name);
	l->since_ms = l->renewed_ms = at;
	l->ttl_ms = (int64_t)ttl * 1000;
	l->released_ms = -1;
	return NULL;
}

/* A release in force where it stands: NULL (applied), else why not. */
static const char *apply_release(amp_leases *ls, const json_t *doc)
{
	amp_lease *l = lease_named(ls, amp_json_str(doc, "releases"));

	if (!l || l->released)
		return "it names no lease of the task that is not released";
	l->released = 1;
	l->released_ms = amp_record_time(doc);
	l->release = doc;
	return NULL;
}

/* One record of the log applied to the leases; NULL, or why a claim or a
 * release is not in force there. */
static const char *apply(amp_leases *ls, const amp_entry *e)
{
	const char *type = amp_json_str(e->doc, "type"), *from = amp_json_str(e->doc, "from");
	int64_t at = amp_record_time(e->doc);
	size_t i;

	if (!type || !from)
		return NULL;
	if (e->kind == AMP_ENTRY_CTL && !strcmp(type, "claim"))
		return apply_claim(ls, e->id, e->doc);
	if (e->kind == AMP_ENTRY_CTL && !strcmp(type, "release"))
		return apply_release(ls, e->doc);
	if (strcmp(from, "executor") || at < 0)
		return NULL;
	if (e->kind == AMP_ENTRY_CTL && !strcmp(type, "heartbeat")) {
		renew(ls, amp_json_str(e->doc, "agent"), at);
	} else if (e->kind == AMP_ENTRY_MSG && !strcmp(type, "task_result")) {
		const char *sub = amp_json_str(json_object_get(e->doc, "payload"), "subtask_id");

		for (i = 0; i < ls->n; i++)
			if (amp_lease_in_force(&ls->v[i], at) && overlaps(&ls->v[i], sub)) {
				ls->v[i].released = 1;
				ls->v[i].released_ms = at;
			}
	} else if (e->kind != AMP_ENTRY_CTL) {
		renew(ls, NULL, at);
	}
	return NULL;
}

void amp_coord_leases(const amp_task_log *log, amp_leases *out)
{
	const char *record;
	size_t i;

	out->n = 0;
	for (i = 0; i < log->count; i++)
		if (amp_task_entry_in_place(log, &log->entries[i]) &&
		    !amp_entry_is_marker(&log->entries[i], &record))
			apply(out, &log->entries[i]);
}

/* 1 when instance `agent` holds a lease in force at at_ms. */
static int own_lease(const amp_leases *ls, const char *agent, int64_t at_ms)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (amp_lease_in_force(&ls->v[i], at_ms) && !strcmp(ls->v[i].agent, agent))
			return 1;
	return 0;
}

int amp_coord_check_write(const amp_task_log *log, const char *from, const char *agent,
			  int64_t at_ms, char *why, size_t whysz)
{
	amp_leases ls;
	const amp_lease *l;
	char until[AMP_TIME_BUFSZ];

	if (!from || strcmp(from, "executor"))
		return AMP_OK;
	amp_coord_leases(log, &ls);
	if (!(l = amp_coord_conflict(&ls, NULL, agent, at_ms)))
		return AMP_OK;
	/* An instance holding a subtask writes to its task while another
	 * holds another subtask (issue 33: two executors, one task): the
	 * lease in force that is its own admits it. */
	if (agent && l->subtask[0] && own_lease(&ls, agent, at_ms))
		return AMP_OK;
	snprintf(why, whysz, "task %s is claimed by %s%s%s until %s: only %s may write to it as the executor (you are %s)",
		 log->task_id, l->agent, l->subtask[0] ? " for subtask " : "", l->subtask,
		 amp_time_format(amp_lease_expires(l), until), l->agent,
		 agent ? agent : "an unnamed executor: --agent");
	return AMP_ERULE;
}

json_t *amp_coord_released_json(const amp_task_log *log)
{
	amp_leases *ls = malloc(sizeof(*ls));
	json_t *out = json_array();
	size_t i, j;

	if (!ls || !out)
		goto cleanup;
	amp_coord_leases(log, ls);
	for (i = 0; i < ls->n; i++) {
		const amp_lease *l = &ls->v[i];
		const char *by = l->release ? amp_json_str(l->release, "from") : NULL;
		const amp_entry *rec = NULL;
		size_t k;

		if (!by || !strcmp(by, "executor"))
			continue; /* ended by a result, or the holder's own release */
		for (j = 0; j < ls->n; j++)
			if (ls->v[j].since_ms > l->since_ms && !strcmp(ls->v[j].agent, l->agent) &&
			    !strcmp(ls->v[j].subtask, l->subtask))
				break;
		if (j < ls->n)
			continue; /* claimed again since */
		for (k = 0; k < log->count && !rec; k++)
			if (log->entries[k].doc == l->release)
				rec = &log->entries[k];
		json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s?,s:s,s:s?,s:s?,s:s?}",
			"task_id", log->task_id, "agent", l->agent, "claim", l->claim,
			"subtask_id", l->subtask[0] ? l->subtask : NULL, "by", by,
			"at", amp_json_str(l->release, "timestamp"),
			"reason", amp_json_str(l->release, "reason"), "record", rec ? rec->id : NULL));
	}
cleanup:
	free(ls);
	return out;
}

const char *amp_coord_lost_lease(const amp_task_log *log, const char *agent, int64_t at_ms)
{
	amp_leases *ls = malloc(sizeof(*ls));
	const amp_lease *newest = NULL;
	const char *lost = NULL;
	size_t i;

	if (!ls || !agent)
		goto cleanup;
	amp_coord_leases(log, ls);
	for (i = 0; i < ls->n; i++) {
		if (strcmp(ls->v[i].agent, agent))
			continue;
		if (amp_lease_in_force(&ls->v[i], at_ms))
			goto cleanup;
		if (!newest || ls->v[i].since_ms >= newest->since_ms)
			newest = &ls->v[i];
	}
	for (i = 0; newest && newest->released && i < log->count; i++) {
		const json_t *d = log->entries[i].doc;
		const char *type = amp_json_str(d, "type"), *from = amp_json_str(d, "from");
		const char *rel = amp_json_str(d, "releases");

		if (log->entries[i].kind == AMP_ENTRY_CTL && type && !strcmp(type, "release") &&
		    from && !strcmp(from, "system") && rel && !strcmp(rel, newest->claim))
			lost = log->entries[i].id;
	}
	/* the claim's name, borrowed from the log */
	if (lost) {
		const amp_entry *claim = amp_task_log_find(log, AMP_ENTRY_CTL, newest->claim);

		lost = claim ? claim->id : NULL;
	}
cleanup:
	free(ls);
	return lost;
}

int amp_coord_check_result(const amp_task_log *log, const json_t *msg, const char *agent,
			   char *why, size_t whysz)
{
	const char *type = amp_json_str(msg, "type"), *from = amp_json_str(msg, "from");
	const char *sub = amp_json_str(json_object_get(msg, "payload"), "subtask_id");
	const char *by, *reason;
	int64_t at = amp_record_time(msg);
	const amp_lease *mine = NULL, *after = NULL;
	char when[AMP_TIME_BUFSZ], said[256] = "";
	amp_leases ls;
	size_t i;

	if (!type || strcmp(type, "task_result") || !from || strcmp(from, "executor") || !agent)
		return AMP_OK;
	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n; i++)
		if (overlaps(&ls.v[i], sub) && !strcmp(ls.v[i].agent, agent))
			mine = &ls.v[i];
	/* Its own lease in force, or ended by its own release or result. */
	if (!mine || amp_lease_in_force(mine, at) ||
	    (mine->released && !mine->release) ||
	    (mine->release && !strcmp(amp_or_none(amp_json_str(mine->release, "from")), "executor")))
		return AMP_OK;
	for (i = 0; i < ls.n; i++)
		if (overlaps(&ls.v[i], sub) && strcmp(ls.v[i].agent, agent) &&
		    ls.v[i].since_ms >= mine->since_ms)
			after = &ls.v[i];
	by = mine->release ? amp_or_none(amp_json_str(mine->release, "from")) : NULL;
	reason = mine->release ? amp_json_str(mine->release, "reason") : NULL;
	if (reason)
		snprintf(said, sizeof(said), " (\"%.200s\")", reason);
	snprintf(why, whysz, "your claim on %s (%s) %s %s%s%s%s; %s%s%s%s: claim it again before you write to it as the executor (you are %s)",
		 log->task_id, mine->claim, by ? "was released at" : "expired at",
		 amp_time_format(by ? mine->released_ms : amp_lease_expires(mine), when),
		 by ? " by " : "", by ? by : "", said,
		 after ? after->agent : "nobody holds it now",
		 after ? (amp_lease_in_force(after, at) ? " holds it (" : " claimed it after you (") : "",
		 after ? after->claim : "", after ? ")" : "", agent);
	return AMP_ERULE;
}

const char *amp_coord_record_instance(const json_t *doc)
{
	const char *type = amp_json_str(doc, "type"), *from = amp_json_str(doc, "from");

	if (!type || !(!strcmp(type, "claim") || !strcmp(type, "heartbeat") ||
		       !strcmp(type, "progress") || !strcmp(type, "round") || !strcmp(type, "acked") ||
		       (!strcmp(type, "release") && from && !strcmp(from, "executor"))))
		return NULL;
	return amp_json_str(doc, "agent");
}

int amp_coord_check_record(const amp_task_log *before, const json_t *doc,
			   char *why, size_t whysz)
{
	const char *type = amp_json_str(doc, "type");
	amp_leases ls;
	amp_entry e = { before->next_seq, AMP_ENTRY_CTL, NULL, (json_t *)doc };
	char name[64];
	const char *no;

	amp_coord_leases(before, &ls);
	/* The executor gives up its own lease only (amp release): the
	 * coordinator and the admin take back anyone's. */
	if (type && !strcmp(type, "release") && amp_coord_record_instance(doc)) {
		const amp_lease *l = lease_named(&ls, amp_json_str(doc, "releases"));

		if (l && strcmp(l->agent, amp_coord_record_instance(doc))) {
			snprintf(why, whysz, "%s releases %s, the lease of %s: as the executor an instance releases its own lease only",
				 amp_coord_record_instance(doc), l->claim, l->agent);
			return AMP_ERULE;
		}
	}
	/* The record's own name is not known here; a claim's lease is named
	 * by it only for later releases, which the replay of the whole log
	 * checks. */
	snprintf(name, sizeof(name), "claim-pending");
	e.id = name;
	if (!(no = apply(&ls, &e)))
		return AMP_OK;
	if (type && !strcmp(type, "claim") && !strcmp(no, "held")) {
		const amp_lease *l = amp_coord_conflict(&ls, amp_json_str(doc, "subtask_id"),
							amp_json_str(doc, "agent"),
							amp_record_time(doc));

		snprintf(why, whysz, "task %s is claimed by %s at the claim's time: a claim inside another instance's lease is not in force",
			 before->task_id, l ? l->agent : "another instance");
		return AMP_ECLAIMED;
	}
	snprintf(why, whysz, "a %s of task %s not in force: %s", type ? type : "record",
		 before->task_id, no);
	return AMP_ERULE;
}

json_t *amp_coord_claims_json(const amp_task_log *log, int64_t now_ms)
{
	json_t *out = json_array();
	amp_leases ls;
	char since[AMP_TIME_BUFSZ], until[AMP_TIME_BUFSZ];
	size_t i;

	amp_coord_leases(log, &ls);
	for (i = 0; out && i < ls.n; i++) {
		const amp_lease *l = &ls.v[i];

		if (l->released)
			continue;
		json_array_append_new(out, json_pack("{s:s,s:s?,s:s,s:s,s:s,s:b}",
			"agent", l->agent, "subtask_id", l->subtask[0] ? l->subtask : NULL,
			"claim", l->claim, "since", amp_time_format(l->since_ms, since),
			"expires", amp_time_format(amp_lease_expires(l), until),
			"expired", now_ms > amp_lease_expires(l)));
	}
	return out;
}

/* ---- dependencies ---------------------------------------------------------- */

size_t amp_coord_deps(const amp_task_log *log, amp_dep out[AMP_DEPS_MAX])
{
	size_t i, k, n = 0;

	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type"), *on = amp_json_str(e->doc, "on");

		if (e->kind != AMP_ENTRY_CTL || !type || strcmp(type, "depend") || !on ||
		    !amp_task_entry_in_place(log, e))
			continue;
		for (k = 0; k < n && strcmp(out[k].on, on); k++)
			;
		if (k == n && n == AMP_DEPS_MAX)
			continue;
		out[k].on = on;
		out[k].soft = json_is_true(json_object_get(e->doc, "soft"));
		if (k == n)
			n++;
	}
	return n;
}

/* The state of task `id` on tip: "new" when it has no records. */
static int task_state(amp_store *st, git_tree *tip, const char *id, char *buf, size_t bufsz,
		      amp_error *err)
{
	amp_task_log log;
	amp_task_state s;
	int status;

	if ((status = amp_store_read_task(st, tip, id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	snprintf(buf, bufsz, "%s", s.state);
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return AMP_OK;
}

int amp_coord_waits(amp_store *st, git_tree *tip, const amp_task_log *log, json_t **out,
		    amp_error *err)
{
	amp_dep deps[AMP_DEPS_MAX];
	size_t i, n = amp_coord_deps(log, deps);
	char state[32];
	int status;

	if (!(*out = json_array()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	for (i = 0; i < n; i++) {
		if ((status = task_state(st, tip, deps[i].on, state, sizeof(state), err)) < 0) {
			json_decref(*out);
			*out = NULL;
			return status;
		}
		if (strcmp(state, "approved"))
			json_array_append_new(*out, json_pack("{s:s,s:b,s:s}", "task_id", deps[i].on,
							      "soft", deps[i].soft, "state", state));
	}
	return AMP_OK;
}

/* One task on the walk's path: the tasks it depends on (copies) and the
 * next one to follow. */
struct walk_frame {
	const char *task;  /* the key of `seen` */
	char **on;
	size_t n, next;
	int cyclic;        /* a cycle is reachable from the task */
};

/* The states of a task in a walk's `seen`. */
enum { ON_PATH = 1, CLEAN, CYCLIC };

/*
 * Tasks whose dependencies reach no cycle, in the tree `memo_tree`: what the
 * hook and amp fsck learn from one record's check and reuse for the next
 * record of the same commit.  One tree at a time; a tree never changes.
 */
static struct {
	git_oid tree;
	json_t *clean;
} memo;

/* Pushes `task` on the walk: reads its dependencies into a new frame. */
static int walk_enter(amp_store *st, git_tree *tip, struct walk_frame **stack, size_t *depth,
		      size_t *cap, json_t *seen, const char *task, amp_error *err)
{
	amp_task_log log;
	amp_dep deps[AMP_DEPS_MAX];
	struct walk_frame *f;
	size_t i;
	int status;

	if (*depth == *cap) {
		size_t more = *cap ? *cap * 2 : 64;
		struct walk_frame *grown = realloc(*stack, more * sizeof(**stack));

		if (!grown)
			return amp_error_set(err, AMP_EIO, "", "out of memory");
		*stack = grown;
		*cap = more;
	}
	if (json_object_set_new(seen, task, json_integer(ON_PATH)) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	f = &(*stack)[*depth];
	memset(f, 0, sizeof(*f));
	f->task = json_object_iter_key(json_object_iter_at(seen, task));
	if ((status = amp_store_read_task_controls(st, tip, task, &log, err)) < 0)
		return status;
	f->n = amp_coord_deps(&log, deps);
	if (f->n && !(f->on = calloc(f->n, sizeof(*f->on))))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	for (i = 0; status == AMP_OK && i < f->n; i++)
		if (!(f->on[i] = strdup(deps[i].on)))
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
	amp_task_log_free(&log);
	(*depth)++;
	return status;
}

static void walk_frame_free(struct walk_frame *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->on[i]);
	free(f->on);
}

/* The path of the walk's stack to `target`, "A -> B -> ...", into buf: the
 * first and last steps of a long one, with the count between. */
static void walk_path(const struct walk_frame *stack, size_t depth, const char *target,
		      char *buf, size_t bufsz)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < depth && len < bufsz; i++) {
		if (depth > 8 && i == 4) {
			len += (size_t)snprintf(buf + len, bufsz - len, " -> ... %zu more",
						depth - 7);
			i = depth - 4;
			continue;
		}
		len += (size_t)snprintf(buf + len, bufsz - len, "%s%s", i ? " -> " : "",
					stack[i].task);
	}
	if (len < bufsz)
		snprintf(buf + len, bufsz - len, " -> %s", target);
}

/*
 * Depth-first from `task` along dependencies: 1 when `target` is reached
 * (the path in path, walk_path), 0 when not, or an error.  The walk keeps its path on the heap, a frame of a few
 * words per task: a chain of any length costs memory, not the C stack
 * (issue 30: the recursion this replaces died at about 6,400 links).  It
 * reads at most AMP_DEPS_WALK_MAX tasks.  `clean` (NULL: none) holds tasks
 * known to reach no cycle, skipped, and gets those this walk proves so;
 * only a check of a dependency already in the tree may use it (see
 * amp_coord_check_depend).
 */
static int reaches(amp_store *st, git_tree *tip, const char *task, const char *target,
		   json_t *clean, char *path, size_t pathsz, amp_error *err)
{
	struct walk_frame *stack = NULL, *f;
	size_t depth = 0, cap = 0;
	json_t *seen = json_object(), *state;
	int status;

	if (!seen)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	status = walk_enter(st, tip, &stack, &depth, &cap, seen, task, err);
	while (status == AMP_OK && depth) {
		const char *on;

		f = &stack[depth - 1];
		if (f->next == f->n) {
			/* every dependency of f->task followed */
			json_object_set_new(seen, f->task, json_integer(f->cyclic ? CYCLIC : CLEAN));
			if (clean && !f->cyclic)
				json_object_set_new(clean, f->task, json_true());
			if (depth > 1 && f->cyclic)
				stack[depth - 2].cyclic = 1;
			walk_frame_free(f);
			depth--;
			continue;
		}
		on = f->on[f->next++];
		if (!strcmp(on, target)) {
			walk_path(stack, depth, target, path, pathsz);
			status = 1;
			break;
		}
		if (clean && json_object_get(clean, on))
			continue;
		if ((state = json_object_get(seen, on))) {
			if (json_integer_value(state) != CLEAN)
				f->cyclic = 1; /* a cycle that does not pass target */
			continue;
		}
		if (json_object_size(seen) >= AMP_DEPS_WALK_MAX)
			status = amp_error_set(err, AMP_ERULE, "",
					       "more than %d tasks depend on each other: cannot check for a cycle",
					       AMP_DEPS_WALK_MAX);
		else
			status = walk_enter(st, tip, &stack, &depth, &cap, seen, on, err);
	}
	while (depth)
		walk_frame_free(&stack[--depth]);
	free(stack);
	json_decref(seen);
	return status;
}

/* 1 when task_id depends on `on` in tip (its depend record is there). */
static int depends_in(amp_store *st, git_tree *tip, const char *task_id, const char *on)
{
	amp_task_log log;
	amp_dep deps[AMP_DEPS_MAX];
	amp_error err;
	size_t i, n;
	int found = 0;

	if (amp_store_read_task_controls(st, tip, task_id, &log, &err) < 0)
		return 0;
	n = amp_coord_deps(&log, deps);
	for (i = 0; i < n && !found; i++)
		found = !strcmp(deps[i].on, on);
	amp_task_log_free(&log);
	return found;
}

int amp_coord_check_depend(amp_store *st, git_tree *tip, const char *task_id,
			   const char *on, char *why, size_t whysz, amp_error *err)
{
	char path[512];
	json_t *clean = NULL;
	int found;

	if (!strcmp(task_id, on)) {
		snprintf(why, whysz, "task %s cannot depend on itself", task_id);
		return AMP_ERULE;
	}
	/* A dependency already in the tree (the hook, amp fsck: each record
	 * of a commit is checked in the commit's tree) is in a cycle when
	 * `on` reaches task_id, and a task that reaches no cycle cannot lie
	 * on that path: so what one check proves clean holds for the next
	 * check in the same tree, and a commit of N links costs N reads, not
	 * N squared. */
	if (tip && depends_in(st, tip, task_id, on)) {
		if (!memo.clean || !git_oid_equal(&memo.tree, git_tree_id(tip))) {
			json_decref(memo.clean);
			memo.clean = json_object();
			git_oid_cpy(&memo.tree, git_tree_id(tip));
		}
		clean = memo.clean;
	}
	found = reaches(st, tip, on, task_id, clean, path, sizeof(path), err);
	if (found < 0) {
		snprintf(why, whysz, "%s", err->message);
		return found;
	}
	if (found) {
		snprintf(why, whysz, "a cycle: %s already waits for %s (%s), so %s cannot wait for %s",
			 on, task_id, path, task_id, on);
		return AMP_ERULE;
	}
	return AMP_OK;
}

/* ---- plans --------------------------------------------------------------------- */

void amp_coord_plan(const amp_task_log *log, amp_plan *out)
{
	size_t i;

	out->priority = AMP_PRIORITY_DEFAULT;
	out->deadline_ms = -1;
	out->max_iterations = 0;
	out->capability = NULL;
	out->deadline_record = NULL;
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type"), *from = amp_json_str(e->doc, "from");
		const char *p = amp_json_str(e->doc, "priority"), *d = amp_json_str(e->doc, "deadline");
		const json_t *n = json_object_get(e->doc, "max_iterations");
		int64_t ms;

		if (e->kind != AMP_ENTRY_CTL || !type || strcmp(type, "plan") || !from ||
		    !amp_role_in(from, "coordinator admin") || !amp_task_entry_in_place(log, e))
			continue;
		if (p && p[0] == 'P' && p[1] >= '0' && p[1] <= '3' && !p[2])
			out->priority = p[1] - '0';
		if (d && amp_time_parse(d, &ms) == 0) {
			out->deadline_ms = ms;
			out->deadline_record = e->id;
		}
		if (json_is_integer(n) && json_integer_value(n) >= 1 &&
		    json_integer_value(n) <= AMP_POLICY_LOCK_THRESHOLD_MAX)
			out->max_iterations = (int)json_integer_value(n);
		if (amp_json_str(e->doc, "capability"))
			out->capability = amp_json_str(e->doc, "capability");
	}
}

struct ranked {
	int held, priority;
	size_t idx;
	json_t *msg;
};

static int by_rank(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;

	if (a->held != b->held)
		return a->held - b->held;
	if (a->priority != b->priority)
		return a->priority - b->priority;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int amp_coord_order_inbox(amp_store *st, json_t *messages, int64_t now_ms, amp_error *err)
{
	size_t n = json_array_size(messages), i;
	struct ranked *v = NULL;
	json_t *seen = NULL, *rank;
	git_tree *tip = NULL;
	int status = AMP_OK;

	if (n < 2)
		return AMP_OK;
	if (!(v = calloc(n, sizeof(*v))) || !(seen = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, err)) < 0)
		goto cleanup;
	for (i = 0; i < n; i++) {
		const char *task = amp_json_str(json_array_get(messages, i), "task_id");

		v[i].idx = i;
		v[i].msg = json_incref(json_array_get(messages, i));
		v[i].priority = AMP_PRIORITY_DEFAULT;
		if (!task)
			continue;
		if (!(rank = json_object_get(seen, task))) {
			amp_task_log log;
			amp_leases ls;
			amp_plan plan;

			if ((status = amp_store_read_task(st, tip, task, &log, err)) < 0)
				goto cleanup;
			amp_coord_leases(&log, &ls);
			amp_coord_plan(&log, &plan);
			rank = json_pack("[b,i]", amp_coord_holder(&ls, now_ms) != NULL, plan.priority);
			amp_task_log_free(&log);
			json_object_set_new(seen, task, rank);
		}
		v[i].held = json_is_true(json_array_get(rank, 0));
		v[i].priority = (int)json_integer_value(json_array_get(rank, 1));
	}
	if (n) /* qsort takes no NULL, even for nothing to sort */
		qsort(v, n, sizeof(*v), by_rank);
	for (i = 0; i < n; i++)
		json_array_set(messages, i, v[i].msg);
cleanup:
	for (i = 0; v && i < n; i++)
		json_decref(v[i].msg);
	free(v);
	json_decref(seen);
	git_tree_free(tip);
	return status;
}

/* ---- ready ------------------------------------------------------------------- */

static int cmp_since(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t p = json_integer_value(json_object_get(x, "rank"));
	json_int_t q = json_integer_value(json_object_get(y, "rank"));

	if (p == q) {
		p = json_integer_value(json_object_get(x, "since_ms"));
		q = json_integer_value(json_object_get(y, "since_ms"));
	}
	if (p != q)
		return p < q ? -1 : 1;
	return strcmp(amp_json_str(x, "task_id"), amp_json_str(y, "task_id"));
}

/* 1 when `s` is one of the strings of array a. */
static int in_strings(const json_t *a, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(a, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return 1;
	return 0;
}

int amp_coord_ready(amp_store *st, git_tree *tip, int64_t now_ms, const char *capability,
		    const json_t *can, json_t **out, amp_error *err)
{
	char **ids = NULL, since[AMP_TIME_BUFSZ];
	size_t n = 0, i, k = 0;
	json_t **v = NULL;
	int status;

	*out = NULL;
	if ((status = amp_store_list_tasks(st, tip, &ids, &n, err)) < 0)
		return status;
	if (n && !(v = calloc(n, sizeof(*v)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		amp_task_log log;
		amp_task_state s;
		amp_leases ls;
		amp_plan plan;
		json_t *waits = NULL;
		char prio[3] = "P0", due[AMP_TIME_BUFSZ];
		int64_t first;

		if ((status = amp_store_read_task(st, tip, ids[i], &log, err)) < 0)
			goto cleanup;
		amp_task_state_compute(&log, &s);
		amp_coord_leases(&log, &ls);
		amp_coord_plan(&log, &plan);
		prio[1] = (char)('0' + plan.priority);
		first = log.count ? amp_record_time(log.entries[0].doc) : -1;
		if (!s.aborted && !s.suspended && !s.lock_due && strcmp(s.state, "approved") &&
		    !amp_coord_holder(&ls, now_ms) &&
		    (!capability || (plan.capability && !strcmp(plan.capability, capability))) &&
		    (!can || !plan.capability || in_strings(can, plan.capability)) &&
		    (status = amp_coord_waits(st, tip, &log, &waits, err)) == AMP_OK &&
		    !json_array_size(waits))
			v[k++] = json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:s,s:I,s:i}", "task_id", ids[i],
					   "state", s.state, "priority", prio,
					   "deadline", plan.deadline_ms >= 0 ?
					   amp_time_format(plan.deadline_ms, due) : NULL,
					   "capability", plan.capability,
					   "since", amp_time_format(first, since), "since_ms",
					   (json_int_t)first, "rank", plan.priority);
		json_decref(waits);
		amp_task_state_free(&s);
		amp_task_log_free(&log);
		if (status < 0)
			goto cleanup;
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_since);
	*out = json_array();
	for (i = 0; i < k; i++) {
		json_object_del(v[i], "since_ms");
		json_object_del(v[i], "rank");
		json_array_append_new(*out, v[i]);
		v[i] = NULL;
	}
	status = *out ? AMP_OK : amp_error_set(err, AMP_EIO, "", "out of memory");
cleanup:
	for (i = 0; v && i < n; i++)
		json_decref(v[i]);
	free(v);
	amp_strv_free(ids, n);
	return status;
}
