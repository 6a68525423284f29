/*
 * rejection.c - the error log (store.h amp_store_log_rejection): what was
 * refused, and why, on the errors ref.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "record/record.h"
#include "json/json.h"

struct rejection_ctx {
	const char *raw;
	size_t len;
	char dir[128];
	char *reasons;
	char subject[512];
};

static int build_rejection(amp_store *st, git_tree *tip, void *ctx,
			   amp_store_write *w, amp_error *err)
{
	struct rejection_ctx *rc = ctx;
	git_tree_entry *taken = NULL;
	char dir[192], path[256];
	int status, n;

	(void)st;
	/* One directory per rejection: the same bytes refused twice in one
	 * millisecond (by two commands, say) are two events, kept apart. */
	snprintf(dir, sizeof(dir), "%s", rc->dir);
	for (n = 2; git_tree_entry_bypath(&taken, tip, dir) == 0; n++) {
		git_tree_entry_free(taken);
		taken = NULL;
		snprintf(dir, sizeof(dir), "%s-%d", rc->dir, n);
	}
	git_error_clear();
	snprintf(w->subject, sizeof(w->subject), "%s", rc->subject);
	snprintf(w->author, sizeof(w->author), "system");
	snprintf(path, sizeof(path), "%s/raw", dir);
	if ((status = amp_store_write_add(w, path, rc->raw, rc->len, err)) < 0)
		return status;
	snprintf(path, sizeof(path), "%s/reasons.json", dir);
	return amp_store_write_add(w, path, rc->reasons, strlen(rc->reasons), err);
}


int amp_store_log_rejection(amp_store *st, const char *command,
			    const char *source, const char *raw, size_t len,
			    size_t total, int status,
			    const amp_errlist *reasons, amp_error *err)
{
	/* Past the size limit only a prefix is kept: a refusal must not
	 * cost the repository what acceptance would not have. */
	int cut = len > AMP_LIMIT_MESSAGE_BYTES;
	struct rejection_ctx rc = { raw, cut ? AMP_LIMIT_LOG_RAW_BYTES : len, "", NULL, "" };
	json_t *doc = NULL, *list = NULL, *msg = NULL;
	char when[AMP_TIME_BUFSZ], oid_hex[GIT_OID_HEXSZ + 1];
	amp_error why_not;
	git_oid raw_oid;
	int64_t now_ms;
	size_t i;
	int result;

	/* Strict mode: what amp writes on the errors ref is signed by a key
	 * of amp.allowedSigners valid now (the hook and amp fsck take a
	 * commit there from any principal).  A refusal of a writer without
	 * one (no key, a stranger's, a retired one) is not logged: its
	 * commit would itself fail strict mode, on every clone and at the
	 * hub.  The caller tells the sender, as for a log it cannot write. */
	if (st->signing.require &&
	    amp_signing_may_write(&st->signing, NULL, NULL, NULL, 0, &why_not) < 0)
		return amp_error_set(err, AMP_ERULE, "",
				     "strict mode logs a refusal on %s only signed by a key of %s valid now (%s)",
				     st->errors_ref, st->signing.allowed, why_not.message);
	if ((result = amp_clock_now_ms(&now_ms, err)) < 0)
		return result;
	if (git_odb_hash(&raw_oid, raw, rc.len, GIT_OBJECT_BLOB) < 0)
		return amp_error_git(err, AMP_EIO, "cannot hash the rejected message");
	git_oid_tostr(oid_hex, sizeof(oid_hex), &raw_oid);
	amp_time_format(now_ms, when);
	/* errors/<YYYY>/<MM>/<DD>/<unix_ms>-<blob id>: one directory per
	 * rejection, sharded by day. */
	snprintf(rc.dir, sizeof(rc.dir), "errors/%.4s/%.2s/%.2s/%lld-%.12s",
		 when, when + 5, when + 8, (long long)now_ms, oid_hex);

	list = json_array();
	for (i = 0; reasons && i < reasons->count; i++)
		json_array_append_new(list, json_pack("{s:s,s:s}",
			"path", amp_json_text(reasons->items[i].path),
			"message", amp_json_text(reasons->items[i].message)));
	doc = json_pack("{s:s,s:s,s:s,s:i,s:I,s:o}", "time", when, "command",
			command, "source", amp_json_text(source ? source : ""),
			"exit_code", amp_exit_code(status), "size",
			(json_int_t)(total > len ? total : len), "errors", list);
	list = NULL;
	if (doc && cut) {
		json_object_set_new(doc, "raw_bytes_kept", json_integer((json_int_t)rc.len));
		if (total <= len)
			json_object_set_new(doc, "size_at_least", json_true());
	}
	/* Name what was rejected when the bytes are a JSON object with ids;
	 * only within the bounds, so that the parser never meets a
	 * 100,000-deep input. */
	if (!cut && amp_bounds_check_bytes(raw, len, len, 0, "", NULL) == AMP_OK &&
	    (msg = amp_json_loadb(raw, len, 0, NULL, NULL)) && json_is_object(msg)) {
		static const char *const keys[] = { "msg_id", "type", "task_id", "from", "to" };
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			json_t *v = json_object_get(msg, keys[i]);
			if (json_is_string(v))
				json_object_set(doc, keys[i], v);
		}
	}
	if (!doc || !(rc.reasons = amp_json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
		result = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	snprintf(rc.subject, sizeof(rc.subject), "rejected %.100s from %.100s: %.200s",
		 json_is_string(json_object_get(doc, "msg_id")) ?
			 json_string_value(json_object_get(doc, "msg_id")) : "message",
		 source ? source : "-",
		 reasons && reasons->count ? reasons->items[0].message : "");
	result = amp_store_update(st, st->errors_ref, build_rejection, &rc, NULL, err);
cleanup:
	free(rc.reasons);
	json_decref(msg);
	json_decref(doc);
	json_decref(list);
	return result;
}
