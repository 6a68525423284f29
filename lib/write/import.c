#include "import.h"

#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "send.h"
#include "base/util.h"
#include "json/json.h"

struct import_ctx {
	amp_schema_set *set;
	FILE *in;
	off_t start;
	char *buf;          /* one line, AMP_LIMIT_MESSAGE_BYTES + 2 bytes */
	int check_repo;     /* git config amp.checkRepo */
	int64_t now_ms;
	amp_import_result *res;
	amp_errlist *errors;
};

static int blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == '\0';
}

/* Reads the next line that is not blank into c->buf: 1, 0 at the end, or
 * an error status (a line past the size limit). */
static int next_line(struct import_ctx *c, size_t *len, amp_error *err)
{
	for (;;) {
		if (!fgets(c->buf, AMP_LIMIT_MESSAGE_BYTES + 2, c->in)) {
			if (ferror(c->in))
				return amp_error_set(err, AMP_EIO, "", "cannot read the input");
			return 0;
		}
		c->res->line = ++c->res->lines;
		*len = strlen(c->buf);
		if (*len > AMP_LIMIT_MESSAGE_BYTES && c->buf[*len - 1] != '\n')
			return amp_error_set(err, AMP_ESCHEMA, "",
					     "more than %d bytes: past the %d-byte message size limit",
					     AMP_LIMIT_MESSAGE_BYTES, AMP_LIMIT_MESSAGE_BYTES);
		if (!blank(c->buf))
			return 1;
	}
}

static int step(amp_store *st, git_tree *tip, void *vctx, size_t i,
		amp_store_write *w, amp_error *err)
{
	struct import_ctx *c = vctx;
	amp_send_result sres;
	json_t *rec = NULL;
	size_t len = 0;
	int status;

	/* Step 0 again: the ref moved under us, so everything is checked
	 * again on what is there now. */
	if (i == 0) {
		memset(c->res, 0, sizeof(*c->res));
		amp_errlist_truncate(c->errors, 0);
		if (fseeko(c->in, c->start, SEEK_SET) < 0)
			return amp_error_set(err, AMP_EIO, "", "cannot read the input again");
	}
	if ((status = next_line(c, &len, err)) <= 0) {
		if (status == 0)
			c->res->line = 0;
		return status == 0 ? AMP_DONE : status;
	}
	if ((status = amp_bounds_check_bytes(c->buf, len, 0, 0, "", err)) < 0 ||
	    (status = amp_json_parse(c->buf, len, &rec, err)) < 0)
		return status;
	status = amp_send_import_record(st, c->set, tip, rec, c->check_repo, c->now_ms, w,
					&sres, c->errors, err);
	if (status == AMP_NOOP)
		c->res->duplicates++;
	if (status == AMP_OK) {
		c->res->imported++;
		c->res->escalations += w->nfiles - 1;
	}
	if (status < 0 && !c->errors->count)
		amp_errlist_add(c->errors, status, err->path, "%s", err->message);
	json_decref(rec);
	return status;
}

/* A stream that cannot be read twice (a pipe) is copied to a temporary
 * file first; *spool is that file or NULL. */
static int rewindable(FILE *in, FILE **spool, amp_error *err)
{
	char chunk[65536];
	size_t n;

	*spool = NULL;
	if (ftello(in) >= 0 && fseeko(in, 0, SEEK_CUR) == 0)
		return AMP_OK;
	if (!(*spool = tmpfile()))
		return amp_error_set(err, AMP_EIO, "", "cannot make a temporary file");
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		if (fwrite(chunk, 1, n, *spool) != n)
			return amp_error_set(err, AMP_EIO, "", "cannot write a temporary file");
	if (ferror(in))
		return amp_error_set(err, AMP_EIO, "", "cannot read the input");
	if (fflush(*spool) != 0 || fseeko(*spool, 0, SEEK_SET) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot write a temporary file");
	return AMP_OK;
}

int amp_import(amp_store *st, amp_schema_set *set, FILE *in,
	       amp_import_result *res, amp_errlist *errors)
{
	struct import_ctx c = { set, in, 0, NULL, 1, 0, res, errors };
	FILE *spool = NULL;
	git_commit *commit = NULL;
	git_oid tip;
	amp_error err;
	size_t commits = 0;
	int status;

	memset(res, 0, sizeof(*res));
	if ((status = amp_store_config_bool(st, "amp.checkRepo", 1, &c.check_repo, &err)) < 0 ||
	    (status = amp_clock_now_ms(&c.now_ms, &err)) < 0 ||
	    (status = rewindable(in, &spool, &err)) < 0)
		goto fail;
	if (spool)
		c.in = spool;
	c.start = ftello(c.in);
	if (!(c.buf = malloc(AMP_LIMIT_MESSAGE_BYTES + 2))) {
		status = amp_error_set(&err, AMP_EIO, "", "out of memory");
		goto fail;
	}
	status = amp_store_update_batch(st, amp_store_messages_ref(st), step, &c, &tip,
					&commits, &err);
	if (status < 0)
		goto fail;
	res->line = 0;
	if (!commits && (status = amp_store_tip(st, amp_store_messages_ref(st), &commit, NULL,
						&err)) < 0)
		goto fail;
	git_oid_tostr(res->tip, sizeof(res->tip), commit ? git_commit_id(commit) : &tip);
	status = AMP_OK;
	goto cleanup;
fail:
	if (!errors->count)
		amp_errlist_add(errors, status, err.path, "%s", err.message);
cleanup:
	git_commit_free(commit);
	free(c.buf);
	if (spool)
		fclose(spool);
	return status;
}
