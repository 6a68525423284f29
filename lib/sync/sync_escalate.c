/*
 * sync_escalate.c - the escalation of a record a join set aside, written
 * by the join itself right after the record (sync_escalate.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "protocol/protocol.h"
#include "store/store.h"
#include "write/write.h"
#include "sync_escalate.h"

void amp_sync_aside_description(char *buf, size_t bufsz, const char *kind, const char *id,
				const char *reason)
{
	snprintf(buf, bufsz,
		 "a join set aside %s %.200s: %.1200s. It is kept, in force nowhere (amp status); write it again if it is still wanted",
		 kind, id, reason);
}

int amp_sync_aside_told_again(const json_t *doc)
{
	return doc && !strcmp(amp_or_none(amp_json_str(doc, "from")), "system") &&
	       !strcmp(amp_or_none(amp_json_str(json_object_get(doc, "payload"),
						"escalation_type")), "conflict");
}

/* Adds file i of w to r->u as a blob, with its record signature in
 * strict mode (the store's writers sign what they commit; the join
 * commits this one itself). */
static int add_file(struct replay_ctx *r, const amp_store_write *w, size_t i, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	char sigpath[AMP_PATH_MAX + 8], *sig = NULL;
	size_t siglen = 0;
	git_oid blob;
	int status;

	if (git_blob_create_from_buffer(&blob, repo, w->files[i].data, w->files[i].len) < 0)
		return amp_error_git(err, AMP_EIO, "cannot write an escalation");
	if (amp_sync_updates_add(&r->u, w->files[i].path, &blob) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	status = amp_store_record_sig_make(r->st, w->files[i].path, w->files[i].data,
					   w->files[i].len, sigpath, sizeof(sigpath), &sig,
					   &siglen, err);
	if (status == AMP_NOOP)
		return AMP_OK;
	if (status < 0)
		return status;
	if (git_blob_create_from_buffer(&blob, repo, sig, siglen) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot write a record signature");
	else if (amp_sync_updates_add(&r->u, sigpath, &blob) < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	free(sig);
	return status;
}

int amp_sync_escalate_aside(struct replay_ctx *r, amp_task_log *log, const char *kind,
			    const char *id, const json_t *doc, const char *reason, int *written,
			    amp_error *err)
{
	amp_store_write *w = NULL;
	amp_send_result res;
	char description[2048], cause[1024];
	json_t *affected = NULL, *esc = NULL;
	size_t i, len, before;
	int status = AMP_OK;

	*written = 0;
	/* One of these very escalations set aside (a hub that refuses them)
	 * is logged, not escalated again: that would be a new record for the
	 * hub to refuse, round after round. */
	if (!r->refused || amp_sync_aside_told_again(doc))
		return AMP_OK;
	/* In strict mode a key that may not write as system cannot escalate
	 * (the hub's hook would refuse it): the record is logged after the
	 * join (amp_sync_tell_refused), as verify.c does. */
	if (amp_store_signing(r->st)->require &&
	    amp_signing_may_write(amp_store_signing(r->st), "system", NULL, NULL, 0, err) != AMP_OK)
		return AMP_OK;
	amp_sync_aside_description(description, sizeof(description), kind, id, reason);
	if (!(w = calloc(1, sizeof(*w))) ||
	    !(affected = strcmp(kind, "control") ? json_pack("[s]", id) : json_array())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	memset(&res, 0, sizeof(res));
	if ((status = amp_write_add_escalation(r->set, w, log, "conflict", "warning", description,
					       affected, NULL, r->now_ms, &res, &esc, err)) < 0)
		goto cleanup;
	/* AMP/1.0 "once per cause", as amp_send_escalation's `once`. */
	if (amp_task_has_escalation(log, "conflict", "system",
				    amp_escalation_cause(esc, cause, sizeof(cause))))
		goto cleanup;
	before = r->u.count;
	for (i = 0; i < w->nfiles && status == AMP_OK; i++)
		status = add_file(r, w, i, err);
	r->escalation_files += r->u.count - before;
	if (status < 0)
		goto cleanup;
	if (amp_task_log_append(log, log->next_seq, AMP_ENTRY_MSG, res.escalation_id,
				json_incref(esc), 0) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	len = strlen(r->trailers);
	snprintf(r->trailers + len, sizeof(r->trailers) - len, "Amp-Escalation: %s\n",
		 res.escalation_id);
	*written = 1;
cleanup:
	if (w)
		for (i = 0; i < w->nfiles; i++)
			free(w->files[i].data);
	free(w);
	json_decref(esc);
	json_decref(affected);
	return status;
}
