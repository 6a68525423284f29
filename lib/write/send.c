#include "send.h"
#include "protocol/protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record/record.h"
#include "base/clock.h"
#include "record_writer.h"
#include "base/util.h"
#include "json/json.h"

struct message_ctx {
	amp_schema_set *set;
	json_t *msg;
	const amp_send_opts *opts;
	amp_send_result *res;
	amp_errlist *errors;
	size_t errors_base;
	const char *extra_trailers;
	int once; /* see amp_escalation.once */
	int snapshot; /* an escalation by amp: its snapshot is the SSOT's */
	int check_repo; /* the dispatch's repo is on this machine */
	char denied[256]; /* the unapproved dispatch a refused result acts on */
	int import; /* amp import: check_history instead of check_clock */
	int64_t now_ms; /* amp import: this machine's clock */
	char aborted[1024]; /* a refusal because the task is aborted: the
			     * admin's escalation (amp_rules_aborted_refusal) */
	char aborted_cause[256];
};


/* A shallow copy of log with one more record at its end: the log a write
 * leaves, with an index of its own (without one, out of memory, lookups
 * scan).  Free with amp_task_log_view_free. */
static int log_plus(const amp_task_log *log, amp_entry_kind kind, const char *id,
		    json_t *doc, amp_task_log *out, amp_error *err)
{
	*out = *log;
	out->index = NULL; /* it indexes log's entries, not these */
	if (!(out->entries = malloc((log->count + 1) * sizeof(*out->entries)))) {
		amp_task_log_view_free(out);
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	if (log->count)
		memcpy(out->entries, log->entries, log->count * sizeof(*out->entries));
	out->entries[log->count].seq = log->next_seq;
	out->entries[log->count].kind = kind;
	out->entries[log->count].id = (char *)id;
	out->entries[log->count].doc = doc;
	out->count++;
	out->next_seq++;
	(void)amp_task_log_own_index(out); /* filled at the first lookup */
	return AMP_OK;
}

/* The name of the control record of an idempotency key: "key-<sha1 of
 * the key>", and the hash of a message's content without its msg_id and
 * timestamp (what a retry rebuilds). */
static int key_names(const char *key, const json_t *msg, char name[48], char content[41])
{
	json_t *copy = json_deep_copy(msg);
	char *text;
	git_oid oid;
	int rc = -1;

	if (!copy)
		return -1;
	json_object_del(copy, "msg_id");
	json_object_del(copy, "timestamp");
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	if (text && git_odb_hash(&oid, text, strlen(text), GIT_OBJECT_BLOB) == 0) {
		git_oid_tostr(content, 41, &oid);
		if (git_odb_hash(&oid, key, strlen(key), GIT_OBJECT_BLOB) == 0) {
			memcpy(name, "key-", 4);
			git_oid_tostr(name + 4, 41, &oid);
			rc = 0;
		}
	}
	free(text);
	json_decref(copy);
	return rc;
}

/* Looks the key up in the task: AMP_OK (unused: the caller writes it),
 * AMP_NOOP (a retry: res->msg_id is the first write's) or AMP_ERULE. */
static int check_key(struct message_ctx *c, const amp_task_log *log, const char *name,
		     const char *content, amp_error *err)
{
	const amp_entry *e = amp_task_log_find(log, AMP_ENTRY_CTL, name);
	const char *first, *hash;

	if (!e)
		return AMP_OK;
	first = amp_json_str(e->doc, "msg_id");
	hash = amp_json_str(e->doc, "content_sha1");
	if (first && hash && !strcmp(hash, content)) {
		snprintf(c->res->msg_id, sizeof(c->res->msg_id), "%s", first);
		c->res->duplicate = 1;
		return AMP_NOOP;
	}
	amp_errlist_add(c->errors, AMP_ERULE, "/idempotency_key",
			"'%s' was used for %s, whose content differs: a key names one message",
			c->opts->idempotency_key, amp_or_none(first));
	return amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
}

/* Writes the control record `doc` (which it takes) of this message's
 * commit once its schema accepts it: the idempotency key, the address. */
static int add_control(struct message_ctx *c, amp_store_write *w, const amp_task_log *log,
		       const char *name, json_t *doc, amp_error *err)
{
	int status;

	if ((status = amp_control_validate(c->set, doc, c->errors)) < 0)
		status = amp_write_first_error(c->errors, c->errors_base, status, err);
	else
		status = amp_write_add_record(w, log, AMP_ENTRY_CTL, name, doc, err);
	json_decref(doc);
	return status;
}

static int add_key_record(struct message_ctx *c, amp_store_write *w,
			  const amp_task_log *log, const char *name,
			  const char *content, amp_error *err)
{
	char when[AMP_TIME_BUFSZ];
	json_t *doc;

	doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
			"type", "idempotency_key", "task_id", log->task_id,
			"from", amp_json_str(c->msg, "from"),
			"timestamp", amp_time_format(amp_record_time(c->msg) >= 0 ?
						     amp_record_time(c->msg) : 0, when),
			"key", c->opts->idempotency_key, "msg_id", c->res->msg_id,
			"content_sha1", content);
	if (!doc)
		return amp_error_set(err, AMP_ESCHEMA, "/idempotency_key",
				     "the key must be valid UTF-8");
	return add_control(c, w, log, name, doc, err);
}

/* A control record naming an instance for the message (or ACK) `id` of
 * this commit, next in the commit after it: `type` "address" (amp send
 * --to NAME@ROLE: the instance it is for), "round" (a dispatch's named
 * sender), "acked" (an ACK's named writer; its field is ack_for), by
 * `from` at `when`.  Its name is "<type>-<unix_ms>" (the next free
 * millisecond from ms). */
static int add_instance_record(amp_schema_set *set, amp_errlist *errors, size_t base,
			       amp_store_write *w, const amp_task_log *log, const char *type,
			       const char *id, const char *agent, const char *from,
			       const char *when, int64_t ms, amp_error *err)
{
	char name[64];
	json_t *doc;
	int status;

	do
		snprintf(name, sizeof(name), "%s-%lld", type, (long long)ms++);
	while (amp_task_log_find(log, AMP_ENTRY_CTL, name));
	doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
			"type", type, "task_id", log->task_id, "from", from, "timestamp", when,
			strcmp(type, "acked") ? "msg_id" : "ack_for", id, "agent", agent);
	if (!doc)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if ((status = amp_control_validate(set, doc, errors)) < 0)
		status = amp_write_first_error(errors, base, status, err);
	else
		status = amp_write_add_record(w, log, AMP_ENTRY_CTL, name, doc, err);
	json_decref(doc);
	return status;
}

/* The address (--to NAME@ROLE) or round (a dispatch by a named instance)
 * record of the message. */
static int add_message_instance(struct message_ctx *c, amp_store_write *w,
				const amp_task_log *log, const char *type, const char *agent,
				amp_error *err)
{
	return add_instance_record(c->set, c->errors, c->errors_base, w, log, type,
				   c->res->msg_id, agent, amp_json_str(c->msg, "from"),
				   amp_json_str(c->msg, "timestamp"), amp_msg_id_ms(c->res->msg_id),
				   err);
}

/* The sender's clock: a timestamp further than amp.maxClockSkew from this
 * machine's would move every deadline measured from it.  Checked after the
 * look-up of a stored copy, so that re-sending a stored envelope stays a
 * no-op however late the retry. */
static int check_clock(amp_store *st, const json_t *msg, amp_errlist *errors)
{
	int64_t now, ts = amp_record_time(msg), skew = amp_store_policy(st)->max_clock_skew_ms;
	amp_error err;

	if (ts < 0)
		return AMP_OK;
	if (amp_clock_now_ms(&now, &err) < 0)
		return amp_errlist_add(errors, err.status, err.path, "%s", err.message);
	if (ts > now + skew || ts < now - skew)
		return amp_errlist_add(errors, AMP_ERULE, "/timestamp",
				       "%s is %lld s %s this machine's clock (at most %lld s: git config amp.maxClockSkew)",
				       amp_json_str(msg, "timestamp"),
				       (long long)((ts > now ? ts - now : now - ts) / 1000),
				       ts > now ? "ahead of" : "behind",
				       (long long)(skew / 1000));
	return AMP_OK;
}

/*
 * amp import's clock rule, in place of check_clock: a migrated log is
 * history, so a record may be as old as it is, but not in the future
 * (further than amp.maxClockSkew ahead of this machine's clock, which
 * would move deadlines), and not earlier than any record of its task
 * already in the SSOT (read in the order of the file: a task's timeline
 * never goes backwards; the same millisecond is fine).
 */
static int check_history(amp_store *st, const amp_task_log *log, const json_t *rec,
			 int64_t now, amp_errlist *errors)
{
	int64_t ts = amp_record_time(rec), last = -1, t;
	int64_t skew = amp_store_policy(st)->max_clock_skew_ms;
	const amp_entry *latest = NULL;
	size_t i;

	if (ts < 0)
		return AMP_OK;
	if (ts > now + skew)
		return amp_errlist_add(errors, AMP_ERULE, "/timestamp",
				       "%s is %lld s ahead of this machine's clock (at most %lld s: git config amp.maxClockSkew; an import takes past timestamps only)",
				       amp_json_str(rec, "timestamp"),
				       (long long)((ts - now) / 1000), (long long)(skew / 1000));
	for (i = 0; i < log->count; i++)
		if ((t = amp_record_time(log->entries[i].doc)) > last) {
			last = t;
			latest = &log->entries[i];
		}
	if (ts < last)
		return amp_errlist_add(errors, AMP_ERULE, "/timestamp",
				       "%s is earlier than %s (%s), already in task %s: an import keeps each task's timestamps in order",
				       amp_json_str(rec, "timestamp"), latest->id,
				       amp_json_str(latest->doc, "timestamp"), log->task_id);
	return AMP_OK;
}

/* The message's msg_id against those of the task: an agent re-sending its
 * own envelope is a no-op (AMP_NOOP); another message under the id is
 * refused; an id amp assigned moves to the next free millisecond. */
static int settle_msg_id(struct message_ctx *c, const amp_task_log *log, const char *type,
			 const char *task, amp_error *err)
{
	const amp_entry *existing;

	while (amp_task_log_id_taken(log, c->res->msg_id)) {
		existing = amp_task_log_find(log, AMP_ENTRY_MSG, c->res->msg_id);
		/* An agent re-sending its own envelope is a no-op; amp's own
		 * ids are fresh messages, so they move on instead. */
		if (!c->opts->assign_msg_id && existing && json_equal(existing->doc, c->msg)) {
			c->res->duplicate = 1;
			return AMP_NOOP;
		}
		if (!c->opts->assign_msg_id) {
			amp_errlist_add(c->errors, AMP_ERULE, "/msg_id",
					"%s is already in the SSOT with other content (messages are never modified)",
					c->res->msg_id);
			return amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		}
		/* Same type, task and millisecond as another message: the
		 * next free millisecond keeps msg_id unique and in order. */
		if (amp_msg_id_format(c->res->msg_id, sizeof(c->res->msg_id), type, task,
				      amp_msg_id_ms(c->res->msg_id) + 1) < 0)
			return amp_error_set(err, AMP_EIO, "/msg_id", "no free msg_id");
		json_object_set_new(c->msg, "msg_id", json_string(c->res->msg_id));
	}
	return AMP_OK;
}

static int build_message(amp_store *st, git_tree *tip, void *vctx,
			 amp_store_write *w, amp_error *err)
{
	struct message_ctx *c = vctx;
	const char *task = amp_json_str(c->msg, "task_id");
	const char *type = amp_json_str(c->msg, "type");
	amp_task_log log, after = { 0 };
	amp_task_fold fold;
	const amp_task_state *before = NULL;
	char cause[1024], key_name[48], key_content[41], description[1024];
	char doubt[256] = "";
	json_t *lock = NULL;
	int status = AMP_OK;

	amp_task_fold_init(&fold);
	amp_errlist_truncate(c->errors, c->errors_base);
	c->denied[0] = '\0';
	c->res->duplicate = 0;
	if ((status = amp_store_read_task(st, tip, task, &log, err)) < 0)
		return status;
	/* The snapshot is the SSOT's, yet it must conform like the rest of
	 * the message: what amp writes, amp reads back without complaint. */
	if (c->snapshot) {
		amp_write_fill_snapshot(c->msg, &log);
		if ((status = amp_message_validate(c->set, c->msg, 0, c->errors)) < 0) {
			amp_write_first_error(c->errors, c->errors_base, status, err);
			goto cleanup;
		}
	}
	if ((status = settle_msg_id(c, &log, type, task, err)) != AMP_OK)
		goto cleanup;
	if (c->opts->idempotency_key &&
	    (key_names(c->opts->idempotency_key, c->msg, key_name, key_content) < 0 ||
	     (status = check_key(c, &log, key_name, key_content, err)) != AMP_OK)) {
		if (status == AMP_OK)
			status = amp_error_set(err, AMP_EIO, "", "cannot hash the idempotency key");
		goto cleanup;
	}
	if (c->once && amp_task_has_escalation(&log,
			amp_json_str(json_object_get(c->msg, "payload"), "escalation_type"),
			amp_json_str(c->msg, "from"),
			amp_escalation_cause(c->msg, cause, sizeof(cause)))) {
		c->res->duplicate = 1;
		status = AMP_NOOP;
		goto cleanup;
	}
	if (!c->snapshot && (status = c->import ?
			     check_history(st, &log, c->msg, c->now_ms, c->errors) :
			     check_clock(st, c->msg, c->errors)) < 0) {
		amp_write_first_error(c->errors, c->errors_base, status, err);
		goto cleanup;
	}
	/* A verdict's state before it serves its rules, and with one more
	 * step the lock it may bring (task_fold.h). */
	if (!strcmp(type, "review_verdict"))
		before = amp_task_fold_to(&fold, &log, log.count);
	status = amp_rules_check_send_in(st, tip, &log, before, c->msg, amp_store_agent(st),
					 c->errors);
	if (status != AMP_EIO && c->check_repo &&
	    amp_rules_check_repo(c->msg, c->errors) < 0)
		status = AMP_ERULE;
	if (status < 0) {
		const char *denied = status == AMP_ERULE ?
				     amp_rules_unapproved_dispatch(&log, NULL, c->msg, NULL) : NULL;

		snprintf(c->denied, sizeof(c->denied), "%s", denied ? denied : "");
		c->aborted[0] = '\0';
		if (status == AMP_ERULE)
			amp_rules_aborted_refusal(&log, c->msg, c->aborted, sizeof(c->aborted),
						  c->aborted_cause, sizeof(c->aborted_cause));
		amp_write_first_error(c->errors, c->errors_base, status, err);
		goto cleanup;
	}
	if ((status = amp_write_add_record(w, &log, AMP_ENTRY_MSG, c->res->msg_id,
					   c->msg, err)) < 0 ||
	    (status = log_plus(&log, AMP_ENTRY_MSG, c->res->msg_id, c->msg, &after, err)) < 0)
		goto cleanup;
	c->res->escalation_id[0] = c->res->escalation_type[0] = '\0';
	if (!strcmp(type, "review_verdict") &&
	    (status = amp_write_add_lock_if_due(c->set, w, &after,
				      before ? amp_task_fold_to(&fold, &after, after.count) : NULL,
				      c->res->msg_id,
				      amp_msg_id_ms(c->res->msg_id), c->res, &lock, err)) < 0)
		goto cleanup;
	if (lock) {
		/* What follows in this commit sees the task locked. */
		amp_task_log with_lock;

		if ((status = log_plus(&after, AMP_ENTRY_MSG, amp_json_str(lock, "msg_id"), lock,
				       &with_lock, err)) < 0)
			goto cleanup;
		amp_task_log_view_free(&after);
		after = with_lock;
	}
	/* AMP/1.0 §04 Confidence Threshold: the admin hears of a doubtful
	 * verdict the moment it lands (conflict, info: nothing stops). */
	if (!strcmp(type, "review_verdict") &&
	    amp_confidence_low(c->msg, description, sizeof(description))) {
		amp_send_result low = { 0 };
		json_t *affected = json_pack("[s]", c->res->msg_id);

		status = amp_write_add_escalation(c->set, w, &after, "conflict", "info", description,
						  affected, NULL, amp_msg_id_ms(c->res->msg_id),
						  &low, NULL, err);
		json_decref(affected);
		if (status < 0)
			goto cleanup;
		snprintf(doubt, sizeof(doubt), "%s", low.escalation_id);
		if (!c->res->escalation_id[0]) {
			snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s", low.escalation_id);
			snprintf(c->res->escalation_type, sizeof(c->res->escalation_type), "%s", low.escalation_type);
		}
	}
	if (c->opts->idempotency_key) {
		after.next_seq = log.next_seq + (int)w->nfiles;
		if ((status = add_key_record(c, w, &after, key_name, key_content, err)) < 0)
			goto cleanup;
	}
	if (c->opts->to_agent) {
		after.next_seq = log.next_seq + (int)w->nfiles;
		if ((status = add_message_instance(c, w, &after, "address", c->opts->to_agent,
						   err)) < 0)
			goto cleanup;
	}
	/* Issue 33: who started the round (round.h). */
	if (!strcmp(type, "task_dispatch") && amp_store_agent(st)) {
		after.next_seq = log.next_seq + (int)w->nfiles;
		if ((status = add_message_instance(c, w, &after, "round", amp_store_agent(st),
						   err)) < 0)
			goto cleanup;
	}
	snprintf(w->subject, sizeof(w->subject), "%s %s %s -> %s%s%s%s", type, task,
		 amp_json_str(c->msg, "from"), c->opts->to_agent ? c->opts->to_agent : "",
		 c->opts->to_agent ? "@" : "", amp_json_str(c->msg, "to"),
		 lock ? " (locks the task)" : "");
	/* One trailer per escalation this commit writes with the message. */
	snprintf(w->trailers, sizeof(w->trailers),
		 "Amp-Msg-Id: %s\nAmp-Type: %s\nAmp-Task: %s\n%s%s%s%s%s%s%s", c->res->msg_id,
		 type, task, lock ? "Amp-Escalation: " : "",
		 lock ? amp_json_str(lock, "msg_id") : "", lock ? "\n" : "",
		 doubt[0] ? "Amp-Escalation: " : "", doubt, doubt[0] ? "\n" : "",
		 c->extra_trailers ? c->extra_trailers : "");
	snprintf(w->author, sizeof(w->author), "%s", amp_json_str(c->msg, "from"));
	status = AMP_OK;
cleanup:
	amp_task_fold_free(&fold);
	amp_task_log_view_free(&after);
	json_decref(lock);
	amp_task_log_free(&log);
	return status;
}

static int send_with(amp_store *st, amp_schema_set *set, json_t *msg,
		     const amp_send_opts *opts, amp_send_result *res,
		     amp_errlist *errors, const char *extra_trailers, int once,
		     int snapshot);

int amp_send_read_json(amp_store *st, const char *command, const char *file,
		       const char *pointer, json_t **doc, char **raw,
		       size_t *raw_len, amp_errlist *errors)
{
	amp_send_opts opts = { command, file, NULL, 0, 0, NULL, 0, NULL };
	amp_error err;
	struct stat sb;
	char *data = NULL;
	size_t len = 0, total = 0;
	int status, depth = 0;
	const char *p;

	*doc = NULL;
	/* Stop one byte past the limit: a 100 MB file is refused, not read. */
	if ((status = amp_read_file_max(file, AMP_LIMIT_MESSAGE_BYTES, &data, &len, &err)) < 0)
		return amp_errlist_add(errors, status, "", "%s", err.message);
	if (len > AMP_LIMIT_MESSAGE_BYTES && strcmp(file, "-") && stat(file, &sb) == 0 &&
	    S_ISREG(sb.st_mode))
		total = (size_t)sb.st_size;
	for (p = pointer; *p; p++)
		depth += *p == '/'; /* "/payload": the value sits at level 2 */
	if ((status = amp_bounds_check_bytes(data, len, total, depth, pointer, &err)) < 0 ||
	    (status = amp_json_parse(data, len, doc, &err)) < 0) {
		size_t base = errors->count;

		amp_errlist_add(errors, status, err.path[0] ? err.path : pointer, "%s", err.message);
		opts.raw = data;
		opts.raw_len = len;
		opts.raw_total = total;
		amp_write_log_rejection(st, &opts, NULL, status, errors, base);
		free(data);
		return status;
	}
	if (raw) {
		*raw = data;
		*raw_len = len;
	} else {
		free(data);
	}
	return AMP_OK;
}

/*
 * After a refusal, the escalation the protocol asks for: `type` (warning)
 * by system about task, with `description` and `affected` (borrowed);
 * `once`: not again for the same cause.  Its id goes to res unless an
 * earlier attempt recorded it; a failure is added to errors (the refusal
 * stands either way).
 */
static int record_refusal_escalation(amp_store *st, amp_schema_set *set,
				     const char *task, const char *type,
				     const char *description, json_t *affected,
				     int once, amp_send_result *res, amp_errlist *errors)
{
	amp_escalation e = { 0 };
	amp_send_result eres;
	amp_errlist esc_errors = { 0 };
	int status;

	e.task_id = task;
	e.from = "system";
	e.escalation_type = type;
	e.severity = "warning";
	e.triggered_by = "system";
	e.description = description;
	e.affected_msgs = affected;
	e.auto_suspended = -1;
	e.once = once;
	status = amp_send_escalation(st, set, &e, NULL, &eres, &esc_errors);
	if (status == AMP_OK && !eres.duplicate) {
		snprintf(res->escalation_id, sizeof(res->escalation_id), "%s", eres.msg_id);
		snprintf(res->escalation_type, sizeof(res->escalation_type), "%s", type);
	} else if (status < 0) {
		amp_errlist_add(errors, AMP_EIO, "", "could not record the %s escalation: %s", type,
				esc_errors.count ? esc_errors.items[0].message : "unknown error");
	}
	amp_errlist_free(&esc_errors);
	return status;
}

/* AMP/1.0 §01 Branch Validation: "execution is refused and escalation is
 * triggered".  The refused dispatch never enters the SSOT, so the
 * escalation names it in its description (its bytes are on the errors
 * ref) and affects no message. */
static int record_branch_violation(amp_store *st, amp_schema_set *set,
				   const json_t *msg, amp_send_result *res,
				   amp_errlist *errors)
{
	json_t *affected = json_array();
	char description[1024];
	int status;

	snprintf(description, sizeof(description),
		 "%.40s dispatched %.40s to protected branch '%.300s' in %.300s; the dispatch was refused (Branch Validation). Re-dispatch it on a feature branch.",
		 amp_or_none(amp_json_str(msg, "from")), amp_or_none(amp_json_str(msg, "task_id")),
		 amp_or_none(amp_json_str(json_object_get(msg, "payload"), "branch")),
		 amp_or_none(amp_json_str(msg, "msg_id")));
	status = record_refusal_escalation(st, set, amp_json_str(msg, "task_id"),
					   "branch_violation", description, affected, 0,
					   res, errors);
	json_decref(affected);
	return status;
}

/* AMP/1.0 §05 permission_denied: "operation exceeds risk_level
 * authorization scope".  `role` tried to `act` on `dispatch`, which awaits
 * the admin's approval, or (act "dispatch") to dispatch its subtasks again
 * at a level that needs none; the act was refused.  Once per dispatch. */
static void record_permission_denied(amp_store *st, amp_schema_set *set,
				     const char *task, const char *role,
				     const char *act, const char *dispatch,
				     amp_send_result *res, amp_errlist *errors)
{
	json_t *affected = json_pack("[s]", dispatch);
	char description[1024];

	if (!strcmp(act, "dispatch"))
		snprintf(description, sizeof(description),
			 "The %.20s tried to dispatch again the subtasks of %s, whose risk_level needs the admin's approval (git config amp.approvalRequired), at a level that needs none; it was refused. Only the admin may lower it.",
			 role, dispatch);
	else
		snprintf(description, sizeof(description),
			 "The %.20s tried to %s %s, whose risk_level needs the admin's approval (git config amp.approvalRequired), before the admin approved it; it was refused. The admin approves with 'amp approve %s'.",
			 role, act, dispatch, task);
	record_refusal_escalation(st, set, task, "permission_denied", description, affected,
				  1, res, errors);
	json_decref(affected);
}

static int send_with(amp_store *st, amp_schema_set *set, json_t *msg,
		     const amp_send_opts *opts, amp_send_result *res,
		     amp_errlist *errors, const char *extra_trailers, int once,
		     int snapshot)
{
	struct message_ctx ctx = { set, msg, opts, res, errors, errors->count,
				   extra_trailers, once, snapshot, 0, "", 0, 0, "", "" };
	amp_error err;
	int status;

	memset(res, 0, sizeof(*res));
	snprintf(res->msg_id, sizeof(res->msg_id), "%s",
		 amp_json_str(msg, "msg_id") ? amp_json_str(msg, "msg_id") : "");
	/* The schema comes before any rule: nothing is written on behalf of
	 * a message that is not one.  The one exception is a dispatch whose
	 * only fault is a branch naming a protected one (the schema states
	 * main/master too): AMP/1.0 §01 Branch Validation makes that a refusal
	 * with an escalation. */
	status = amp_message_validate(set, msg, 0, errors);
	if (status == AMP_EIO)
		return status;
	if (amp_rules_branch_refusal(st, msg, errors, ctx.errors_base)) {
		amp_errlist_truncate(errors, ctx.errors_base);
		amp_errlist_add(errors, AMP_ERULE, "/payload/branch",
				"must not be \"main\" or \"master\" or another protected branch (Branch Validation): \"%s\" names one; an escalation was recorded",
				amp_json_str(json_object_get(msg, "payload"), "branch"));
		amp_write_log_rejection(st, opts, msg, AMP_ERULE, errors, ctx.errors_base);
		record_branch_violation(st, set, msg, res, errors);
		return AMP_ERULE;
	}
	if (status < 0) {
		amp_write_log_rejection(st, opts, msg, status, errors, ctx.errors_base);
		return status;
	}
	/* amp's own escalations name no repository; a sender's dispatch does. */
	if (!snapshot &&
	    amp_store_config_bool(st, "amp.checkRepo", 1, &ctx.check_repo, &err) < 0)
		return amp_errlist_add(errors, err.status, err.path, "%s", err.message);
	status = amp_store_update(st, amp_store_messages_ref(st), build_message,
				  &ctx, NULL, &err);
	if (status == AMP_NOOP)
		return AMP_OK;
	if ((status == AMP_ERULE || status == AMP_ESCHEMA) && errors->count == ctx.errors_base)
		amp_errlist_add(errors, status, err.path, "%s", err.message); /* the store's own */
	if (status == AMP_ERULE || status == AMP_ESCHEMA) {
		amp_write_log_rejection(st, opts, msg, status, errors, ctx.errors_base);
		if (ctx.denied[0])
			record_permission_denied(st, set, amp_json_str(msg, "task_id"),
						 amp_or_none(amp_json_str(msg, "from")),
						 !strcmp(amp_or_none(amp_json_str(msg, "type")), "task_dispatch") ?
						 "dispatch" : "report a task_result for", ctx.denied, res, errors);
		if (ctx.aborted[0]) {
			json_t *affected = json_pack("[s]", ctx.aborted_cause);

			record_refusal_escalation(st, set, amp_json_str(msg, "task_id"), "conflict",
						  ctx.aborted, affected, 1, res, errors);
			json_decref(affected);
		}
	} else if (status < 0 && errors->count == ctx.errors_base) {
		amp_errlist_add(errors, status, err.path, "%s", err.message);
	}
	return status;
}

int amp_send_message(amp_store *st, amp_schema_set *set, json_t *msg,
		     const amp_send_opts *opts, amp_send_result *res,
		     amp_errlist *errors)
{
	return send_with(st, set, msg, opts, res, errors, NULL, 0, 0);
}

int amp_send_escalation(amp_store *st, amp_schema_set *set,
			const amp_escalation *e, const char *extra_trailers,
			amp_send_result *res, amp_errlist *errors)
{
	amp_message_fields f = { 0 };
	amp_send_opts opts = { "escalate", "built", NULL, 0, 1, NULL, 0, NULL };
	amp_error err;
	json_t *payload = NULL, *msg = NULL;
	int status, by_system;

	memset(res, 0, sizeof(*res));
	if (!e->task_id || !e->from)
		return amp_errlist_add(errors, AMP_EUSAGE, e->task_id ? "/from" : "/task_id",
				       "an escalation needs a task and a sender");
	/* The snapshot is filled in from the SSOT inside the compare-and-swap
	 * (amp_write_fill_snapshot); this one only lets the schema see a whole
	 * escalation first. */
	payload = json_pack("{s:s?,s:s?,s:s?,s:s?,s:O?,s:{s:s,s:i,s:n}}",
			    "escalation_type", e->escalation_type,
			    "severity", e->severity,
			    "triggered_by", e->triggered_by ? e->triggered_by :
					    (e->from && !strcmp(e->from, "admin") ? "system" : e->from),
			    "description", e->description,
			    "affected_msgs", e->affected_msgs,
			    "system_state_snapshot",
			    "task_status", "new", "reject_count", 0,
			    "last_successful_msg_id");
	if (!payload) {
		status = amp_errlist_add(errors, AMP_EIO, "", "cannot build the escalation");
		goto cleanup;
	}
	if (e->suggested_actions && json_array_size(e->suggested_actions))
		json_object_set(payload, "suggested_actions", e->suggested_actions);
	by_system = !strcmp(amp_json_str(payload, "triggered_by") ? amp_json_str(payload, "triggered_by") : "",
			    "system");
	json_object_set_new(payload, "auto_suspended",
			    json_boolean(e->auto_suspended >= 0 ? e->auto_suspended :
					 by_system ? e->severity && !strcmp(e->severity, "critical") :
					 !e->severity || strcmp(e->severity, "info") != 0));
	f.type = "escalation";
	f.task_id = e->task_id;
	f.from = e->from;
	f.to = "admin";
	f.payload = payload;
	f.requires_ack = -1;
	f.ack_timeout_sec = -1;
	/* The time of this write, not of what the caller began before (one
	 * under AMP_NOW): a watch pass or a hub's join of minutes would put
	 * the escalation that far behind its commit, past amp.maxClockSkew,
	 * and amp watch would take it for a wrong clock and escalate it, and
	 * that escalation too, without end (test/38-watch-clock.bats). */
	if ((status = amp_clock_now_ms(&f.now_ms, &err)) < 0 ||
	    (status = amp_message_build(&msg, &f, &err)) < 0) {
		amp_errlist_add(errors, status, err.path, "%s", err.message);
		goto cleanup;
	}
	status = send_with(st, set, msg, &opts, res, errors, extra_trailers, e->once, 1);
cleanup:
	json_decref(payload);
	json_decref(msg);
	return status;
}

struct ack_ctx {
	amp_schema_set *set;
	const char *msg_id;
	const char *from;
	int64_t now_ms;
	char task[64];
	amp_send_result *res;
	amp_errlist *errors;
	size_t errors_base;
	json_t *ack; /* the record built by the last attempt */
	char denied[256]; /* the unapproved dispatch a refused ACK names */
	int import; /* amp import: check_history against this clock */
	int64_t clock_ms;
};

static int build_ack(amp_store *st, git_tree *tip, void *vctx,
		     amp_store_write *w, amp_error *err)
{
	struct ack_ctx *c = vctx;
	const amp_entry *target;
	amp_task_log log, after = { 0 };
	amp_task_state s = { 0 };
	char when[AMP_TIME_BUFSZ], why[512];
	const char *to, *denied;
	int64_t deadline;
	int status;

	amp_errlist_truncate(c->errors, c->errors_base);
	c->res->duplicate = 0;
	c->denied[0] = '\0';
	if ((status = amp_store_read_task(st, tip, c->task, &log, err)) < 0)
		return status;
	if (!(target = amp_task_log_find(&log, AMP_ENTRY_MSG, c->msg_id))) {
		amp_errlist_add(c->errors, AMP_ERULE, "/ack_for",
				"%s is not in the SSOT: nothing to acknowledge", c->msg_id);
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		goto cleanup;
	}
	/* Strict mode: an ACK acts on its message, whose own signature must
	 * name its author (recsig.h), as every reader that checks sees it. */
	if ((status = amp_store_record_sig_check_entry(st, tip, c->task, target, why,
							 sizeof(why), err)) <= 0) {
		if (status == 0) {
			amp_errlist_add(c->errors, AMP_ERULE, "/ack_for",
					"%s is not proven in strict mode: %s (git config amp.requireSigned)",
					c->msg_id, why);
			status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		}
		goto cleanup;
	}
	to = amp_json_str(target->doc, "to");
	if (!to || strcmp(to, c->from)) {
		amp_errlist_add(c->errors, AMP_ERULE, "/from",
				"only the addressee (%s) may ACK %s, not %s",
				to ? to : "?", c->msg_id, c->from);
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		goto cleanup;
	}
	if (amp_task_log_find(&log, AMP_ENTRY_ACK, c->msg_id)) {
		c->res->duplicate = 1;
		status = AMP_NOOP;
		goto cleanup;
	}
	amp_task_state_compute(&log, &s);
	if (amp_task_closed_to(&s, c->from, why, sizeof(why))) {
		amp_errlist_add(c->errors, AMP_ERULE, "/task_id", "task %s %s", c->task, why);
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		goto cleanup;
	}
	if (amp_coord_check_write(&log, c->from, amp_store_agent(st), c->now_ms, why,
				  sizeof(why)) < 0) {
		amp_errlist_add(c->errors, AMP_ERULE, "/from", "%s", why);
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		goto cleanup;
	}
	if ((denied = amp_rules_unapproved_dispatch(&log, &s, NULL, c->msg_id))) {
		snprintf(c->denied, sizeof(c->denied), "%s", denied);
		amp_errlist_add(c->errors, AMP_ERULE, "/ack_for",
				"%s is awaiting_approval: it awaits the admin's approval (its risk_level is in git config amp.approvalRequired) and cannot be ACKed before 'amp approve %s'",
				c->msg_id, c->task);
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ERULE, err);
		goto cleanup;
	}
	if (c->import) {
		json_t *when = json_pack("{s:s}", "timestamp", amp_time_format(c->now_ms, why));

		status = check_history(st, &log, when, c->clock_ms, c->errors);
		json_decref(when);
		if (status < 0) {
			status = amp_write_first_error(c->errors, c->errors_base, status, err);
			goto cleanup;
		}
	}
	json_decref(c->ack);
	c->ack = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
			   "protocol_version", AMP_PROTOCOL, "type", "ack",
			   "ack_for", c->msg_id, "task_id", c->task,
			   "from", c->from, "to", amp_json_str(target->doc, "from"),
			   "timestamp", amp_time_format(c->now_ms, when));
	if (!c->ack || amp_message_validate(c->set, c->ack, 1, c->errors) < 0) {
		status = amp_write_first_error(c->errors, c->errors_base, AMP_ESCHEMA, err);
		goto cleanup;
	}
	if ((status = amp_write_add_record(w, &log, AMP_ENTRY_ACK, c->msg_id, c->ack,
					   err)) < 0)
		goto cleanup;
	/* AMP/1.0 requires_ack: a late ACK is accepted (it is the truth),
	 * and the timeout is reported with it unless it was already. */
	c->res->escalation_id[0] = '\0';
	deadline = amp_task_ack_deadline(&log, &s, target, -1);
	if (deadline >= 0 && c->now_ms > deadline &&
	    !amp_task_has_escalation(&log, "ack_timeout", "system", c->msg_id)) {
		char description[1024], due[AMP_TIME_BUFSZ];
		json_t *affected = json_pack("[s]", c->msg_id);

		snprintf(description, sizeof(description),
			 "%s from %s to %s required an ACK by %s; the ACK came %lld s late, at %s (AMP/1.0 requires_ack).",
			 c->msg_id, amp_or_none(amp_json_str(target->doc, "from")), c->from,
			 amp_time_format(deadline, due), (long long)((c->now_ms - deadline + 999) / 1000),
			 when);
		status = log_plus(&log, AMP_ENTRY_ACK, c->msg_id, c->ack, &after, err);
		if (status == AMP_OK)
			status = amp_write_add_escalation(c->set, w, &after, "ack_timeout", "warning",
						       description, affected, NULL, c->now_ms,
						       c->res, NULL, err);
		json_decref(affected);
		if (status < 0)
			goto cleanup;
	}
	/* Issue 33: whose ACK it is (round.h). */
	if (amp_store_agent(st)) {
		amp_task_log named = log;

		named.next_seq = log.next_seq + (int)w->nfiles;
		if ((status = add_instance_record(c->set, c->errors, c->errors_base, w, &named,
						  "acked", c->msg_id, amp_store_agent(st), c->from,
						  when, c->now_ms, err)) < 0)
			goto cleanup;
	}
	snprintf(w->subject, sizeof(w->subject), "ack %s %s -> %s%s", c->msg_id,
		 c->from, amp_json_str(target->doc, "from"),
		 c->res->escalation_id[0] ? " (late)" : "");
	snprintf(w->trailers, sizeof(w->trailers),
		 "Amp-Ack-For: %s\nAmp-Type: ack\nAmp-Task: %s\n%s%s%s", c->msg_id, c->task,
		 c->res->escalation_id[0] ? "Amp-Escalation: " : "", c->res->escalation_id,
		 c->res->escalation_id[0] ? "\n" : "");
	snprintf(w->author, sizeof(w->author), "%s", c->from);
	status = AMP_OK;
cleanup:
	amp_task_log_view_free(&after);
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return status;
}

int amp_send_ack(amp_store *st, amp_schema_set *set, const char *msg_id,
		 const char *from, int64_t now_ms, amp_send_result *res,
		 amp_errlist *errors)
{
	struct ack_ctx c = { set, msg_id, from, now_ms, "", res, errors,
			     errors->count, NULL, "", 0, 0 };
	amp_send_opts opts = { "ack", "built", NULL, 0, 0, NULL, 0, NULL };
	amp_error err;
	int status;

	memset(res, 0, sizeof(*res));
	snprintf(res->msg_id, sizeof(res->msg_id), "%s", msg_id);
	if (amp_msg_id_task(msg_id, c.task, sizeof(c.task)) < 0)
		return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
				       "'%s' is not a msg_id ({type}-{task_id}-{unix_ms})",
				       msg_id);
	if (!amp_role_valid(from))
		return amp_errlist_add(errors, AMP_EUSAGE, "/from",
				       "unknown role '%s'", from);
	status = amp_store_update(st, amp_store_messages_ref(st), build_ack, &c, NULL, &err);
	if (status == AMP_NOOP)
		status = AMP_OK;
	if ((status == AMP_ERULE || status == AMP_ESCHEMA) && errors->count == c.errors_base)
		amp_errlist_add(errors, status, err.path, "%s", err.message); /* the store's own */
	if (status == AMP_ERULE || status == AMP_ESCHEMA) {
		json_t *attempt = c.ack ? json_incref(c.ack)
					: json_pack("{s:s,s:s,s:s}", "type", "ack",
						    "ack_for", msg_id, "from", from);
		amp_write_log_rejection(st, &opts, attempt, status, errors, c.errors_base);
		json_decref(attempt);
		if (c.denied[0])
			record_permission_denied(st, set, c.task, from, "ACK", c.denied, res, errors);
	} else if (status < 0 && errors->count == c.errors_base) {
		amp_errlist_add(errors, status, err.path, "%s", err.message);
	}
	json_decref(c.ack);
	return status;
}

/* An imported ACK must be the record amp ack writes (its timestamp the
 * same instant, however spelt): the first member in which it differs from
 * `built` is refused.  What is stored is `built`, amp's own spelling. */
static int same_ack(const json_t *rec, const json_t *built, amp_errlist *errors)
{
	const char *key;
	json_t *v;
	char path[AMP_PATH_MAX];
	int status = AMP_OK;

	json_object_foreach((json_t *)built, key, v) {
		char *want;

		if (json_equal(v, json_object_get(rec, key)) ||
		    (!strcmp(key, "timestamp") && amp_record_time(rec) == amp_record_time(built)))
			continue;
		want = amp_json_dumps(v, JSON_ENCODE_ANY);
		snprintf(path, sizeof(path), "/%s", key);
		status = amp_errlist_add(errors, AMP_ERULE, path,
					 "must be %s, as amp ack writes the ACK of %s",
					 want ? want : "?", amp_json_str(built, "ack_for"));
		free(want);
		break;
	}
	return status;
}

static int import_ack(amp_store *st, amp_schema_set *set, git_tree *tip, json_t *rec,
		      int64_t now_ms, amp_store_write *w, amp_send_result *res,
		      amp_errlist *errors, amp_error *err)
{
	struct ack_ctx c = { set, amp_json_str(rec, "ack_for"), amp_json_str(rec, "from"),
			     amp_record_time(rec), "", res, errors, errors->count, NULL, "",
			     1, now_ms };
	int status;

	if (amp_msg_id_task(c.msg_id, c.task, sizeof(c.task)) < 0)
		return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
				       "'%s' is not a msg_id ({type}-{task_id}-{unix_ms})", c.msg_id);
	status = build_ack(st, tip, &c, w, err);
	if (status < 0 && errors->count == c.errors_base)
		amp_errlist_add(errors, status, err->path, "%s", err->message);
	if (status == AMP_OK && same_ack(rec, c.ack, errors) < 0)
		status = AMP_ERULE;
	if (status == AMP_OK)
		w->time_ms = c.now_ms;
	json_decref(c.ack);
	return status;
}

int amp_send_import_record(amp_store *st, amp_schema_set *set, git_tree *tip,
			   json_t *rec, int check_repo, int64_t now_ms,
			   amp_store_write *w, amp_send_result *res,
			   amp_errlist *errors, amp_error *err)
{
	amp_send_opts opts = { "import", "import", NULL, 0, 0, NULL, 0, NULL };
	struct message_ctx c = { set, rec, &opts, res, errors, errors->count,
				 NULL, 0, 0, check_repo, "", 1, now_ms, "", "" };
	const char *type = amp_json_str(rec, "type");
	int ack = type && !strcmp(type, "ack"), status;

	memset(res, 0, sizeof(*res));
	snprintf(res->msg_id, sizeof(res->msg_id), "%s",
		 amp_json_str(rec, ack ? "ack_for" : "msg_id") ?
		 amp_json_str(rec, ack ? "ack_for" : "msg_id") : "");
	if ((status = amp_message_validate(set, rec, ack, errors)) < 0)
		return status;
	if (ack)
		return import_ack(st, set, tip, rec, now_ms, w, res, errors, err);
	/* The schema names main and master; git config amp.protectedBranches
	 * the others.  Refused like any rule, with no escalation: an import
	 * writes all of its file or nothing. */
	if (amp_rules_branch_refusal(st, rec, errors, c.errors_base)) {
		amp_errlist_truncate(errors, c.errors_base);
		return amp_errlist_add(errors, AMP_ERULE, "/payload/branch",
				       "must not be \"main\" or \"master\" or another protected branch (Branch Validation): \"%s\" names one",
				       amp_json_str(json_object_get(rec, "payload"), "branch"));
	}
	status = build_message(st, tip, &c, w, err);
	if (status < 0 && errors->count == c.errors_base)
		amp_errlist_add(errors, status, err->path, "%s", err->message);
	if (status == AMP_OK)
		w->time_ms = amp_record_time(rec);
	return status;
}
