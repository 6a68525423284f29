#include "progress.h"

#include <string.h>

#include "record/record.h"

/* 1 when a and b are the same string, or both absent. */
static int same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

json_t *amp_progress_json(const amp_task_log *log)
{
	json_t *out = json_array(), *m;
	size_t i, j;

	for (i = 0; out && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type"), *agent = amp_json_str(e->doc, "agent");
		const char *sub = amp_json_str(e->doc, "subtask_id");
		json_t *percent = json_object_get(e->doc, "percent");

		if (e->kind != AMP_ENTRY_CTL || !type || strcmp(type, "progress") || !agent ||
		    !json_is_integer(percent))
			continue;
		/* The same instance and subtask again: the earlier goes. */
		json_array_foreach(out, j, m)
			if (same(amp_json_str(m, "agent"), agent) &&
			    same(amp_json_str(m, "subtask_id"), sub)) {
				json_array_remove(out, j);
				break;
			}
		json_array_append_new(out, json_pack("{s:s,s:s?,s:O,s:s?,s:s?,s:s}", "agent", agent,
						     "subtask_id", sub, "percent", percent,
						     "note", amp_json_str(e->doc, "note"),
						     "timestamp", amp_json_str(e->doc, "timestamp"),
						     "record", e->id));
	}
	return out;
}
