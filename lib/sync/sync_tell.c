/*
 * sync_tell.c - what a sync could not join as it was, told to the admin:
 * logged on the errors ref and escalated once (sync_tell.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "record/record.h"
#include "store/store.h"
#include "write/write.h"
#include "sync_index.h"
#include "sync_escalate.h"
#include "sync_tell.h"

/*
 * Logs the conflict on the errors ref (the local record's bytes and why)
 * and, for a message, escalates it to the admin in the local SSOT, once:
 * two versions of one message cannot both stand (AMP/1.0 conflict:
 * "cannot be reconciled").
 */
/*
 * Tells the admin about a local record (blob) a sync could not join as it
 * was: `reason` logged on the errors ref with the record's bytes, and a
 * `conflict` escalation (warning, from system) with `description` written
 * into task `task`, once per `affected` msg_id (NULL: none).  Best effort:
 * what the join did is what the user sees first.
 */
static void tell_admin(amp_store *st, amp_schema_set *set, const char *remote,
		       const git_oid *blob_id, const char *task, const char *affected,
		       const char *reason, const char *description)
{
	git_blob *blob = NULL;
	amp_errlist reasons = { NULL, 0, 0 }, errs = { NULL, 0, 0 };
	amp_error ignored;
	amp_escalation e = { 0 };
	amp_send_result res;
	json_t *list = NULL;

	if (git_blob_lookup(&blob, amp_store_repo(st), blob_id) < 0) {
		git_error_clear();
		return;
	}
	amp_errlist_add(&reasons, AMP_ERULE, "", "%s", reason);
	amp_store_log_rejection(st, "sync", remote, git_blob_rawcontent(blob),
				(size_t)git_blob_rawsize(blob), 0, AMP_ERULE, &reasons, &ignored);
	if (task &&
	    (list = affected ? json_pack("[s]", affected) : json_array())) {
		e.task_id = task;
		e.from = "system";
		e.escalation_type = "conflict";
		e.severity = "warning";
		e.triggered_by = "system";
		e.description = description;
		e.affected_msgs = list;
		e.auto_suspended = -1;
		e.once = 1;
		amp_send_escalation(st, set, &e, NULL, &res, &errs);
	}
	json_decref(list);
	amp_errlist_free(&errs);
	amp_errlist_free(&reasons);
	git_blob_free(blob);
}

void amp_sync_log_conflict(amp_store *st, amp_schema_set *set, const char *remote,
			   const struct conflict *c, const amp_error *why)
{
	char task[64], reason[AMP_MSG_MAX + 64], description[2048];
	int named = c->id[0] && amp_msg_id_task(c->id, task, sizeof(task)) == 0;

	snprintf(reason, sizeof(reason), "%s (local commit %s)", why->message,
		 git_oid_tostr_s(&c->commit));
	snprintf(description, sizeof(description),
		 "amp sync with %.200s: %.100s is in this SSOT (%.300s) and on %.200s (%.300s) with different content; the sync is refused until one version is withdrawn",
		 remote, c->id, c->local, remote, c->remote);
	tell_admin(st, set, remote, &c->blob, named ? task : NULL, c->id, reason, description);
}

/*
 * The records the join set aside because a rule refused them in their new
 * place (issue 30): each logged and escalated once, so that a person
 * learns that what was written is kept but in force nowhere.
 */
void amp_sync_tell_refused(amp_store *st, amp_schema_set *set, const char *source,
			   const json_t *refused)
{
	char description[2048];
	const json_t *v;
	git_oid blob;
	size_t i;

	json_array_foreach(refused, i, v) {
		const char *kind = amp_json_str(v, "kind"), *id = amp_json_str(v, "id");
		json_t *doc = NULL;
		amp_error ignored;
		int told;

		if (git_oid_fromstr(&blob, amp_json_str(v, "blob")) < 0)
			continue;
		/* Escalated by the join itself, right after the record
		 * (sync_escalate.h); and one of these very escalations set
		 * aside (a hub that refuses them) is logged, not escalated
		 * again: that would be a new record for the hub to refuse,
		 * round after round. */
		amp_sync_read_doc(amp_store_repo(st), &blob, &doc, &ignored);
		told = json_is_true(json_object_get(v, "escalated")) ||
		       amp_sync_aside_told_again(doc);
		json_decref(doc);
		amp_sync_aside_description(description, sizeof(description), kind, id,
					   amp_json_str(v, "reason"));
		tell_admin(st, set, source, &blob, told ? NULL : amp_json_str(v, "task"),
			   strcmp(kind, "control") ? id : NULL, amp_json_str(v, "reason"),
			   description);
	}
}
