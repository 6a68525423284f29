/*
 * watch.c - amp watch's pass (watch.h): the range of new commits read,
 * each changed task read again (its records checked by watch_rules.c, its
 * timers kept by watch_timers.c), rewrites of the history found, and the
 * state saved for the next pass.
 */
#include <errno.h>
#include "base/gitobj.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/tempfile.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "record/record.h"
#include "store/store.h"
#include "watch.h"
#include "watch_deps.h"
#include "watch_fire.h"
#include "watch_rules.h"
#include "watch_timers.h"

#define STATE_VERSION 3

/* ---- passes --------------------------------------------------------------- */

static void state_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/watch.json", amp_store_state_dir(st));
}

/* The build (cache.h) and the settings the timers were derived with: a
 * state kept by another build or under other settings is foreign. */
static json_t *policy_key(struct watch *w)
{
	const amp_policy *p = amp_store_policy(w->st);

	return json_pack("{s:s,s:i,s:I,s:i}", "build", amp_build_id(),
			 "lock_threshold", w->o->lock_threshold,
			 "max_clock_skew_ms", (json_int_t)p->max_clock_skew_ms,
			 "approval_levels", (int)p->approval_levels);
}

static json_t *fresh_state(struct watch *w)
{
	return json_pack("{s:i,s:s,s:o,s:n,s:{},s:{},s:{},s:{}}", "version", STATE_VERSION,
			 "ref", amp_store_messages_ref(w->st), "policy", policy_key(w),
			 "tip", "last_write", "tasks", "broken", "deps");
}

/*
 * The saved state:
 *   {"version":3, "ref":..., "policy":{"build","lock_threshold",
 *    "max_clock_skew_ms","approval_levels"}, "tip":"<commit>"|null,
 *    "last_write":{"<task> <role>[/<instance>]":{"ms":..,"msg":..|"path":..}},
 *    "tasks":{"<task_id>":{"acks":[{"msg","deadline","from","to","arrival"}],
 *                          "holders":[{"role","agent"?,"by","since","arrival"}],
 *                          "fired":[<heartbeat causes>],
 *                          "leases":[{"claim","agent","expires"}],
 *                          "deadline":<ms>}},
 *    "broken":{"<task_id>":"<why its directory cannot be read>"},
 *    "deps":{"<task_id>":[<the tasks it depends on hard, not approved>]}}
 * ("arrival": when the SSOT first held the message, when known.)
 * Anything else (missing, not a regular file, too big, unreadable, other
 * version, ref, build or settings) means a fresh state, hence a full
 * rescan: what was escalated is in the SSOT (has_cause), so a rescan
 * escalates nothing twice.
 */
static void load_state(struct watch *w)
{
	char path[4200];
	json_t *s, *key = policy_key(w);
	const char *ref;

	state_path(w->st, path, sizeof(path));
	s = w->o->full ? NULL : amp_cache_json(w->st, path);
	ref = amp_json_str(s, "ref");
	if (!json_is_object(s) ||
	    json_integer_value(json_object_get(s, "version")) != STATE_VERSION ||
	    !ref || strcmp(ref, amp_store_messages_ref(w->st)) ||
	    !json_equal(json_object_get(s, "policy"), key) ||
	    !json_is_object(json_object_get(s, "tasks")) ||
	    !json_is_object(json_object_get(s, "deps")) ||
	    !json_is_object(json_object_get(s, "last_write"))) {
		json_decref(s);
		s = fresh_state(w);
	}
	json_decref(key);
	if (!json_is_object(json_object_get(s, "broken")))
		json_object_set_new(s, "broken", json_object());
	w->state = s;
}

/* Written to a temporary file and renamed, so a reader (another watcher)
 * sees the old state or the new one, never half of one. */
static int save_state(struct watch *w)
{
	char path[4200];
	amp_tempfile t = { .fd = -1 };
	FILE *f;

	state_path(w->st, path, sizeof(path));
	if ((mkdir(amp_store_state_dir(w->st), 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_open(&t, path, 0) < 0 || !(f = amp_tempfile_stream(&t)) ||
	    json_dumpf(w->state, f, JSON_COMPACT) < 0 || amp_tempfile_commit(&t) < 0) {
		amp_tempfile_rollback(&t);
		return amp_errlist_add(w->errors, AMP_EIO, "", "cannot write %s: %s", path,
				       strerror(errno));
	}
	return AMP_OK;
}

/* 1 when record `name` is new since the last pass: listed in `new_files`;
 * true (a task directory the last pass did not have), null or NULL (a task
 * read again after it was unreadable) mean every record.  A name that is
 * not UTF-8 no list can hold (JSON names are UTF-8), and amp never writes
 * one: such a record is looked at whenever its task is read, and
 * escalated once (has_cause). */
static int is_new(const json_t *new_files, const char *name)
{
	if (!amp_utf8_valid(name))
		return 1;
	return !json_is_object(new_files) || json_object_get(new_files, name);
}

/* A task that runs no clock (finished, aborted, suspended, locked) needs
 * none of its holders' last writes: a clock that starts again (a resume, a
 * new round) runs from its own hand-off, later than every one of them.
 * Without this the state kept every task's writes, finished or not (at
 * 2,000 messages, 141 KB read and written at every pass: 50M instructions
 * for an amp watch --once on an unchanged SSOT, against 1.5M). */
static void forget_writes(struct watch *w, const char *task)
{
	json_t *lw = json_object_get(w->state, "last_write"), *v;
	const char *key;
	size_t len = strlen(task);
	void *tmp;

	json_object_foreach_safe(lw, tmp, key, v)
		if (!strncmp(key, task, len) && key[len] == ' ')
			json_object_del(lw, key);
}

static void process_task(struct watch *w, const char *task, const json_t *new_files)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *timers;
	struct task_pass t;
	amp_task_fold fold;
	amp_leases *leases = NULL;
	amp_task_state s;
	amp_task_log log;
	amp_error err;
	char name[300];
	size_t i;

	if (amp_store_read_task(w->st, w->tree, task, &log, &err) < 0) {
		amp_watch_task_broken(w, task, &err);
		json_object_del(tasks, task);
		return;
	}
	json_object_del(json_object_get(w->state, "broken"), task);
	w->stats->tasks_read++;
	t.w = w;
	t.log = &log;
	t.old = json_object_get(tasks, task);
	/* the rules of each new record see the state before it: one pass */
	amp_task_fold_init(&fold);
	t.fold = &fold;
	t.leases = &leases;
	/* AMP/1.0 No Silent Failure: a record nobody can read is reported. */
	for (i = 0; i < log.nbad; i++)
		if (is_new(new_files, log.bad[i].name))
			amp_watch_escalate_unknown(w, &log, log.bad[i].id, log.bad[i].name,
						   log.bad[i].reason);
	for (i = 0; i < log.count; i++) {
		const amp_entry *e = &log.entries[i];
		int unknown = 0;

		amp_watch_entry_name(e, name, sizeof(name));
		if (!is_new(new_files, name))
			continue;
		if (e->kind == AMP_ENTRY_MSG)
			unknown = amp_watch_check_message(&t, i);
		else if (e->kind == AMP_ENTRY_ACK)
			unknown = amp_watch_check_ack(&t, i);
		if (!unknown && (e->kind != AMP_ENTRY_CTL || amp_watch_is_type(e->doc, "heartbeat")))
			amp_watch_check_clock(&t, e, name);
		amp_watch_note_write(&t, e, name);
	}
	amp_task_state_compute(&log, &s);
	amp_watch_check_lock(w, &log, &s);
	amp_watch_check_deps(&t, &s);
	if ((timers = amp_watch_derive_timers(&t, &s))) {
		json_object_set_new(tasks, task, timers);
	} else {
		json_object_del(tasks, task);
		forget_writes(w, task);
	}
	amp_task_state_free(&s);
	amp_task_fold_free(&fold);
	free(leases);
	amp_task_log_free(&log);
}

/*
 * Sender clocks ("amp watch measures deadlines from the later of the
 * timestamp and the commit time it first saw"): for each record added by
 * the commits between `from` (NULL: the beginning) and `to`, the committer
 * time of the commit that added it (the oldest wins), into w->arrivals.
 * Each commit is compared with its first parent,
 * reading only the subtrees that differ.  Best effort: a commit that cannot
 * be read adds nothing, and its records count from their timestamps.
 */
static int walk_clocked(git_repository *repo, const git_oid *from, const git_oid *to,
			amp_record_times *times, amp_record_times *vouched, amp_store *release);

static void walk_arrivals(struct watch *w, const git_oid *from, const git_oid *to)
{
	walk_clocked(amp_store_repo(w->st), from, to, w->arrivals, w->vouched, w->st);
}

/*
 * Strict mode (sign.h): escalates each record of a commit in (from, to]
 * that is not signed by a key allowed to write as its role -- critical
 * permission_denied ("operation exceeds risk_level authorization scope":
 * here, beyond the key's), once per record, so the task is suspended until
 * the admin resumes.  The cause is the record's path (AMP_RECORD_CAUSE).
 * A commit below where trust starts on `to` (sign.h, amp_trust) passes.
 */
static void verify_range(struct watch *w, const git_oid *from, const git_oid *to)
{
	git_repository *repo = amp_store_repo(w->st);
	const amp_signing *signing = amp_store_signing(w->st);
	git_revwalk *walk = NULL;
	amp_trust trust;
	git_oid id;

	if (!signing->require)
		return;
	amp_trust_init(&trust, to);
	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, to) < 0 ||
	    (from && git_revwalk_hide(walk, from) < 0)) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot walk %s", amp_store_messages_ref(w->st));
		amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		w->failed = 1;
		goto cleanup;
	}
	while (!w->failed && git_revwalk_next(&id, walk) == 0) {
		git_commit *c = NULL, *parent = NULL;
		git_tree *ct = NULL, *pt = NULL;
		json_t *touched = json_object(), *files, *v, *docs = json_array();
		const char *task, *name;
		amp_signed_record froms[1000];
		char agent[AMP_AGENT_MAX + 1];
		char why[600], path[AMP_PATH_MAX * 2], sigof[AMP_PATH_MAX * 2];
		size_t n = 0, k;
		amp_error err;
		int ok;

		amp_store_walk_step();
		if (amp_git_commit_lookup(&c, repo, &id) < 0 || amp_git_commit_tree(&ct, c) < 0 ||
		    (git_commit_parentcount(c) &&
		     (amp_git_commit_parent(&parent, c, 0) < 0 || amp_git_commit_tree(&pt, parent) < 0)) ||
		    amp_store_diff_tasks(repo, pt, ct, touched, -1) < 0) {
			git_error_clear();
			goto next;
		}
		/* The "from" of each record the commit adds. */
		json_object_foreach(touched, task, files) {
			if (!json_is_object(files))
				continue;
			json_object_foreach(files, name, v) {
				git_tree_entry *e = NULL;
				git_blob *b = NULL;
				json_t *doc = NULL;

				amp_error perr;

				/* A record's signature is checked with its record. */
				if (amp_store_sig_record_path(name, sigof, sizeof(sigof)) == 0)
					continue;
				/* Fetched bytes: read within the record bounds. */
				if (amp_store_record_lookup(ct, task, name, &e, path, sizeof(path)) == 0 &&
				    git_blob_lookup(&b, repo, git_tree_entry_id(e)) == 0 &&
				    amp_bounds_parse_record(git_blob_rawcontent(b),
							    (size_t)git_blob_rawsize(b), &doc, &perr) < 0)
					doc = NULL;
				git_error_clear();
				json_array_append_new(docs, json_pack("{s:s,s:s,s:s,s:o?}", "task", task,
								      "path", path, "name", name,
								      "doc", doc));
				git_blob_free(b);
				git_tree_entry_free(e);
			}
		}
		json_array_foreach(docs, k, v)
			if (n < sizeof(froms) / sizeof(froms[0])) {
				const json_t *doc = json_object_get(v, "doc");

				froms[n].from = amp_or_none(amp_json_str(doc, "from"));
				froms[n].task = amp_json_str(v, "task");
				froms[n].path = amp_json_str(v, "path");
				froms[n++].agent = doc ? amp_coord_record_instance(doc) : NULL;
			}
		amp_commit_agent(c, agent, sizeof(agent));
		/* As the hook: more records than can be checked is a refusal,
		 * never a partial check. */
		if (json_array_size(docs) > n) {
			ok = 0;
			snprintf(why, sizeof(why), "it adds more than %zu records: too many to check", n);
		} else {
			ok = amp_store_check_commit_signed(w->st, c, froms, n, agent, why, sizeof(why),
							   &err);
		}
		/* Below where trust starts (sign.h): the admin vouched for it. */
		if (ok == 0)
			ok = amp_trust_vouches(&trust, repo, signing, &id, &err);
		if (ok < 0) {
			amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
			w->failed = 1;
			goto next;
		}
		json_array_foreach(docs, k, v) {
			const json_t *doc = json_object_get(v, "doc");
			const char *vtask = amp_json_str(v, "task"), *vpath = amp_json_str(v, "path");
			const char *msg = amp_json_str(doc, "msg_id"), *ack = amp_json_str(doc, "ack_for");
			json_t *affected;
			char description[1600], gone[64];
			amp_task_log log;

			if (ok)
				break;
			/* affected_msgs name messages of the SSOT: the record's own
			 * msg_id, or the message an ACK acknowledges. */
			if (amp_store_read_task(w->st, w->tree, vtask, &log, &err) < 0)
				continue;
			affected = json_array();
			if (msg && amp_task_log_find(&log, AMP_ENTRY_MSG, msg))
				json_array_append_new(affected, json_string(msg));
			else if (ack && amp_task_log_find(&log, AMP_ENTRY_MSG, ack))
				json_array_append_new(affected, json_string(ack));
			snprintf(gone, sizeof(gone), "%.12s", git_oid_tostr_s(&id));
			snprintf(description, sizeof(description),
				 AMP_RECORD_CAUSE "%s: commit %s is refused in strict mode: %.900s. The task is suspended until the admin resumes it (git config amp.requireSigned).",
				 vpath, gone, why);
			if (!amp_watch_has_cause(&log, "permission_denied", vpath))
				amp_watch_fire(w, vtask, "permission_denied", "critical", affected, NULL, description,
					       vpath);
			json_decref(affected);
			amp_task_log_free(&log);
		}
next:
		json_decref(docs);
		json_decref(touched);
		git_tree_free(ct);
		git_tree_free(pt);
		git_commit_free(parent);
		git_commit_free(c);
	}
cleanup:
	amp_trust_free(&trust);
	git_revwalk_free(walk);
}

/* Reads what changed between the trees of `from` (NULL: nothing) and `to`
 * and applies the rules to it. */
static int process_range(struct watch *w, const git_oid *from, const git_oid *to)
{
	git_repository *repo = amp_store_repo(w->st);
	git_commit *old_c = NULL, *new_c = NULL;
	git_tree *old_t = NULL;
	json_t *touched = json_object(), *files;
	const char *task;
	int status = AMP_OK;

	if (from && (amp_git_commit_lookup(&old_c, repo, from) < 0 ||
		     amp_git_commit_tree(&old_t, old_c) < 0)) {
		/* The last commit we saw is gone (history rewritten): start over. */
		git_error_clear();
		from = NULL;
	}
	if (!from) {
		json_decref(w->state);
		w->state = fresh_state(w);
		w->stats->rescanned = 1;
	}
	if (amp_git_commit_lookup(&new_c, repo, to) < 0 ||
	    amp_git_commit_tree(&w->tree, new_c) < 0 ||
	    amp_store_diff_tasks_whole(repo, w->st, from ? old_t : NULL, w->tree, touched) < 0) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(w->st));
		status = amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		goto cleanup;
	}
	/* Without it (out of memory), records count from their timestamps. */
	w->arrivals = amp_record_times_new();
	w->vouched = amp_record_times_new();
	walk_arrivals(w, from, to);
	/* Tasks that were unreadable are tried again, whole. */
	json_object_foreach(json_object_get(w->state, "broken"), task, files)
		if (!json_object_get(touched, task))
			json_object_set_new(touched, task, json_null());
	json_object_foreach(touched, task, files)
		process_task(w, task, files);
	verify_range(w, from, to);
	if (!w->failed) {
		char hex[GIT_OID_HEXSZ + 1];

		json_object_set_new(w->state, "tip", json_string(git_oid_tostr(hex, sizeof(hex), to)));
	}
cleanup:
	amp_record_times_free(w->arrivals);
	w->arrivals = NULL;
	amp_record_times_free(w->vouched);
	w->vouched = NULL;
	git_tree_free(w->tree);
	w->tree = NULL;
	git_tree_free(old_t);
	git_commit_free(old_c);
	git_commit_free(new_c);
	json_decref(touched);
	return status;
}

/* ---- rewrites ------------------------------------------------------------- */

/* 1 when an escalation of escalate_rewrite in log already names record
 * `name` lost since `seen_hex`: each lost record is escalated once. */
static int rewrite_known(const amp_task_log *log, const char *seen_hex, const char *name)
{
	char prefix[64];
	size_t i;

	snprintf(prefix, sizeof(prefix), AMP_RECORD_CAUSE "%.12s:", seen_hex);
	for (i = 0; i < log->count; i++) {
		const json_t *p = json_object_get(log->entries[i].doc, "payload");
		const char *d = amp_json_str(p, "description");
		const char *from = amp_json_str(log->entries[i].doc, "from");

		if (log->entries[i].kind == AMP_ENTRY_MSG && amp_watch_is_type(log->entries[i].doc, "escalation") &&
		    from && !strcmp(from, "system") && d &&
		    !strncmp(d, prefix, strlen(prefix)) && strstr(d, name))
			return 1;
	}
	return 0;
}

/*
 * AMP/1.0 "append-only, never rewritten": escalates, in task `task`, the
 * records of it the tip lost since the last intact tip `seen` (`lost`:
 * amp_seen_lost's objects, those of other tasks skipped).  Critical, so
 * the task is suspended until the admin resumes it.  The description names
 * the old and new tips and every record lost; the cause is "<seen
 * commit>:<path>" (a revision git show reads) of the first lost record no
 * such escalation names yet, and there is none when all are named: each
 * rewrite is escalated once, a later one that loses more records again.
 */
static void escalate_rewrite(struct watch *w, git_tree *tip_tree, const char *task,
			     const json_t *lost, const char *seen_hex, const char *tip_hex,
			     const char *seen_ref)
{
	amp_task_log log;
	amp_error err;
	json_t *l, *affected = json_array();
	char cause[600], description[3200], list[1300];
	const char *first = NULL;
	size_t i, len = 0, n = 0;

	if (amp_store_read_task(w->st, tip_tree, task, &log, &err) < 0) {
		amp_watch_task_broken(w, task, &err);
		json_decref(affected);
		return;
	}
	list[0] = '\0';
	json_array_foreach(lost, i, l) {
		const char *path = amp_json_str(l, "path"), *name = strrchr(path, '/') + 1, *id;
		amp_entry_kind kind;
		size_t id_len;
		char buf[300];

		if (strcmp(amp_json_str(l, "task"), task))
			continue;
		n++;
		if (!first && !rewrite_known(&log, seen_hex, name))
			first = path;
		if (len < sizeof(list) - 1)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (%s)", n > 1 ? ", " : "",
						name, amp_json_str(l, "change"));
		/* A message still there (changed) may be named. */
		if (amp_store_entry_parse(name, NULL, &kind, &id, &id_len) == 0 &&
		    kind == AMP_ENTRY_MSG && id_len < sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s", (int)id_len, id);
			if (amp_task_log_find(&log, AMP_ENTRY_MSG, buf) && json_array_size(affected) < 1000)
				json_array_append_new(affected, json_string(buf));
		}
	}
	if (first) {
		snprintf(cause, sizeof(cause), "%.12s:%s", seen_hex, first);
		snprintf(description, sizeof(description),
			 AMP_RECORD_CAUSE "%.600s: the history of %.300s was rewritten: it moved from %.40s (kept as %.300s) to %.40s, which lost %zu record%s of this task: %.1300s. Read them with git show %.12s:<path>; run amp fsck; the admin resumes the task once the history is restored or the loss accepted (append-only, never rewritten).",
			 cause, amp_store_messages_ref(w->st), seen_hex, seen_ref, tip_hex, n,
			 n == 1 ? "" : "s", list, seen_hex);
		/* affected_msgs[0] would be the cause: the path is. */
		amp_watch_fire(w, task, "unknown", "critical", affected, NULL, description, cause);
	}
	json_decref(affected);
	amp_task_log_free(&log);
}

/*
 * Rewrite detection: compares the records of the last intact tip (the seen
 * ref, seen.h; on the first pass the tip of the saved state) with those of
 * `tip` by identity and content.  When none is lost, *intact is set and
 * the caller moves the seen ref to tip after the pass; else each task that
 * lost records is escalated (escalate_rewrite) and the seen ref stays,
 * keeping the lost records readable.
 */
static int check_rewrite(struct watch *w, const git_oid *tip, git_oid *seen, int *have_seen,
			 int *intact)
{
	git_repository *repo = amp_store_repo(w->st);
	git_commit *sc = NULL, *tc = NULL;
	git_tree *st = NULL, *tt = NULL;
	json_t *lost = json_array(), *l, *tasks = json_object();
	const char *hex = amp_json_str(w->state, "tip"), *task;
	char seen_ref[AMP_PATH_MAX], seen_hex[GIT_OID_HEXSZ + 1], tip_hex[GIT_OID_HEXSZ + 1];
	amp_error err;
	size_t i;
	int status;

	*intact = 0;
	if ((status = amp_seen_read(w->st, seen, &err)) < 0)
		goto fail;
	*have_seen = status;
	status = AMP_OK;
	/* An SSOT watched before the seen ref existed starts from the tip the
	 * last pass saw, when it is still there. */
	if (!*have_seen && hex && git_oid_fromstr(seen, hex) == 0 &&
	    amp_git_commit_lookup(&sc, repo, seen) == 0) {
		if ((status = amp_seen_move(w->st, NULL, seen, &err)) < 0)
			goto fail;
		*have_seen = 1;
	}
	git_error_clear();
	if (!*have_seen || git_oid_equal(seen, tip)) {
		*intact = 1;
		goto cleanup;
	}
	git_commit_free(sc);
	sc = NULL;
	amp_seen_ref(w->st, seen_ref, sizeof(seen_ref));
	if (amp_git_commit_lookup(&sc, repo, seen) < 0 || amp_git_commit_tree(&st, sc) < 0 ||
	    amp_git_commit_lookup(&tc, repo, tip) < 0 || amp_git_commit_tree(&tt, tc) < 0 ||
	    amp_seen_lost(repo, st, tt, lost) < 0) {
		status = amp_error_git(&err, AMP_EIO, "cannot compare %s with %s", seen_ref,
				       amp_store_messages_ref(w->st));
		goto fail;
	}
	if (!json_array_size(lost)) {
		*intact = 1;
		goto cleanup;
	}
	git_oid_tostr(seen_hex, sizeof(seen_hex), seen);
	git_oid_tostr(tip_hex, sizeof(tip_hex), tip);
	json_array_foreach(lost, i, l)
		json_object_set_new(tasks, amp_json_str(l, "task"), json_true());
	json_object_foreach(tasks, task, l)
		escalate_rewrite(w, tt, task, lost, seen_hex, tip_hex, seen_ref);
	goto cleanup;
fail:
	amp_errlist_add(w->errors, status, "", "%s", err.message);
cleanup:
	json_decref(tasks);
	json_decref(lost);
	git_tree_free(st);
	git_tree_free(tt);
	git_commit_free(sc);
	git_commit_free(tc);
	return status;
}

int amp_watch_opts_load(amp_store *st, amp_watch_opts *o, amp_error *err)
{
	const amp_policy *p = amp_store_policy(st);

	memset(o, 0, sizeof(*o));
	o->lock_threshold = p->lock_threshold;
	o->heartbeat_ms = p->heartbeat_ms;
	return amp_clock_now_ms(&o->now_ms, err);
}

int amp_watch_pass(amp_store *st, amp_schema_set **set, const amp_watch_opts *o,
		   amp_watch_report_fn report, void *ctx, amp_watch_stats *stats,
		   amp_errlist *errors)
{
	struct watch w = { st, set, o, report, ctx, stats, errors, NULL, NULL, NULL, NULL, 0, 0, 0 };
	char *before = NULL;
	git_oid tip, last, seen, intact_tip;
	int iter, rc, status = AMP_OK, fired, have_seen = 0, intact = 0;

	memset(stats, 0, sizeof(*stats));
	load_state(&w);
	before = json_dumps(w.state, JSON_COMPACT);
	for (iter = 0; iter < 16; iter++) {
		const char *hex = amp_json_str(w.state, "tip");
		int have_last = hex && git_oid_fromstr(&last, hex) == 0;

		rc = git_reference_name_to_id(&tip, amp_store_repo(st), amp_store_messages_ref(st));
		if (rc < 0) {
			amp_error err;

			if (rc == GIT_ENOTFOUND)
				amp_error_set(&err, AMP_EIO, "",
					      "no AMP store in this repository (%s is missing): run 'amp init'",
					      amp_store_messages_ref(st));
			else
				amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(st));
			status = amp_errlist_add(errors, AMP_EIO, "", "%s", err.message);
			goto cleanup;
		}
		/* Before anything else reads it: what the tip lost since the
		 * last intact one. */
		if (iter == 0) {
			if ((status = check_rewrite(&w, &tip, &seen, &have_seen, &intact)) < 0 ||
			    w.failed)
				goto cleanup;
			git_oid_cpy(&intact_tip, &tip);
			if (!intact)
				continue;
		}
		if (!have_last || !git_oid_equal(&tip, &last) ||
		    (iter == 0 && json_object_size(json_object_get(w.state, "broken")))) {
			if ((status = process_range(&w, have_last ? &last : NULL, &tip)) < 0 || w.failed)
				goto cleanup;
			continue;
		}
		if (iter == 0)
			stats->unchanged = 1;
		fired = 0;
		amp_watch_evaluate_timers(&w, &fired);
		if (!fired || w.failed)
			break;
	}
cleanup:
	if (intact && !w.failed && status == AMP_OK &&
	    (!have_seen || !git_oid_equal(&seen, &intact_tip))) {
		amp_error err;

		if ((status = amp_seen_move(st, have_seen ? &seen : NULL, &intact_tip, &err)) < 0)
			amp_errlist_add(errors, status, "", "%s", err.message);
	}
	/* A pass that could not write an escalation keeps the old state, so
	 * the next one tries again. */
	if (!w.failed && status == AMP_OK) {
		char *after = json_dumps(w.state, JSON_COMPACT);

		if (!before || !after || strcmp(before, after))
			save_state(&w);
		free(after);
	}
	free(before);
	json_decref(w.state);
	if ((w.failed || w.broken) && status == AMP_OK)
		status = AMP_EIO;
	return status;
}

int amp_watch_diff_records(git_repository *repo, git_tree *a, git_tree *b, json_t *touched)
{
	return amp_store_diff_tasks(repo, a, b, touched, -1);
}

/* The clocks of a walk by time (store/arrivals.h), walked newest first:
 * the hub's note of the nearest noted commit seen so far stands for the
 * commits below it; so does this clone's first-seen note, down to the
 * local tip it names (below that the commits were this clone's already).
 * `vouched` gets the records they cover: 1 when the hub's note does, 2
 * when this clone's does (amp_watch_arrival_source). */
struct walk_clock {
	amp_arrivals hub_notes, seen_notes;
	int64_t hub;               /* -1: no noted commit above yet */
	int64_t unseen;            /* -1: none, or not for these commits */
	git_oid local;             /* where `unseen` stops */
	amp_record_times *vouched; /* may be NULL */
	amp_store *release;        /* NULL, or the store whose packs the walk
				    * closes every AMP_STORE_RELEASE_EVERY
				    * commits (store.h) */
};

/* The time the records of commit c count from, by the clocks (and which
 * one into *by: 0 when it is the commit's own date). */
static int64_t clock_time(struct walk_clock *clock, git_commit *c, int64_t *by)
{
	int64_t noted = amp_arrivals_get(&clock->hub_notes, git_commit_id(c)), unseen;
	int64_t committed = (int64_t)git_commit_time(c) * 1000;
	git_oid local;

	if (noted >= 0)
		clock->hub = noted;
	if (amp_arrivals_get_seen(&clock->seen_notes, git_commit_id(c), &unseen, &local)) {
		clock->unseen = unseen;
		git_oid_cpy(&clock->local, &local);
	}
	if (clock->unseen >= 0 && git_oid_equal(&clock->local, git_commit_id(c)))
		clock->unseen = -1;
	*by = clock->hub >= 0 ? 1 : clock->unseen > committed ? 2 : 0;
	return clock->hub >= 0 ? clock->hub : clock->unseen > committed ? clock->unseen : committed;
}

/* Puts the records commit c adds to its first parent into `times`, with
 * time `ms` (with a clock: clock_time, else the committer time, which the
 * writer chose).  A commit whose trees cannot be read adds nothing: its
 * records count from their timestamps. */
static void walk_one(git_repository *repo, git_commit *c, amp_record_times *times, int64_t ms,
		     struct walk_clock *clock)
{
	git_commit *parent = NULL;
	git_tree *tree = NULL, *ptree = NULL;
	int64_t by = 0;

	if (clock)
		ms = clock_time(clock, c, &by);
	if (amp_git_commit_tree(&tree, c) == 0 &&
	    (!git_commit_parentcount(c) ||
	     (amp_git_commit_parent(&parent, c, 0) == 0 && amp_git_commit_tree(&ptree, parent) == 0))) {
		amp_store_diff_times(repo, ptree, tree, times, ms);
		if (by && clock->vouched)
			amp_store_diff_times(repo, ptree, tree, clock->vouched, by);
	}
	git_error_clear();
	git_tree_free(ptree);
	git_tree_free(tree);
	git_commit_free(parent);
}

/* amp_watch_walk_records, with the hub's clock when `clock` is not NULL. */
static int walk_records(git_repository *repo, const git_oid *from, const git_oid *to,
			amp_record_times *times, struct walk_clock *clock)
{
	amp_first_parents chain;
	git_revwalk *walk = NULL;
	git_commit *c = NULL;
	int64_t index = 0;
	git_oid id;
	int rc = -1;

	if (!times)
		return -1;
	/*
	 * The whole history, as amp writes it (one parent each): down the
	 * first parents (amp_first_parents).  A merge (made by hand) leaves
	 * it all to the revwalk, which also reaches the other parents; what
	 * the chain put in is what the revwalk puts (the least wins, and above
	 * the first merge both visit the commits in the same order).  `to`
	 * unreadable: the walk cannot start, as the revwalk's push fails; an
	 * older commit ends it, as it ends the revwalk.
	 */
	if (!from) {
		amp_first_parents_start(&chain, repo, to);
		while ((rc = amp_first_parents_next(&chain, &c)) == 0 && git_commit_parentcount(c) < 2) {
			walk_one(repo, c, times, AMP_WATCH_WALK_LAST - index++, clock);
			git_commit_free(c);
			/* What libgit2 keeps of the packs (their delta bases:
			 * 17.6 MB of a first watch's 28.5 MB heap at 100k
			 * messages) grows with the walk; the chain holds no
			 * revwalk.  amp log and the dashboard do the same. */
			if (clock && clock->release && index % AMP_STORE_RELEASE_EVERY == 0)
				amp_store_release_packs(clock->release);
		}
		git_error_clear();
		if (rc < 0)
			return rc == GIT_ITEROVER || index ? 0 : -1;
		git_commit_free(c);
		c = NULL;
		index = 0;
		rc = -1;
		if (clock)
			clock->hub = clock->unseen = -1;
	}
	/* Newest first, each commit's parent next: libgit2's object cache
	 * then reads each tree once. */
	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, to) < 0 ||
	    (from && git_revwalk_hide(walk, from) < 0))
		goto cleanup;
	while (git_revwalk_next(&id, walk) == 0) {
		amp_store_walk_step();
		if (amp_git_commit_lookup(&c, repo, &id) == 0)
			walk_one(repo, c, times, AMP_WATCH_WALK_LAST - index, clock);
		index++;
		git_commit_free(c);
		c = NULL;
	}
	rc = 0;
cleanup:
	git_error_clear();
	git_revwalk_free(walk);
	return rc;
}

int amp_watch_walk_records(git_repository *repo, const git_oid *from, const git_oid *to,
			   amp_record_times *times, int by_time)
{
	return amp_watch_walk_arrivals(repo, from, to, times, by_time, NULL);
}

int amp_watch_walk_arrivals(git_repository *repo, const git_oid *from, const git_oid *to,
			    amp_record_times *times, int by_time, amp_record_times *vouched)
{
	if (!by_time)
		return walk_records(repo, from, to, times, NULL);
	return walk_clocked(repo, from, to, times, vouched, NULL);
}

/* amp_watch_walk_arrivals by time, closing the packs of `release` (not
 * NULL) as it goes. */
static int walk_clocked(git_repository *repo, const git_oid *from, const git_oid *to,
			amp_record_times *times, amp_record_times *vouched, amp_store *release)
{
	struct walk_clock clock = { .hub = -1, .unseen = -1, .vouched = vouched, .release = release };
	int rc;

	amp_arrivals_open(&clock.hub_notes, repo, AMP_ARRIVALS_REF);
	amp_arrivals_open(&clock.seen_notes, repo, AMP_FIRST_SEEN_REF);
	rc = walk_records(repo, from, to, times, &clock);
	amp_arrivals_close(&clock.hub_notes);
	amp_arrivals_close(&clock.seen_notes);
	return rc;
}
