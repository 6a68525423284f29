/*
 * register.c - writing a register record of the agent registry
 * (register.h, protocol/registry.h).
 */
#include "register.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "record_writer.h"

#define NAME_HEAD AMP_REGISTER_HEAD

struct reg_ctx {
	const char *path;
	const char *text;
	const char *agent;
	const char *from;
};

static int build(amp_store *st, git_tree *tip, void *vctx, amp_store_write *w, amp_error *err)
{
	struct reg_ctx *c = vctx;
	git_tree_entry *e = NULL;

	(void)st;
	/* The same content at the same time: written already. */
	if (tip && git_tree_entry_bypath(&e, tip, c->path) == 0) {
		git_tree_entry_free(e);
		return AMP_NOOP;
	}
	git_error_clear();
	snprintf(w->subject, sizeof(w->subject), "register %s %s", c->agent, c->from);
	snprintf(w->trailers, sizeof(w->trailers), "Amp-Type: register\nAmp-Register: %s\n", c->agent);
	snprintf(w->author, sizeof(w->author), "%s", c->from);
	return amp_store_write_add(w, c->path, c->text, strlen(c->text), err);
}

/* A JSON array of the strings v[0..n), refused (-1) when one repeats. */
static json_t *string_set(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i, k;

	for (i = 0; a && i < n; i++) {
		for (k = 0; k < i; k++)
			if (!strcmp(v[k], v[i]))
				break;
		if (k < i)
			continue; /* declared twice: once is what it means */
		json_array_append_new(a, json_string(v[i]));
	}
	return a;
}

int amp_registry_write(amp_store *st, amp_schema_set *set, const char *agent,
		       const char *from, const char *const *roles, size_t nroles,
		       const char *const *caps, size_t ncaps, int64_t now_ms,
		       char *path, size_t pathsz, amp_errlist *errors)
{
	char when[AMP_TIME_BUFSZ], hex[13];
	size_t base = errors->count;
	json_t *doc = NULL;
	char *text = NULL;
	amp_error err;
	git_oid blob;
	struct reg_ctx c = { path, NULL, agent, from };
	int status, n;

	path[0] = '\0';
	doc = json_pack("{s:s,s:s,s:s,s:s,s:o,s:s}", "protocol_version", AMP_PROTOCOL,
			"type", "register", "from", from, "agent", agent,
			"roles", string_set(roles, nroles),
			"timestamp", amp_time_format(now_ms, when));
	if (doc && ncaps)
		json_object_set_new(doc, "capabilities", string_set(caps, ncaps));
	if (!doc) {
		status = amp_errlist_add(errors, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = amp_control_validate(set, doc, errors)) < 0)
		goto refused;
	if (strcmp(from, "admin") && !amp_registry_has_role(json_object_get(doc, "roles"), from)) {
		status = amp_errlist_add(errors, AMP_ERULE, "/from",
					 "an agent registers as one of the roles it declares (--role), or the admin registers it: %s is neither",
					 from);
		goto refused;
	}
	if (!(text = amp_message_dump(doc))) {
		status = amp_errlist_add(errors, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (git_odb_hash(&blob, text, strlen(text), GIT_OBJECT_BLOB) < 0) {
		status = amp_error_git(&err, AMP_EIO, "cannot hash the record");
		amp_errlist_add(errors, status, "", "%s", err.message);
		goto cleanup;
	}
	git_oid_tostr(hex, sizeof(hex), &blob);
	n = snprintf(path, pathsz, AMP_REGISTRY_DIR "/%s/" NAME_HEAD "%lld-%s.json", agent,
		     (long long)now_ms, hex);
	if (n < 0 || (size_t)n >= pathsz) {
		status = amp_errlist_add(errors, AMP_EIO, "", "path too long");
		goto cleanup;
	}
	c.text = text;
refused:
	/* Only what the checks above refused is logged for a register
	 * record, not the store's own refusal of the write (strict signing). */
	status = amp_write_logged(st, status, "register", build, &c, status < 0 ? &doc : NULL,
				  NULL, errors, base);
	if (status == AMP_NOOP)
		status = AMP_OK;
cleanup:
	free(text);
	json_decref(doc);
	return status;
}
