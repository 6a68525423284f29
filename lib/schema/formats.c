/*
 * formats.c - the values of "format" that amp checks.  draft-07 7.2: a
 * validator may treat "format" as an annotation only; amp checks
 * "date-time" (RFC 3339) and its own "git-branch-name", and ignores the
 * others, as draft-07 says of formats a validator does not know.
 */
#include "schema_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/refname.h"

int schema_format_check(const char *format, json_t *v, char *why, size_t n)
{
	int64_t ms;

	/* amp's own format: validators that do not know it ignore it, as
	 * draft-07 says of unknown formats. */
	if (!strcmp(format, "git-branch-name")) {
		const char *problem = amp_refname_branch_problem(json_string_value(v));

		if (!problem && json_string_length(v) == strlen(json_string_value(v)))
			return 0;
		snprintf(why, n, "is not a valid git branch name: it %s (git check-ref-format --branch)",
			 problem ? problem : "contains a NUL character");
		return 1;
	}
	/* Other formats are annotations only, as draft-07 allows. */
	if (strcmp(format, "date-time"))
		return 0;
	if (json_string_length(v) == strlen(json_string_value(v)) &&
	    amp_time_parse(json_string_value(v), &ms) == 0)
		return 0;
	snprintf(why, n, "must be an RFC 3339 date-time, got \"%s\"", json_string_value(v));
	return 1;
}
