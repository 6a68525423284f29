/*
 * names.c - the names of the SSOT's layout (store.h):
 * a task's directory, a record's file name (an agent's name is
 * record/names.h's).  Pure: no repository.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

static int is_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

int amp_store_task_dir(const char *task_id, char *buf, size_t bufsz)
{
	size_t len = strlen(task_id);
	int shard_len, n;

	if (!amp_task_id_valid(task_id, len))
		return -1;
	shard_len = (int)(len - 7 - 2);
	n = snprintf(buf, bufsz, "tasks/%.4s/%.*s/%s", task_id + 2, shard_len,
		     task_id + 7, task_id);
	return fits(n, bufsz) ? 0 : -1;
}

int amp_msg_id_task(const char *msg_id, char *buf, size_t bufsz)
{
	const char *task;
	size_t len;

	if (amp_msg_id_parse(msg_id, &task, &len, NULL) < 0 || len + 1 > bufsz)
		return -1;
	memcpy(buf, task, len);
	buf[len] = '\0';
	return 0;
}

int amp_store_entry_parse(const char *name, int *seq, amp_entry_kind *kind,
			  const char **id, size_t *id_len)
{
	size_t len = strlen(name);

	if (len < 6 + 5 + 1 + 5 || !is_digits(name, 6) || name[6] != '.' ||
	    name[10] != '.' || strcmp(name + len - 5, ".json") != 0)
		return -1;
	if (!strncmp(name + 7, "msg", 3))
		*kind = AMP_ENTRY_MSG;
	else if (!strncmp(name + 7, "ack", 3))
		*kind = AMP_ENTRY_ACK;
	else if (!strncmp(name + 7, "ctl", 3))
		*kind = AMP_ENTRY_CTL;
	else
		return -1;
	if (seq)
		*seq = atoi(name);
	*id = name + 11;
	*id_len = len - 11 - 5;
	return 0;
}

int amp_store_entry_name(int seq, amp_entry_kind kind, const char *id,
			 char *buf, size_t bufsz)
{
	int n = snprintf(buf, bufsz, "%06d.%s.%s.json", seq,
			 kind == AMP_ENTRY_MSG ? "msg" : kind == AMP_ENTRY_ACK ? "ack" : "ctl", id);

	return fits(n, bufsz) ? 0 : -1;
}

int amp_store_record_sig_path(const char *record_path, char *buf, size_t bufsz)
{
	return fits(snprintf(buf, bufsz, "%s" AMP_RECORD_SIG_SUFFIX, record_path), bufsz) ? 0 : -1;
}

int amp_store_sig_record_path(const char *path, char *buf, size_t bufsz)
{
	size_t len = strlen(path), n = strlen(AMP_RECORD_SIG_SUFFIX);

	if (len <= n || strcmp(path + len - n, AMP_RECORD_SIG_SUFFIX) || len - n >= bufsz)
		return -1;
	memcpy(buf, path, len - n);
	buf[len - n] = '\0';
	return 0;
}
