#include "read.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "protocol/protocol.h"
#include "base/util.h"

/* ---- one record ------------------------------------------------------------ */

const char *amp_entry_kind_name(amp_entry_kind kind)
{
	return kind == AMP_ENTRY_MSG ? "msg" : kind == AMP_ENTRY_ACK ? "ack" : "ctl";
}

/*
 * Reads the record in blob `id`: its bytes as stored into *raw (owned; NULL
 * when the blob cannot be read or is past the size bound, which is found
 * without inflating it: store/process.h) and, when they are a JSON
 * object within the bounds, the parsed record into *doc.  Returns 0 with
 * *doc set, 1 with the reason in `reason` when the record is unreadable,
 * -1 when out of memory.
 */
static int read_record(git_repository *repo, const git_oid *id, char **raw,
		       size_t *len, json_t **doc, char *reason, size_t reasonsz)
{
	git_blob *blob = NULL;
	size_t size = 0;
	amp_error perr;
	int rc = 1, got;

	*raw = NULL;
	*len = 0;
	*doc = NULL;
	/* one search of the pack indexes (store/process.h) */
	if ((got = amp_store_blob_bounded(repo, id, AMP_LIMIT_MESSAGE_BYTES, &blob, &size)) > 0) {
		snprintf(reason, reasonsz, "%zu bytes, more than the %d-byte message size limit",
			 size, AMP_LIMIT_MESSAGE_BYTES);
		goto cleanup;
	}
	if (got < 0) {
		amp_error_git(&perr, AMP_EIO, "cannot read blob %s", git_oid_tostr_s(id));
		snprintf(reason, reasonsz, "%s", perr.message);
		git_error_clear();
		goto cleanup;
	}
	*len = (size_t)git_blob_rawsize(blob);
	if (!(*raw = malloc(*len + 1))) {
		rc = -1;
		goto cleanup;
	}
	memcpy(*raw, git_blob_rawcontent(blob), *len);
	(*raw)[*len] = '\0';
	if (amp_bounds_parse_record(*raw, *len, doc, &perr) < 0) {
		snprintf(reason, reasonsz, "%s", perr.message);
	} else if (!json_is_object(*doc)) {
		snprintf(reason, reasonsz, "not a JSON object");
		json_decref(*doc);
		*doc = NULL;
	} else {
		rc = 0;
	}
cleanup:
	git_blob_free(blob);
	return rc;
}

/* ---- one message ------------------------------------------------------------ */

/* Sets m's state and the reason, "<what> <id>..." */
static int stored_state(amp_stored_msg *m, amp_stored_state state, const char *reason)
{
	m->state = state;
	snprintf(m->reason, sizeof(m->reason), "%s", reason);
	return AMP_OK;
}

int amp_read_message(amp_store *st, git_tree *root, const char *msg_id,
		     amp_stored_msg *out, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_tree_entry *dir_entry = NULL;
	git_tree *dir_tree = NULL;
	char task[AMP_TASK_ID_MAX_LEN + 1], dir[128];
	amp_flat files = { 0 };
	size_t i, n;
	int rc, status = AMP_OK;

	memset(out, 0, sizeof(*out));
	snprintf(out->msg_id, sizeof(out->msg_id), "%s", msg_id);
	if (amp_msg_id_task(msg_id, task, sizeof(task)) < 0 ||
	    amp_store_task_dir(AMP_LAYOUT_FLAT, task, dir, sizeof(dir)) < 0)
		return stored_state(out, AMP_STORED_MISSING, "not a msg_id");
	rc = root ? amp_store_task_lookup(root, task, &dir_entry, dir, sizeof(dir)) : GIT_ENOTFOUND;
	if (rc == GIT_ENOTFOUND)
		return stored_state(out, AMP_STORED_MISSING, "not in the SSOT");
	if (rc < 0 || amp_git_tree_lookup(&dir_tree, repo, git_tree_entry_id(dir_entry)) < 0 ||
	    amp_store_task_files(repo, dir_tree, &files) < 0) {
		amp_error e;

		amp_error_git(&e, AMP_EIO, "cannot read the task directory %s", dir);
		git_error_clear();
		status = stored_state(out, AMP_STORED_UNREADABLE, e.message);
		goto cleanup;
	}
	/* The names start with a sequence number the msg_id does not tell:
	 * one pass over the directory's entries, no blob read but the one. */
	n = files.count;
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = files.v[i].e;
		const char *id;
		size_t id_len;
		amp_entry_kind kind;

		if (amp_store_entry_parse(git_tree_entry_name(e), NULL, &kind, &id, &id_len) < 0 ||
		    kind != AMP_ENTRY_MSG || id_len != strlen(msg_id) ||
		    memcmp(id, msg_id, id_len))
			continue;
		snprintf(out->path, sizeof(out->path), "%s/%s%s%s", dir, files.v[i].sub,
			 *files.v[i].sub ? "/" : "", git_tree_entry_name(e));
		rc = read_record(repo, git_tree_entry_id(e), &out->raw, &out->len, &out->doc,
				 out->reason, sizeof(out->reason));
		if (rc < 0)
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
		out->state = rc ? AMP_STORED_UNREADABLE : AMP_STORED_OK;
		goto cleanup;
	}
	status = stored_state(out, AMP_STORED_MISSING, "not in the SSOT");
cleanup:
	amp_flat_free(&files);
	git_tree_free(dir_tree);
	git_tree_entry_free(dir_entry);
	return status;
}

void amp_stored_msg_free(amp_stored_msg *m)
{
	free(m->raw);
	json_decref(m->doc);
	m->raw = NULL;
	m->doc = NULL;
}

void amp_stored_msgv_free(amp_stored_msg *v, size_t count)
{
	size_t i;

	for (i = 0; v && i < count; i++)
		amp_stored_msg_free(&v[i]);
	free(v);
}

/* ---- the context chain ------------------------------------------------------ */

struct chain {
	amp_store *st;
	git_tree *root;
	json_t *seen;        /* {msg_id: true}: each message once */
	amp_stored_msg *v;
	size_t count, alloc, cap;
	int truncated;
};

/* Adds the message `id` names (a JSON string; anything else is no reference)
 * to the chain unless it is there already. */
static int chain_add(struct chain *c, const json_t *id, const char *by, amp_error *err)
{
	const char *s = json_string_value(id);
	amp_stored_msg *bigger;
	int status;

	if (!s || json_object_get(c->seen, s))
		return AMP_OK;
	if (c->count == c->cap) {
		c->truncated = 1;
		return AMP_OK;
	}
	if (c->count == c->alloc) {
		size_t alloc = c->alloc ? 2 * c->alloc : 16;

		if (!(bigger = realloc(c->v, alloc * sizeof(*bigger))))
			return amp_error_set(err, AMP_EIO, "", "out of memory");
		c->v = bigger;
		c->alloc = alloc;
	}
	if (json_object_set_new(c->seen, s, json_true()) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	status = amp_read_message(c->st, c->root, s, &c->v[c->count], err);
	snprintf(c->v[c->count].referenced_by, sizeof(c->v[c->count].referenced_by), "%s", by);
	c->count++;
	return status;
}

/* Adds every message `doc` refers to (AMP/1.0 Context Completeness:
 * context_ref, and the payload's original_dispatch_ref, task_result_ref,
 * affected_msgs). */
static int chain_refs(struct chain *c, const json_t *doc, const char *by, amp_error *err)
{
	const json_t *payload = json_object_get(doc, "payload"), *id;
	static const char *const arrays[] = { "context_ref", "affected_msgs" };
	char self[AMP_MSG_ID_MAX_LEN + 1];
	size_t i, k;
	int status = AMP_OK;

	/* `by` may live in c->v, which chain_add reallocates. */
	snprintf(self, sizeof(self), "%s", by);
	for (k = 0; k < 2 && status == AMP_OK; k++)
		json_array_foreach(json_object_get(k ? payload : doc, arrays[k]), i, id)
			if ((status = chain_add(c, id, self, err)) < 0)
				break;
	if (status == AMP_OK)
		status = chain_add(c, json_object_get(payload, "original_dispatch_ref"), self, err);
	if (status == AMP_OK)
		status = chain_add(c, json_object_get(payload, "task_result_ref"), self, err);
	return status;
}

/* Oldest first: the unix_ms of the msg_id (-1 for what is not one), then
 * the msg_id. */
static int cmp_age(const void *a, const void *b)
{
	const amp_stored_msg *x = a, *y = b;
	int64_t mx = amp_msg_id_ms(x->msg_id), my = amp_msg_id_ms(y->msg_id);

	if (mx != my)
		return mx < my ? -1 : 1;
	return strcmp(x->msg_id, y->msg_id);
}

int amp_read_context(amp_store *st, git_tree *root, const amp_stored_msg *msg,
		     size_t cap, amp_stored_msg **out, size_t *count,
		     int *truncated, amp_error *err)
{
	struct chain c = { st, root, json_object(), NULL, 0, 0, cap, 0 };
	size_t i;
	int status;

	*out = NULL;
	*count = 0;
	*truncated = 0;
	if (!c.seen || json_object_set_new(c.seen, msg->msg_id, json_true()) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* Breadth first, so that a cut chain keeps what is nearest. */
	status = chain_refs(&c, msg->doc, msg->msg_id, err);
	for (i = 0; i < c.count && status == AMP_OK; i++)
		if (c.v[i].state == AMP_STORED_OK)
			status = chain_refs(&c, c.v[i].doc, c.v[i].msg_id, err);
	if (status < 0)
		goto cleanup;
	if (c.count)
		qsort(c.v, c.count, sizeof(*c.v), cmp_age);
	*out = c.v;
	*count = c.count;
	*truncated = c.truncated;
	c.v = NULL;
cleanup:
	amp_stored_msgv_free(c.v, c.count);
	json_decref(c.seen);
	return status;
}

const json_t *amp_read_ack_state(amp_store *st, git_tree *root,
				 const char *msg_id, int64_t now_ms,
				 json_t *cache, amp_error *err)
{
	char task[AMP_TASK_ID_MAX_LEN + 1];
	const json_t *status, *m;
	size_t i;

	if (amp_msg_id_task(msg_id, task, sizeof(task)) < 0) {
		amp_error_set(err, AMP_EUSAGE, "", "not a msg_id");
		return NULL;
	}
	if (!(status = json_object_get(cache, task))) {
		amp_task_log log;
		json_t *fresh;

		if (amp_store_read_task(st, root, task, &log, err) < 0)
			return NULL;
		fresh = amp_task_status_json(&log, now_ms);
		amp_task_log_free(&log);
		if (!fresh || json_object_set_new(cache, task, fresh) < 0) {
			amp_error_set(err, AMP_EIO, "", "out of memory");
			return NULL;
		}
		status = fresh;
	}
	json_array_foreach(json_object_get(status, "messages"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "msg_id")), msg_id))
			return m;
	/* A message amp sync set aside: its entry of "superseded". */
	json_array_foreach(json_object_get(status, "superseded"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "kind")), "message") &&
		    !strcmp(json_string_value(json_object_get(m, "id")), msg_id))
			return m;
	amp_error_set(err, AMP_EIO, "", "task %s lists no message %s", task, msg_id);
	return NULL;
}

/* ---- the audit trail -------------------------------------------------------- */

int amp_log_type_valid(const char *type)
{
	/* The types of control.schema.json's "type" enum. */
	static const char *const controls[] = { "resume", "approve", "abort", "heartbeat", "superseded",
						"idempotency_key", "claim", "release", "depend", "plan",
						"register", "address", "progress", "round", "acked",
						"question", "answer", "answer_ack" };
	size_t i;

	if (amp_type_lookup(type) || !strcmp(type, "ack"))
		return 1;
	for (i = 0; i < sizeof(controls) / sizeof(controls[0]); i++)
		if (!strcmp(type, controls[i]))
			return 1;
	return 0;
}

/* A record a commit added: where, and its blob. */
struct added {
	char path[AMP_PATH_MAX];
	git_oid blob;
};

struct walk {
	git_repository *repo;
	const amp_log_filter *f;
	amp_errlist *problems;
	const git_oid *commit;
	struct added *v;     /* the records of the current commit */
	size_t count, alloc;
	char agent[AMP_AGENT_MAX + 1]; /* its Amp-Agent trailer, "" none */
};

void amp_commit_agent(const git_commit *c, char *buf, size_t bufsz)
{
	git_message_trailer_array arr = { 0 };
	size_t i;

	buf[0] = '\0';
	if (git_message_trailers(&arr, git_commit_message(c)) < 0) {
		git_error_clear();
		return;
	}
	for (i = 0; i < arr.count; i++)
		if (!strcmp(arr.trailers[i].key, "Amp-Agent") &&
		    amp_agent_valid(arr.trailers[i].value, strlen(arr.trailers[i].value)))
			snprintf(buf, bufsz, "%s", arr.trailers[i].value);
	git_message_trailer_array_free(&arr);
}

/* Notes that `what` at `path` of the current commit cannot be read. */
static int problem(struct walk *w, const char *what, const char *path)
{
	size_t before = w->problems->count;
	amp_error e;

	amp_error_git(&e, AMP_EIO, "commit %s: cannot read %s%s%s", git_oid_tostr_s(w->commit),
		      what, *path ? " " : "", path);
	git_error_clear();
	amp_errlist_add(w->problems, AMP_EIO, "", "%s", e.message);
	return w->problems->count > before ? 0 : -1;
}

/*
 * Adds to w the records of tree b (at `path`, `depth` components below the
 * root) whose blob differs from a's (NULL: empty).  Subtrees with the same
 * id are skipped (amp_tree_diff_walk), so a commit costs what it changed,
 * not the size of the SSOT.  Depth 4 is a task directory: its entries are
 * the records.  This is the visit of one entry that differs.
 */
static int collect_one(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct walk *w = d->ctx;
	const git_tree_entry *be = e->b;
	const char *name = e->name, *path = e->path;
	amp_entry_kind kind;
	const char *id;
	size_t id_len;
	int reg;

	if (e->path_len >= AMP_PATH_MAX)
		return AMP_TREE_DIFF_SKIP; /* no store path is this long */
	/* A task's records are 4 directories down, the registry's 2
	 * (registry.h). */
	reg = !strncmp(path, AMP_REGISTRY_DIR "/", strlen(AMP_REGISTRY_DIR "/"));
	if (e->depth == (reg ? 2 : 4)) {
		struct added *bigger;
		char agent[AMP_AGENT_MAX + 1], hex[13];
		int64_t ms;

		if (git_tree_entry_type(be) != GIT_OBJECT_BLOB ||
		    (reg ? amp_registry_parse_path(path, agent, sizeof(agent), &ms, hex)
			 : amp_store_entry_parse(name, NULL, &kind, &id, &id_len)) < 0)
			return AMP_TREE_DIFF_SKIP;
		if (w->count == w->alloc) {
			size_t alloc = w->alloc ? 2 * w->alloc : 8;

			if (!(bigger = realloc(w->v, alloc * sizeof(*bigger))))
				return -1;
			w->v = bigger;
			w->alloc = alloc;
		}
		memcpy(w->v[w->count].path, path, e->path_len + 1);
		git_oid_cpy(&w->v[w->count].blob, git_tree_entry_id(be));
		w->count++;
		return AMP_TREE_DIFF_SKIP;
	}
	if (git_tree_entry_type(be) != GIT_OBJECT_TREE ||
	    (e->depth == 0 && strcmp(name, "tasks") && strcmp(name, AMP_REGISTRY_DIR)))
		return AMP_TREE_DIFF_SKIP;
	return AMP_TREE_DIFF_DESCEND;
}

/* A tree below which records are looked for cannot be read. */
static int collect_unreadable(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	return problem(d->ctx, "tree", e->path);
}

/* The records of b that a lacks (collect_one), below `prefix`. */
static int collect(struct walk *w, git_tree *a, git_tree *b, const char *prefix, int depth)
{
	amp_tree_diff d = { w->repo, 0, collect_one, collect_unreadable, w };

	return amp_tree_diff_walk(&d, a, b, prefix, depth, 0);
}

/* The records a commit (tree b) added to its parent (tree a, NULL: none),
 * into w: of the whole SSOT, or of the task directory of w->f->task alone,
 * never reading another task's directory. */
static int commit_records(struct walk *w, git_tree *a, git_tree *b)
{
	git_tree_entry *ea = NULL, *eb = NULL;
	git_tree *sa = NULL, *sb = NULL;
	char dir[128], adir[128];
	int rc = 0;

	w->count = 0;
	/* A migration (store.h "Layout") moves records, adds none */
	if (a && b && amp_store_tree_layout(w->repo, a) != amp_store_tree_layout(w->repo, b))
		return 0;
	if (!w->f->task)
		return collect(w, a, b, "", 0);
	if (amp_store_task_dir(AMP_LAYOUT_FLAT, w->f->task, dir, sizeof(dir)) < 0)
		return 0;
	/* Either layout's place: a migration moves it (store.h "Layout") */
	if ((rc = amp_store_task_lookup(b, w->f->task, &eb, dir, sizeof(dir))) < 0) {
		rc = rc == GIT_ENOTFOUND ? 0 : problem(w, "tree", dir);
		goto cleanup;
	}
	if (a && (rc = amp_store_task_lookup(a, w->f->task, &ea, adir, sizeof(adir))) < 0 &&
	    (rc = rc == GIT_ENOTFOUND ? 0 : problem(w, "tree", adir)) < 0)
		goto cleanup;
	if ((ea && git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb))) ||
	    git_tree_entry_type(eb) != GIT_OBJECT_TREE)
		goto cleanup;
	if (amp_git_tree_lookup(&sb, w->repo, git_tree_entry_id(eb)) < 0 ||
	    (ea && git_tree_entry_type(ea) == GIT_OBJECT_TREE &&
	     amp_git_tree_lookup(&sa, w->repo, git_tree_entry_id(ea)) < 0))
		rc = problem(w, "tree", dir);
	else
		rc = collect(w, sa, sb, dir, 4);
cleanup:
	git_tree_free(sa);
	git_tree_free(sb);
	git_tree_entry_free(ea);
	git_tree_entry_free(eb);
	return rc;
}

/* 1 when the member `key` of doc is the string `want`. */
static int member_is(const json_t *doc, const char *key, const char *want)
{
	const char *s = json_string_value(json_object_get(doc, key));

	return s && !strcmp(s, want);
}

/* 1 when needle is in hay[0..len). */
static int contains(const char *hay, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	if (!n)
		return 1;
	for (i = 0; n <= len && i <= len - n; i++)
		if (hay[i] == needle[0] && !memcmp(hay + i, needle, n))
			return 1;
	return 0;
}

/* 1 when the record passes every filter.  A record without a readable
 * field never matches a filter on it. */
static int passes(const amp_log_filter *f, const amp_log_record *r)
{
	int64_t t;

	if ((f->type && !member_is(r->doc, "type", f->type)) ||
	    (f->from && !member_is(r->doc, "from", f->from)) ||
	    (f->to && !member_is(r->doc, "to", f->to)))
		return 0;
	if (f->since_ms != INT64_MIN || f->until_ms != INT64_MAX) {
		t = r->doc ? amp_record_time(r->doc) : -1;
		if (t < 0 || t < f->since_ms || t > f->until_ms)
			return 0;
	}
	return !f->grep || (r->raw && contains(r->raw, r->len, f->grep));
}

/* Reads and reports the records of w (the current commit), last first.
 * Returns 1 when the walk is to stop, -1 when out of memory. */
static int report(struct walk *w, amp_log_fn fn, void *ctx, long long *left)
{
	size_t k;

	for (k = w->count; k-- > 0;) {
		struct added *a = &w->v[k];
		char reason[AMP_MSG_MAX], task[AMP_PATH_MAX], id[AMP_PATH_MAX];
		const char *name = strrchr(a->path, '/') + 1, *idp;
		amp_log_record r = { 0 };
		char *raw = NULL;
		json_t *doc = NULL;
		size_t len, id_len, task_len;
		int rc = 0, stop = 0;

		/* tasks/<YYYY>/<S>/<task>/<name> (layout 2: more directories,
		 * store.h "Layout"): the task is the directory named T-...;
		 * agents/<agent>/register-...json belongs to no task. */
		idp = strstr(a->path, "/T-");
		task_len = idp && idp < name ? strcspn(idp + 1, "/") + 1 : 0;
		memcpy(task, idp ? idp : "", task_len);
		task[task_len] = '\0';
		if (!task_len)
			snprintf(task, sizeof(task), "/");
		if (!strncmp(a->path, AMP_REGISTRY_DIR "/", strlen(AMP_REGISTRY_DIR "/"))) {
			r.kind = AMP_ENTRY_CTL;
			idp = name;
			id_len = strlen(name) - strlen(".json");
			task[0] = '/';
			task[1] = '\0';
		} else {
			amp_store_entry_parse(name, NULL, &r.kind, &idp, &id_len);
		}
		memcpy(id, idp, id_len);
		id[id_len] = '\0';
		len = 0;
		if (!w->f->names_only &&
		    (rc = read_record(w->repo, &a->blob, &raw, &len, &doc, reason, sizeof(reason))) < 0)
			return -1;
		if (w->f->names_only)
			rc = 0;
		git_oid_cpy(&r.commit, w->commit);
		r.path = a->path;
		r.task_id = strrchr(task, '/') + 1;
		r.id = id;
		r.doc = doc;
		r.reason = rc ? reason : NULL;
		r.raw = raw;
		r.len = len;
		r.agent = w->agent[0] ? w->agent : NULL;
		if (passes(w->f, &r)) {
			stop = fn(&r, ctx) != 0;
			if (w->f->limit && --*left == 0)
				stop = 1;
		}
		free(raw);
		json_decref(doc);
		if (stop)
			return 1;
	}
	return 0;
}

int amp_log_walk(amp_store *st, const amp_log_filter *f, amp_log_fn fn,
		 void *ctx, amp_errlist *problems, amp_error *err)
{
	struct walk w = { amp_store_repo(st), f, problems, NULL, NULL, 0, 0, "" };
	amp_first_parents chain;
	git_revwalk *walk = NULL;
	git_commit *tip = NULL;
	git_oid id;
	long long left = f->limit;
	size_t walked = 0;
	int rc = 0, next = 0, status;

	if ((status = amp_store_tip(st, amp_store_messages_ref(st), &tip, NULL, err)) < 0)
		return status;
	/* First parents only: the SSOT's history is linear, and a merge
	 * brought in by hand is listed by what it added to the main line.
	 * Stopping at a commit is the revwalk's: it hides what that commit
	 * reaches, on the main line or not. */
	amp_first_parents_start(&chain, w.repo, git_commit_id(tip));
	if (f->stop && (git_revwalk_new(&walk, w.repo) < 0 || git_revwalk_simplify_first_parent(walk) < 0 ||
			git_revwalk_push(walk, git_commit_id(tip)) < 0 ||
			git_revwalk_hide(walk, f->stop) < 0)) {
		status = amp_error_git(err, AMP_EIO, "cannot walk %s", amp_store_messages_ref(st));
		goto cleanup;
	}
	/* rc: 0 go on, 1 stop (the callback or -n), -1 out of memory. */
	while (rc == 0) {
		git_commit *c = NULL, *parent = NULL;
		git_tree *tree = NULL, *ptree = NULL;

		if (walk ? (next = git_revwalk_next(&id, walk)) < 0 :
			   (next = amp_first_parents_next(&chain, &c)) < 0)
			break;
		if (walk)
			amp_store_walk_step();
		/* What libgit2 keeps of the packs grows with the walk
		 * (store.h); a revwalk holds the odb the release frees. */
		else if (f->release_packs && walked && walked % AMP_STORE_RELEASE_EVERY == 0)
			amp_store_release_packs(st);
		walked++;
		if (c)
			git_oid_cpy(&id, git_commit_id(c));
		w.commit = &id;
		if ((!c && amp_git_commit_lookup(&c, w.repo, &id) < 0) || amp_git_commit_tree(&tree, c) < 0 ||
		    (git_commit_parentcount(c) &&
		     (amp_git_commit_parent(&parent, c, 0) < 0 || amp_git_commit_tree(&ptree, parent) < 0))) {
			/* Its records cannot be told from its parent's. */
			rc = problem(&w, "the commit or its parent's tree", "");
		} else if ((rc = commit_records(&w, ptree, tree)) == 0) {
			amp_commit_agent(c, w.agent, sizeof(w.agent));
			rc = report(&w, fn, ctx, &left);
		}
		git_tree_free(ptree);
		git_tree_free(tree);
		git_commit_free(parent);
		git_commit_free(c);
	}
	if (rc < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	else if (!rc && next != GIT_ITEROVER)
		status = amp_error_git(err, AMP_EIO, "cannot walk %s", amp_store_messages_ref(st));
cleanup:
	/* What the caller does next needs few of the index pages a long
	 * walk left resident (amp agents then summarises every task: at 100k
	 * messages it peaks at 65 MB when they stay, 60 MB when they go). */
	if (walked >= AMP_STORE_TRIM_AFTER)
		amp_store_trim_indexes();
	free(w.v);
	git_revwalk_free(walk);
	git_commit_free(tip);
	return status;
}

json_t *amp_log_record_json(const amp_log_record *r)
{
	char hex[GIT_OID_HEXSZ + 1];
	const json_t *d = r->doc;
	json_t *o;

	git_oid_tostr(hex, sizeof(hex), &r->commit);
	o = json_pack("{s:s,s:O?,s:s,s:s,s:O?,s:O?,s:O?,s:s,s:s,s:b,s:s?,s:O?}",
		      "commit", hex,
		      "time", json_is_string(json_object_get(d, "timestamp")) ? json_object_get(d, "timestamp") : NULL,
		      "task_id", amp_json_text(r->task_id),
		      "kind", amp_entry_kind_name(r->kind),
		      "type", json_is_string(json_object_get(d, "type")) ? json_object_get(d, "type") : NULL,
		      "from", json_is_string(json_object_get(d, "from")) ? json_object_get(d, "from") : NULL,
		      "to", json_is_string(json_object_get(d, "to")) ? json_object_get(d, "to") : NULL,
		      "id", amp_json_text(r->id),
		      "path", amp_json_text(r->path),
		      "unreadable", r->reason != NULL,
		      "agent", r->agent,
		      "record", d);
	if (o && r->reason)
		json_object_set_new(o, "reason", json_string(r->reason));
	return o;
}

struct writer {
	amp_entry_kind kind;
	const char *id;
	char *agent;
	size_t agentsz;
	int found;
};

static int note_writer(const amp_log_record *r, void *ctx)
{
	struct writer *w = ctx;

	if (r->kind != w->kind || strcmp(r->id, w->id))
		return 0;
	snprintf(w->agent, w->agentsz, "%s", r->agent ? r->agent : "");
	w->found = 1;
	return 1;
}

int amp_read_writer(amp_store *st, const char *task, amp_entry_kind kind, const char *id,
		    char *agent, size_t agentsz, amp_error *err)
{
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX, .task = task,
			     .names_only = 1 };
	amp_errlist problems = { 0 };
	struct writer w = { kind, id, agent, agentsz, 0 };
	git_oid commit;
	int status;

	agent[0] = '\0';
	/* The record index names the commit (store/recindex.h): no history
	 * is read.  Only when it cannot tell, the walk. */
	if (amp_recindex_find(st, task, kind, id, &commit, NULL)) {
		git_commit *c = NULL;

		if (amp_git_commit_lookup(&c, amp_store_repo(st), &commit) == 0) {
			amp_commit_agent(c, agent, agentsz);
			git_commit_free(c);
			return 1;
		}
		git_error_clear();
	}
	status = amp_log_walk(st, &f, note_writer, &w, &problems, err);
	amp_errlist_free(&problems);
	return status < 0 ? status : w.found;
}
