#include "coord.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "base/clock.h"
#include "write/write.h"
#include "record/record.h"
#include "read/read.h"
#include "registry.h"
#include "base/util.h"

/* ---- leases ---------------------------------------------------------------- */

int64_t amp_lease_expires(const amp_lease *l)
{
	return l->renewed_ms + l->ttl_ms;
}

static int in_force(const amp_lease *l, int64_t at)
{
	return !l->released && at <= amp_lease_expires(l);
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
		if (in_force(&ls->v[i], at_ms) && overlaps(&ls->v[i], subtask) &&
		    (!agent || strcmp(ls->v[i].agent, agent)))
			return &ls->v[i];
	return NULL;
}

const amp_lease *amp_coord_holder(const amp_leases *ls, int64_t at_ms)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (in_force(&ls->v[i], at_ms))
			return &ls->v[i];
	return NULL;
}

/* Renews the leases in force at `at` (of `agent` only, when not NULL). */
static void renew(amp_leases *ls, const char *agent, int64_t at)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (in_force(&ls->v[i], at) && (!agent || !strcmp(ls->v[i].agent, agent)) &&
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
		if (in_force(l, at) && !strcmp(l->agent, agent) &&
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
	return NULL;
}

/* A release in force where it stands: NULL (applied), else why not. */
static const char *apply_release(amp_leases *ls, const json_t *doc)
{
	amp_lease *l = lease_named(ls, amp_json_str(doc, "releases"));

	if (!l || l->released)
		return "it names no lease of the task that is not released";
	l->released = 1;
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
			if (in_force(&ls->v[i], at) && overlaps(&ls->v[i], sub))
				ls->v[i].released = 1;
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
	snprintf(why, whysz, "task %s is claimed by %s%s%s until %s: only %s may write to it as the executor (you are %s)",
		 log->task_id, l->agent, l->subtask[0] ? " for subtask " : "", l->subtask,
		 amp_time_format(amp_lease_expires(l), until), l->agent,
		 agent ? agent : "an unnamed executor: --agent");
	return AMP_ERULE;
}

const char *amp_coord_record_instance(const json_t *doc)
{
	const char *type = amp_json_str(doc, "type"), *from = amp_json_str(doc, "from");

	if (!type || !(!strcmp(type, "claim") || !strcmp(type, "heartbeat") ||
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

/* ---- agents ------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts an array of strings in place. */
static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(json_string_value(json_array_get(arr, j - 1)),
					    json_string_value(json_array_get(arr, j))) > 0; j--) {
			json_t *x = json_incref(json_array_get(arr, j));

			json_array_set(arr, j, json_array_get(arr, j - 1));
			json_array_set_new(arr, j - 1, x);
		}
}

/* The entry of `agent` in `all`, made when missing: what its writes say
 * ("roles" an object of role -> true, while it is gathered). */
static json_t *agent_entry(json_t *all, const char *agent)
{
	json_t *a = json_object_get(all, agent);

	if (!a) {
		a = json_pack("{s:s,s:{},s:n,s:n,s:I}", "agent", agent, "roles", "last_write",
			      "last_task", "writes", (json_int_t)0);
		json_object_set_new(all, agent, a);
	}
	return a;
}

static int note_agent(const amp_log_record *r, void *ctx)
{
	json_t *all = ctx, *a;
	const char *agent = r->agent, *from = amp_json_str(r->doc, "from");
	const char *type = amp_json_str(r->doc, "type");
	char when[AMP_TIME_BUFSZ];
	int64_t t = r->doc ? amp_record_time(r->doc) : -1;

	/* A claim names its instance in the record too (a fetched one). */
	if (!agent && type && !strcmp(type, "claim"))
		agent = amp_json_str(r->doc, "agent");
	if (!agent || !amp_agent_valid(agent, strlen(agent)) || !(a = agent_entry(all, agent)))
		return 0;
	if (from && amp_role_in(from, "admin coordinator executor reviewer"))
		json_object_set_new(json_object_get(a, "roles"), from, json_true());
	json_object_set_new(a, "writes", json_integer(json_integer_value(json_object_get(a, "writes")) + 1));
	/* Newest first: the first record with a time is the last write. */
	if (t >= 0 && json_is_null(json_object_get(a, "last_write"))) {
		json_object_set_new(a, "last_write", json_string(amp_time_format(t, when)));
		/* A register record is a write of no task. */
		json_object_set_new(a, "last_task", *r->task_id ? json_string(r->task_id) : json_null());
	}
	return 0;
}

/* Adds what the newer commits wrote (`fresh`) to what the older ones did
 * (`all`): roles joined, writes added, the newer last write. */
static void merge_agents(json_t *all, json_t *fresh)
{
	const char *name, *role;
	json_t *f, *a, *v;

	json_object_foreach(fresh, name, f) {
		if (!(a = json_object_get(all, name))) {
			json_object_set(all, name, f);
			continue;
		}
		json_object_foreach(json_object_get(f, "roles"), role, v)
			json_object_set_new(json_object_get(a, "roles"), role, json_true());
		json_object_set_new(a, "writes",
				    json_integer(json_integer_value(json_object_get(a, "writes")) +
						 json_integer_value(json_object_get(f, "writes"))));
		if (!json_is_null(json_object_get(f, "last_write"))) {
			json_object_set(a, "last_write", json_object_get(f, "last_write"));
			json_object_set(a, "last_task", json_object_get(f, "last_task"));
		}
	}
}

#define AGENTS_CACHE_VERSION 1

/*
 * What the history of the messages ref says of each instance (agent_entry
 * objects by name), kept in <state dir>/agents.json with the tip it was
 * read at and the build that read it (cache.h): on a newer tip that
 * descends from it, only the commits since are walked; on another history
 * or of another build, all of them.  A cache that cannot be
 * read or written costs speed only.
 */
static int agents_seen(amp_store *st, const git_oid *tip, json_t **out, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX };
	amp_errlist problems = { 0 };
	char path[AMP_PATH_MAX], tmp[AMP_PATH_MAX + 32], hex[GIT_OID_HEXSZ + 1];
	json_t *file, *all = NULL, *fresh = NULL;
	git_oid since;
	int status = AMP_OK;

	snprintf(path, sizeof(path), "%s/agents.json", amp_store_state_dir(st));
	git_oid_tostr(hex, sizeof(hex), tip);
	file = amp_cache_json(st, path);
	if (file && json_integer_value(json_object_get(file, "version")) == AGENTS_CACHE_VERSION &&
	    amp_json_str(file, "build") && !strcmp(amp_json_str(file, "build"), amp_build_id()) &&
	    json_is_object(json_object_get(file, "agents")) &&
	    git_oid_fromstr(&since, amp_json_str(file, "tip") ? amp_json_str(file, "tip") : "") == 0) {
		if (git_oid_equal(&since, tip)) {
			*out = json_incref(json_object_get(file, "agents"));
			json_decref(file);
			return AMP_OK;
		}
		if (git_graph_descendant_of(repo, tip, &since) == 1) {
			all = json_deep_copy(json_object_get(file, "agents"));
			f.stop = &since;
		}
		git_error_clear();
	}
	json_decref(file);
	if (!all)
		all = json_object();
	if (!all || !(fresh = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = amp_log_walk(st, &f, note_agent, fresh, &problems, err)) < 0)
		goto cleanup;
	merge_agents(all, fresh);
	/* Best effort, written whole then renamed, as the other caches. */
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	file = json_pack("{s:i,s:s,s:s,s:O}", "version", AGENTS_CACHE_VERSION, "build", amp_build_id(),
			 "tip", hex, "agents", all);
	if (!file || (mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    json_dump_file(file, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0)
		unlink(tmp);
	json_decref(file);
	*out = json_incref(all);
cleanup:
	amp_errlist_free(&problems);
	json_decref(fresh);
	json_decref(all);
	return status;
}

int amp_coord_agents(amp_store *st, amp_schema_set *set, int64_t now_ms, json_t **out,
		     amp_error *err)
{
	amp_summaries *cache = NULL;
	json_t *all = NULL, *declared = NULL, *a, *roles, *list, *v;
	git_commit *tipc = NULL;
	git_tree *tip = NULL;
	char **ids = NULL;
	const char *name, *role;
	const char **names = NULL;
	size_t n = 0, i, k, m = 0;
	int status;

	*out = NULL;
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), &tipc, &tip, err)) < 0 ||
	    (status = agents_seen(st, git_commit_id(tipc), &all, err)) < 0 ||
	    (status = amp_registry_read(st, set, tip, &declared, err)) < 0 ||
	    (status = amp_store_list_tasks(st, tip, &ids, &n, err)) < 0)
		goto cleanup;
	/* The cache may be shared with others' reads: work on a copy. */
	a = json_deep_copy(all);
	json_decref(all);
	all = a;
	json_object_foreach(all, name, a)
		json_object_set_new(a, "holds", json_array());
	/* The leases in force, from amp status's cached summaries: no task's
	 * records are read when its directory did not change. */
	cache = amp_summaries_open(st);
	for (i = 0; all && i < n; i++) {
		json_t *sum = amp_summary_get(cache, st, tip, ids[i], now_ms, err), *c;

		if (!sum) {
			status = AMP_EIO;
			goto cleanup;
		}
		json_array_foreach(json_object_get(sum, "claims"), k, c)
			if (!json_is_true(json_object_get(c, "expired")) &&
			    (a = agent_entry(all, amp_json_str(c, "agent")))) {
				if (!json_object_get(a, "holds"))
					json_object_set_new(a, "holds", json_array());
				json_array_append_new(json_object_get(a, "holds"),
					json_pack("{s:s,s:O,s:O}", "task_id", ids[i], "subtask_id",
						  json_object_get(c, "subtask_id"), "expires",
						  json_object_get(c, "expires")));
			}
		json_decref(sum);
	}
	json_object_foreach(declared, name, v) {
		if (!(a = agent_entry(all, name)))
			continue;
		if (!json_object_get(a, "holds"))
			json_object_set_new(a, "holds", json_array());
	}
	*out = json_array();
	if (!all || !*out || !(names = calloc(json_object_size(all) + 1, sizeof(*names)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* Objects iterate in insertion order: by name. */
	json_object_foreach(all, name, a)
		names[m++] = name;
	qsort(names, m, sizeof(*names), cmp_names);
	for (k = 0; k < m; k++) {
		a = json_object_get(all, names[k]);
		list = json_array();
		roles = json_object_get(a, "roles");
		json_object_foreach(roles, role, v)
			json_array_append_new(list, json_string(role));
		sort_strings(list);
		json_object_set_new(a, "roles", list);
		json_object_set(a, "declared", json_object_get(declared, names[k]) ?
			json_object_get(declared, names[k]) : json_null());
		json_array_append(*out, a);
	}
	status = AMP_OK;
cleanup:
	if (status < 0) {
		json_decref(*out);
		*out = NULL;
	}
	free(names);
	amp_summaries_close(cache);
	amp_strv_free(ids, n);
	git_tree_free(tip);
	git_commit_free(tipc);
	json_decref(declared);
	json_decref(all);
	return status;
}

/* ---- writing ----------------------------------------------------------------- */

enum coord_op { OP_CLAIM, OP_RELEASE, OP_EXPIRE, OP_DEPEND, OP_PLAN, OP_DEADLINE };

struct coord_ctx {
	enum coord_op op;
	amp_schema_set *set;
	const char *task_id;
	const char *subtask;
	const char *from;
	const char *agent;
	const char *reason;
	long long ttl_sec;
	int64_t now_ms;
	amp_coord_result *res;
	amp_errlist *errors;
	size_t errors_base;
	json_t *doc; /* the record of the last attempt */
	const char *on; /* depend: the task waited for */
	int soft;
	const amp_plan *plan; /* plan: the fields to write (-1, 0, NULL: none) */
};

/* Records a refusal in the caller's list and for the store. */
static int refuse(struct coord_ctx *c, amp_error *err, int status, const char *path,
		  const char *why)
{
	amp_errlist_add(c->errors, status, path, "%s", why);
	return amp_error_set(err, status, path, "%s", why);
}

/* The next free control name "<type>-<ms>" of the task. */
static void control_name(const amp_task_log *log, const char *type, int64_t ms,
			 char *buf, size_t bufsz)
{
	do
		snprintf(buf, bufsz, "%s-%lld", type, (long long)ms++);
	while (amp_task_log_find(log, AMP_ENTRY_CTL, buf));
}

/* Builds c->doc, checks it against the schema and adds it to w. */
static int add_doc(struct coord_ctx *c, const amp_task_log *log, const char *type,
		   json_t *extra, amp_store_write *w, amp_error *err)
{
	char when[AMP_TIME_BUFSZ];
	const char *k;
	json_t *v;
	int status;

	json_decref(c->doc);
	c->doc = json_pack("{s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
			   "type", type, "task_id", c->task_id, "from", c->from,
			   "timestamp", amp_time_format(c->now_ms, when));
	if (!c->doc)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	json_object_foreach(extra, k, v)
		json_object_set(c->doc, k, v);
	if ((status = amp_control_validate(c->set, c->doc, c->errors)) < 0) {
		const amp_error *first = &c->errors->items[c->errors_base];

		return amp_error_set(err, status, first->path, "%s", first->message);
	}
	return amp_send_add_record(w, log, AMP_ENTRY_CTL, c->res->name, c->doc, err);
}

static int build_claim(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
		       amp_store_write *w, amp_error *err)
{
	amp_leases ls;
	const amp_lease *l;
	const amp_subtask *sub = NULL;
	char why[600];
	json_t *extra;
	int status;

	if (!s->last_dispatch)
		return refuse(c, err, AMP_ERULE, "/task_id",
			      "nothing to claim: the task has no task_dispatch");
	if (c->subtask && !(sub = amp_task_subtask(s, c->subtask))) {
		snprintf(why, sizeof(why), "task %s has no subtask %s", c->task_id, c->subtask);
		return refuse(c, err, AMP_ERULE, "/subtask_id", why);
	}
	if (sub ? !strcmp(sub->state, "approved") : !strcmp(s->state, "approved")) {
		snprintf(why, sizeof(why), "%s%s of %s is approved: nothing left to claim",
			 sub ? "subtask " : "the task", sub ? sub->id : "", c->task_id);
		return refuse(c, err, AMP_ERULE, "/task_id", why);
	}
	amp_coord_leases(log, &ls);
	if ((l = amp_coord_conflict(&ls, c->subtask, c->agent, c->now_ms))) {
		char until[AMP_TIME_BUFSZ];

		snprintf(c->res->holder, sizeof(c->res->holder), "%s", l->agent);
		c->res->expires_ms = amp_lease_expires(l);
		snprintf(why, sizeof(why), "%s%s%s%s is claimed by %s until %s",
			 l->subtask[0] ? "subtask " : "", l->subtask, l->subtask[0] ? " of " : "task ",
			 c->task_id, l->agent, amp_time_format(c->res->expires_ms, until));
		return refuse(c, err, AMP_ECLAIMED, "/task_id", why);
	}
	for (size_t i = 0; i < ls.n; i++)
		c->res->renewed |= in_force(&ls.v[i], c->now_ms) && !strcmp(ls.v[i].agent, c->agent) &&
				   !strcmp(ls.v[i].subtask, c->subtask ? c->subtask : "");
	control_name(log, "claim", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:I,s:s*}", "agent", c->agent, "ttl_sec", (json_int_t)c->ttl_sec,
			  "subtask_id", c->subtask);
	status = extra ? add_doc(c, log, "claim", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	c->res->expires_ms = c->now_ms + (int64_t)c->ttl_sec * 1000;
	return status;
}

/* The lease a release by c takes: the caller's own, else (admin,
 * coordinator) the only one in force, of c->subtask when given. */
static const amp_lease *release_target(struct coord_ctx *c, const amp_leases *ls)
{
	const amp_lease *found = NULL;
	size_t i, n = 0;

	for (i = 0; i < ls->n; i++) {
		const amp_lease *l = &ls->v[i];

		if (l->released || (c->subtask && strcmp(l->subtask, c->subtask)) ||
		    (!strcmp(c->from, "executor") && (!c->agent || strcmp(l->agent, c->agent))))
			continue;
		/* The holder's own lease counts even when it has expired. */
		if (!in_force(l, c->now_ms) && strcmp(c->from, "executor"))
			continue;
		found = l;
		n++;
	}
	return n == 1 ? found : NULL;
}

static int build_release(struct coord_ctx *c, const amp_task_log *log, amp_store_write *w,
			 amp_error *err)
{
	amp_leases ls;
	const amp_lease *l;
	char why[600];
	json_t *extra;
	int status;

	amp_coord_leases(log, &ls);
	if (!(l = release_target(c, &ls))) {
		snprintf(why, sizeof(why), "%s holds no single lease of task %s%s%s to release",
			 !strcmp(c->from, "executor") ? (c->agent ? c->agent : "an unnamed executor") :
			 "nobody", c->task_id, c->subtask ? " subtask " : "", c->subtask ? c->subtask : "");
		return refuse(c, err, AMP_ERULE, "/task_id", why);
	}
	snprintf(c->res->claim, sizeof(c->res->claim), "%s", l->claim);
	snprintf(c->res->agent, sizeof(c->res->agent), "%s", l->agent);
	control_name(log, "release", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:s,s:s*,s:s*}", "agent", l->agent, "releases", l->claim,
			  "subtask_id", l->subtask[0] ? l->subtask : NULL, "reason", c->reason);
	status = extra ? add_doc(c, log, "release", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	return status;
}

/* amp watch: the first expired lease of the task, released by system with
 * its escalation in the same commit; AMP_NOOP when none is left. */
static int build_expire(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
			amp_store_write *w, amp_error *err)
{
	amp_leases ls;
	const amp_lease *l = NULL;
	amp_task_log after;
	amp_send_result sres = { 0 };
	char dir[128], path[AMP_PATH_MAX], description[1400], until[AMP_TIME_BUFSZ];
	char entry[320], cause[600];
	const char *dispatch = amp_json_str(s->last_dispatch, "msg_id");
	json_t *extra, *affected;
	size_t i;
	int status;

	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n && !l; i++)
		if (!ls.v[i].released && c->now_ms > amp_lease_expires(&ls.v[i]))
			l = &ls.v[i];
	if (!l)
		return AMP_NOOP;
	snprintf(c->res->claim, sizeof(c->res->claim), "%s", l->claim);
	snprintf(c->res->agent, sizeof(c->res->agent), "%s", l->agent);
	control_name(log, "release", c->now_ms, c->res->name, sizeof(c->res->name));
	snprintf(description, sizeof(description), "the lease of %s ran out at %s",
		 l->agent, amp_time_format(amp_lease_expires(l), until));
	extra = json_pack("{s:s,s:s,s:s*,s:s}", "agent", l->agent, "releases", l->claim,
			  "subtask_id", l->subtask[0] ? l->subtask : NULL, "reason", description);
	status = extra ? add_doc(c, log, "release", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	if (status < 0)
		return status;
	/* The escalation's cause is the claim record (it has no msg_id). */
	for (i = 0; i < log->count; i++)
		if (log->entries[i].kind == AMP_ENTRY_CTL && !strcmp(log->entries[i].id, l->claim))
			break;
	if (i == log->count || !dispatch || amp_store_task_dir(c->task_id, dir, sizeof(dir)) < 0 ||
	    amp_store_entry_name(log->entries[i].seq, AMP_ENTRY_CTL, l->claim, entry,
				 sizeof(entry)) < 0)
		return AMP_OK;
	snprintf(path, sizeof(path), "%s/%s", dir, entry);
	snprintf(cause, sizeof(cause), "%s", path);
	if (amp_task_has_escalation(log, "heartbeat_timeout", "system", cause))
		return AMP_OK;
	snprintf(description, sizeof(description),
		 AMP_SILENCE_CAUSE "%s: %s claimed %s%s%s on a lease of %lld s and wrote nothing to the task after %s; amp watch released the claim, and the task is claimable again.",
		 path, l->agent, c->task_id, l->subtask[0] ? " subtask " : "", l->subtask,
		 (long long)(l->ttl_ms / 1000), amp_time_format(l->renewed_ms, until));
	after = *log;
	after.next_seq += (int)w->nfiles;
	affected = json_pack("[s]", dispatch);
	status = affected ? amp_send_add_escalation(c->set, w, &after, "heartbeat_timeout", "warning",
						    description, affected, NULL, c->now_ms, &sres,
						    NULL, err)
			  : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(affected);
	snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s", sres.escalation_id);
	return status;
}

static int build_plan(struct coord_ctx *c, const amp_task_log *log, amp_store_write *w,
		      amp_error *err)
{
	const amp_plan *p = c->plan;
	char when[AMP_TIME_BUFSZ], prio[3] = "P0";
	json_t *extra = json_object();
	int status;

	if (!extra)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	prio[1] = (char)('0' + (p->priority >= 0 ? p->priority : 0));
	if (p->priority >= 0)
		json_object_set_new(extra, "priority", json_string(prio));
	if (p->deadline_ms >= 0)
		json_object_set_new(extra, "deadline", json_string(amp_time_format(p->deadline_ms, when)));
	if (p->max_iterations > 0)
		json_object_set_new(extra, "max_iterations", json_integer(p->max_iterations));
	if (p->capability)
		json_object_set_new(extra, "capability", json_string(p->capability));
	control_name(log, "plan", c->now_ms, c->res->name, sizeof(c->res->name));
	status = add_doc(c, log, "plan", extra, w, err);
	json_decref(extra);
	return status;
}

/* amp watch: a deadline passed before the approval, escalated once per plan
 * record; AMP_NOOP when there is nothing (more) to say. */
static int build_deadline(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
			  amp_store_write *w, amp_error *err)
{
	amp_plan p;
	amp_send_result sres = { 0 };
	const amp_entry *rec;
	char dir[128], entry[320], path[AMP_PATH_MAX], due[AMP_TIME_BUFSZ], description[1400];
	const char *dispatch = amp_json_str(s->last_dispatch, "msg_id");
	json_t *affected;
	int status;

	amp_coord_plan(log, &p);
	if (p.deadline_ms < 0 || c->now_ms <= p.deadline_ms || s->aborted ||
	    !strcmp(s->state, "approved") || !dispatch ||
	    !(rec = amp_task_log_find(log, AMP_ENTRY_CTL, p.deadline_record)) ||
	    amp_store_task_dir(c->task_id, dir, sizeof(dir)) < 0 ||
	    amp_store_entry_name(rec->seq, AMP_ENTRY_CTL, rec->id, entry, sizeof(entry)) < 0)
		return AMP_NOOP;
	snprintf(path, sizeof(path), "%s/%s", dir, entry);
	if (amp_task_has_escalation(log, "unknown", "system", path))
		return AMP_NOOP;
	snprintf(description, sizeof(description),
		 AMP_DEADLINE_CAUSE "%s: task %s was due at %s (amp plan --deadline) and is %s.",
		 path, c->task_id, amp_time_format(p.deadline_ms, due), s->state);
	if (!(affected = json_pack("[s]", dispatch)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	status = amp_send_add_escalation(c->set, w, log, "unknown", "warning", description,
					 affected, NULL, c->now_ms, &sres, NULL, err);
	json_decref(affected);
	snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s", sres.escalation_id);
	return status;
}

static int build_depend(struct coord_ctx *c, amp_store *st, git_tree *tip,
			const amp_task_log *log, amp_store_write *w, amp_error *err)
{
	amp_dep deps[AMP_DEPS_MAX];
	char why[700];
	json_t *extra;
	int status;

	if ((status = amp_coord_check_depend(st, tip, c->task_id, c->on, why, sizeof(why), err)) < 0)
		return status == AMP_ERULE ? refuse(c, err, AMP_ERULE, "/on", why) : status;
	if (amp_coord_deps(log, deps) >= AMP_DEPS_MAX) {
		snprintf(why, sizeof(why), "task %s depends on %d tasks already, the most it may",
			 c->task_id, AMP_DEPS_MAX);
		return refuse(c, err, AMP_ERULE, "/on", why);
	}
	control_name(log, "depend", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:b}", "on", c->on, "soft", c->soft);
	status = extra ? add_doc(c, log, "depend", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	return status;
}

static int build(amp_store *st, git_tree *tip, void *vctx, amp_store_write *w, amp_error *err)
{
	struct coord_ctx *c = vctx;
	amp_task_log log;
	amp_task_state s;
	char closed[512], why[700];
	const char *type = c->op == OP_CLAIM ? "claim" : c->op == OP_DEPEND ? "depend" :
			   c->op == OP_PLAN ? "plan" : c->op == OP_DEADLINE ? "escalation" : "release";
	int status;

	amp_errlist_truncate(c->errors, c->errors_base);
	memset(c->res, 0, sizeof(*c->res));
	if ((status = amp_store_read_task(st, tip, c->task_id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	/* Refused while the task is closed to the role, exactly like a
	 * message (aborted, suspended, locked). */
	if (log.count && c->op != OP_EXPIRE && amp_task_closed_to(&s, c->from, closed, sizeof(closed))) {
		snprintf(why, sizeof(why), "task %s %s", c->task_id, closed);
		status = refuse(c, err, AMP_ERULE, "/task_id", why);
	} else if (c->op == OP_DEPEND || c->op == OP_PLAN) {
		/* Planned before the dispatch: a new task too. */
		status = c->op == OP_DEPEND ? build_depend(c, st, tip, &log, w, err)
					    : build_plan(c, &log, w, err);
	} else if (c->op == OP_DEADLINE) {
		status = log.count ? build_deadline(c, &log, &s, w, err) : AMP_NOOP;
	} else if (!log.count) {
		snprintf(why, sizeof(why), "task %s has no records", c->task_id);
		status = refuse(c, err, AMP_ERULE, "/task_id", why);
	} else if (c->op == OP_CLAIM) {
		status = build_claim(c, &log, &s, w, err);
	} else if (c->op == OP_RELEASE) {
		status = build_release(c, &log, w, err);
	} else {
		status = build_expire(c, &log, &s, w, err);
	}
	if (status == AMP_OK) {
		if (c->op == OP_DEADLINE)
			snprintf(w->subject, sizeof(w->subject), "escalation %s system -> admin: deadline missed",
				 c->task_id);
		else if (c->op == OP_PLAN)
			snprintf(w->subject, sizeof(w->subject), "plan %s %s", c->task_id, c->from);
		else if (c->op == OP_DEPEND)
			snprintf(w->subject, sizeof(w->subject), "depend %s %s: on %s%s", c->task_id,
				 c->from, c->on, c->soft ? " (soft)" : "");
		else if (c->op == OP_CLAIM)
			snprintf(w->subject, sizeof(w->subject), "claim %s %s: %s%s%s", c->task_id,
				 c->from, c->agent, c->subtask ? " subtask " : "",
				 c->subtask ? c->subtask : "");
		else
			snprintf(w->subject, sizeof(w->subject), "release %s %s: %s of %s", c->task_id,
				 c->from, c->res->claim, c->res->agent);
		snprintf(w->trailers, sizeof(w->trailers), "%s%s%sAmp-Type: %s\nAmp-Task: %s\n%s%s%s",
			 c->op == OP_DEADLINE ? "Amp-Msg-Id: " : "",
			 c->op == OP_DEADLINE ? c->res->escalation_id : "",
			 c->op == OP_DEADLINE ? "\n" : "", type, c->task_id, c->res->escalation_id[0] ? "Amp-Escalation: " : "",
			 c->op == OP_DEADLINE ? "" : c->res->escalation_id,
			 c->res->escalation_id[0] && c->op != OP_DEADLINE ? "\n" : "");
		snprintf(w->author, sizeof(w->author), "%s", c->from);
	}
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return status;
}

static int run(amp_store *st, struct coord_ctx *c, const char *type)
{
	amp_error err;
	int status;

	status = amp_store_update(st, amp_store_messages_ref(st), build, c, NULL, &err);
	if (status < 0 && c->errors->count == c->errors_base)
		amp_errlist_add(c->errors, status, err.path, "%s", err.message);
	/* A lost race is no non-conforming record: only refusals are logged. */
	if (status == AMP_ERULE || status == AMP_ESCHEMA) {
		amp_send_opts opts = { type, "built", NULL, 0, 0, NULL };
		json_t *attempt = c->doc ? json_incref(c->doc)
					 : json_pack("{s:s,s:s,s:s,s:s?,s:s?}", "type", type,
						     "task_id", c->task_id, "from", c->from,
						     "agent", c->agent, "subtask_id", c->subtask);

		amp_send_log_rejection(st, &opts, attempt, status, c->errors, c->errors_base);
		json_decref(attempt);
	}
	json_decref(c->doc);
	c->doc = NULL;
	return status;
}

int amp_coord_claim(amp_store *st, amp_schema_set *set, const char *task_id,
		    const char *subtask, const char *from, const char *agent,
		    long long ttl_sec, int64_t now_ms, amp_coord_result *res,
		    amp_errlist *errors)
{
	struct coord_ctx c = { OP_CLAIM, set, task_id, subtask, from, agent, NULL, ttl_sec,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (strcmp(from, "executor"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a claim comes from the executor, not %s", from);
	if (!agent)
		return amp_errlist_add(errors, AMP_EUSAGE, "/agent",
				       "a claim names its instance: --agent NAME (or AMP_AGENT, git config amp.agent)");
	return run(st, &c, "claim");
}

int amp_coord_release(amp_store *st, amp_schema_set *set, const char *task_id,
		      const char *subtask, const char *from, const char *agent,
		      const char *reason, int64_t now_ms, amp_coord_result *res,
		      amp_errlist *errors)
{
	struct coord_ctx c = { OP_RELEASE, set, task_id, subtask, from, agent, reason, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "executor coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a release comes from the holder (executor), the coordinator or the admin, not %s",
				       from);
	return run(st, &c, "release");
}

int amp_coord_depend(amp_store *st, amp_schema_set *set, const char *task_id,
		     const char *on, int soft, const char *from, int64_t now_ms,
		     amp_coord_result *res, amp_errlist *errors)
{
	struct coord_ctx c = { OP_DEPEND, set, task_id, NULL, from, NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, on, soft, NULL };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a dependency is planned by the coordinator or the admin, not %s", from);
	return run(st, &c, "depend");
}

int amp_coord_plan_write(amp_store *st, amp_schema_set *set, const char *task_id,
			 int priority, int64_t deadline_ms, int max_iterations,
			 const char *capability, const char *from, int64_t now_ms,
			 amp_coord_result *res, amp_errlist *errors)
{
	amp_plan p = { priority, deadline_ms, max_iterations, capability, NULL };
	struct coord_ctx c = { OP_PLAN, set, task_id, NULL, from, NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, &p };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a plan is the coordinator's or the admin's, not %s", from);
	return run(st, &c, "plan");
}

int amp_coord_deadline(amp_store *st, amp_schema_set *set, const char *task_id,
		       int64_t now_ms, amp_coord_result *res, int *escalated,
		       amp_errlist *errors)
{
	struct coord_ctx c = { OP_DEADLINE, set, task_id, NULL, "system", NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };
	int status = run(st, &c, "escalation");

	*escalated = status == AMP_OK;
	return status == AMP_NOOP ? AMP_OK : status;
}

int amp_coord_expire(amp_store *st, amp_schema_set *set, const char *task_id,
		     int64_t now_ms, amp_coord_result *res, int *released,
		     amp_errlist *errors)
{
	amp_coord_result one;
	int status = AMP_OK, n;

	memset(res, 0, sizeof(*res));
	*released = 0;
	/* One commit per lease; AMP_LEASES_MAX bounds the loop. */
	for (n = 0; n < AMP_LEASES_MAX; n++) {
		struct coord_ctx c = { OP_EXPIRE, set, task_id, NULL, "system", NULL, NULL, 0,
				       now_ms, &one, errors, errors->count, NULL, NULL, 0, NULL };

		status = run(st, &c, "release");
		if (status != AMP_OK)
			break;
		(*released)++;
		*res = one;
	}
	return status == AMP_NOOP ? AMP_OK : status;
}
