/*
 * sync_aside.c - the place of a local record on a joined history: appended
 * after the remote's when the rules let it, else set aside after a
 * "superseded" marker (sync_aside.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "enforce/enforce.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "store/store.h"
#include "sync.h"
#include "sync_aside.h"
#include "sync_escalate.h"

/* The review_request a verdict names in its context_ref, or NULL. */
static const char *request_of(const json_t *verdict)
{
	const json_t *refs = json_object_get(verdict, "context_ref"), *v;
	size_t i;

	json_array_foreach(refs, i, v)
		if (json_is_string(v) && !strncmp(json_string_value(v), "review_request-", 15))
			return json_string_value(v);
	return NULL;
}

/* The record in force that record e (refused on log) lost its place to,
 * when there is one: the message whose first ACK stands, the first
 * verdict on the same review_request. */
static const char *winner(const amp_task_log *log, const amp_entry *e)
{
	const char *type = amp_json_str(e->doc, "type"), *req, *other;
	size_t i;

	if (e->kind == AMP_ENTRY_ACK)
		return amp_task_log_find(log, AMP_ENTRY_ACK, e->id) ? e->id : NULL;
	if (e->kind != AMP_ENTRY_MSG || !type || strcmp(type, "review_verdict") ||
	    !(req = request_of(e->doc)))
		return NULL;
	for (i = 0; i < log->count; i++) {
		const json_t *d = log->entries[i].doc;

		if (log->entries[i].kind == AMP_ENTRY_MSG && amp_json_str(d, "type") &&
		    !strcmp(amp_json_str(d, "type"), "review_verdict") &&
		    (other = request_of(d)) && !strcmp(other, req))
			return log->entries[i].id;
	}
	return NULL;
}

/* Adds record `name` (blob) of task `dir` to the commit being built, at
 * its place in the layout of the tree the join builds on. */
int amp_sync_add_update(struct replay_ctx *r, const char *dir, const char *name,
			const git_oid *blob, amp_error *err)
{
	char path[AMP_PATH_MAX * 2];

	char sigpath[AMP_PATH_MAX * 2 + 8];
	const char *sig;
	git_oid sig_id;

	if (amp_store_record_path(r->layout, dir, name, path, sizeof(path)) < 0)
		return amp_error_set(err, AMP_ESCHEMA, "", "%s: no place for record %s", dir, name);
	if (amp_sync_updates_add(&r->u, path, blob) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* Never signed again: another's record keeps its author's
	 * signature, or none. */
	if (r->sigs && (sig = json_string_value(json_object_get(r->sigs, git_oid_tostr_s(blob)))) &&
	    git_oid_fromstr(&sig_id, sig) == 0 &&
	    amp_store_record_sig_path(path, sigpath, sizeof(sigpath)) == 0 &&
	    amp_sync_updates_add(&r->u, sigpath, &sig_id) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

/*
 * Sets record `doc` (blob, of `kind` and `id`) aside in contested `log`:
 * a marker at the task's next seq, naming it, then the record.
 */
static int set_aside(struct replay_ctx *r, amp_task_log *log, const char *dir,
		     amp_entry_kind kind, const char *id, json_t *doc, const git_oid *blob,
		     const char *by, const char *reason, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	char record[AMP_PATH_MAX], marker_id[64], marker[AMP_PATH_MAX], *text = NULL;
	json_t *m = NULL;
	git_oid mblob;
	int status = AMP_OK, seq = log->next_seq;
	size_t len;

	snprintf(marker_id, sizeof(marker_id), MARKER_PREFIX "%s", git_oid_tostr_s(blob));
	if (amp_store_entry_name(seq, AMP_ENTRY_CTL, marker_id, marker, sizeof(marker)) < 0 ||
	    amp_store_entry_name(seq + 1, kind, id, record, sizeof(record)) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "%s: no room for a record name", id);
		goto cleanup;
	}
	m = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
		      "type", "superseded", "task_id", log->task_id, "from", "system",
		      "timestamp", r->now, "record", record, "reason", reason);
	if (m && by)
		json_object_set_new(m, "by", json_string(by));
	if (!m || !(text = amp_message_dump(m))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	len = strlen(text);
	if (git_blob_create_from_buffer(&mblob, repo, text, len) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot write a superseded marker");
		goto cleanup;
	}
	if ((status = amp_sync_add_update(r, dir, marker, &mblob, err)) < 0 ||
	    (status = amp_sync_add_update(r, dir, record, blob, err)) < 0)
		goto cleanup;
	if (amp_task_log_append(log, seq, AMP_ENTRY_CTL, marker_id, m, 0) < 0 ||
	    amp_task_log_append(log, seq + 1, kind, id, json_incref(doc), 1) < 0) {
		m = NULL;
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	m = NULL;
	r->superseded++;
	len = strlen(r->trailers);
	snprintf(r->trailers + len, sizeof(r->trailers) - len, "Amp-Superseded: %s %s%s%s\n",
		 kind == AMP_ENTRY_MSG ? "message" : kind == AMP_ENTRY_ACK ? "ack" : "control",
		 id, by ? " by " : "", by ? by : "");
cleanup:
	free(text);
	json_decref(m);
	return status;
}

/*
 * set_aside, and the record noted in r->refused (when someone asks) for
 * amp_sync to log and escalate.
 */
static int set_aside_told(struct replay_ctx *r, amp_task_log *log, const char *dir,
			  amp_entry_kind kind, const char *id, json_t *doc, const git_oid *blob,
			  const char *by, const char *reason, amp_error *err)
{
	const char *kname = kind == AMP_ENTRY_MSG ? "message" :
			    kind == AMP_ENTRY_ACK ? "ack" : "control";
	int status = set_aside(r, log, dir, kind, id, doc, blob, by, reason, err), written = 0;
	amp_error ignored;

	/* Escalated right here, after the record (sync_escalate.h); what
	 * is not (a schema's refusal, a strict-mode key that may not write
	 * as system) is left to amp_sync_tell_refused after the join. */
	if (status == AMP_OK &&
	    amp_sync_escalate_aside(r, log, kname, id, doc, reason, &written, &ignored) == AMP_EIO)
		status = amp_error_set(err, AMP_EIO, "", "%s", ignored.message);
	if (status == AMP_OK && r->refused &&
	    json_array_append_new(r->refused,
				  json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "task", log->task_id, "kind",
					    kname, "id", id, "reason", reason,
					    "blob", git_oid_tostr_s(blob), "escalated", written)) < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	return status;
}

int amp_sync_set_aside_as_is(struct replay_ctx *r, amp_task_log *log, const char *dir,
			     amp_entry_kind kind, const char *id, const git_oid *blob,
			     const char *reason, amp_error *err)
{
	json_t *doc = NULL;
	int status = amp_sync_read_doc(amp_store_repo(r->st), blob, &doc, err);

	if (status == AMP_OK && !doc)
		status = AMP_ESCHEMA; /* not a record: the hub's hook judges it */
	if (status == AMP_OK)
		status = set_aside_told(r, log, dir, kind, id, doc, blob, NULL, reason, err);
	json_decref(doc);
	return status;
}

/*
 * Decides the place of one local record of a contested task on the joined
 * history `log`: appended as it is (AMP_OK, *aside 0), or set aside when a
 * rule refuses it there, or it escalates a cause already escalated (*aside
 * 1).  AMP_ESCHEMA when it is not a well-formed record in that place
 * (left to the caller), AMP_EIO.
 */
/* 1 when control record doc names the instance of a message or an ACK
 * (protocol/round.h: round, acked, address) that this join set aside: the
 * newest record of that kind and id in log is one set aside. */
static int names_aside(const amp_task_log *log, const json_t *doc)
{
	amp_entry_kind kind;
	const char *id = amp_round_names(doc, &kind);
	const amp_entry *in_force;
	size_t i = log->nsuperseded;

	if (!id)
		return 0;
	in_force = amp_task_log_find(log, kind, id);
	while (i--)
		if (log->superseded[i].kind == kind && !strcmp(log->superseded[i].id, id))
			return !in_force || log->superseded[i].seq > in_force->seq;
	return 0;
}

int amp_sync_place_record(struct replay_ctx *r, amp_task_log *log, git_tree *base, const char *dir,
			  amp_entry_kind kind, const char *id, const git_oid *blob,
			  const char *name, int *aside, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	git_blob *b = NULL;
	json_t *doc = NULL;
	amp_errlist errs = { 0 };
	amp_error perr;
	const amp_entry *first;
	char cause[1024];
	const char *type, *by = NULL, *hub;
	int status = AMP_OK, seq = log->next_seq;

	*aside = 0;
	if (git_blob_lookup(&b, repo, blob) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s/%s", dir, name);
		goto cleanup;
	}
	if (amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b), &doc,
				    &perr) < 0 || !json_is_object(doc)) {
		status = AMP_ESCHEMA; /* unreadable: the hub's hook judges it */
		goto cleanup;
	}
	/* The hub's hook refused it (its own settings, amp.approvalRequired
	 * or amp.protectedBranches there): set aside wherever it lands. */
	if (r->aside && (hub = amp_json_str(r->aside, git_oid_tostr_s(blob)))) {
		*aside = 1;
		status = set_aside_told(r, log, dir, kind, id, doc, blob, NULL, hub, err);
		goto cleanup;
	}
	type = amp_json_str(json_object_get(doc, "payload"), "escalation_type");
	/* AMP/1.0 "once per cause": two clones' watchers saw the same cause. */
	if (kind == AMP_ENTRY_MSG && type && amp_json_str(doc, "from") &&
	    !strcmp(amp_json_str(doc, "from"), "system") &&
	    (first = amp_task_has_escalation(log, type, "system",
					     amp_escalation_cause(doc, cause, sizeof(cause))))) {
		char reason[1200];

		snprintf(reason, sizeof(reason), "%s escalated %s first (once per cause)",
			 first->id, cause);
		*aside = 1;
		status = set_aside(r, log, dir, kind, id, doc, blob, first->id, reason, err);
		goto cleanup;
	}
	/* Who wrote a record set aside names nothing in force: aside too. */
	if (kind == AMP_ENTRY_CTL && names_aside(log, doc)) {
		char reason[400];
		amp_entry_kind k;

		snprintf(reason, sizeof(reason), "it names %s, which this join set aside",
			 amp_round_names(doc, &k));
		*aside = 1;
		status = set_aside(r, log, dir, kind, id, doc, blob, NULL, reason, err);
		goto cleanup;
	}
	if (amp_task_log_append(log, seq, kind, id, json_incref(doc), 0) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	status = amp_hook_check_record(r->st, r->set, base, log, log->count - 1, r->agent,
				       &errs);
	if (status != AMP_ERULE)
		goto cleanup;
	/* Refused in its new place: take it back out and set it aside. */
	log->count--;
	free(log->entries[log->count].id);
	json_decref(log->entries[log->count].doc);
	log->next_seq = seq;
	by = winner(log, &(amp_entry){ seq, kind, (char *)id, doc });
	*aside = 1;
	status = set_aside_told(r, log, dir, kind, id, doc, blob, by,
				errs.count ? errs.items[0].message : "refused in its place", err);
cleanup:
	amp_errlist_free(&errs);
	json_decref(doc);
	git_blob_free(b);
	return status;
}
