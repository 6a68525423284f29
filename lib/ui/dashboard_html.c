/*
 * dashboard_html.c - escaping and file names for the dashboard
 * (dashboard.h): the two places where message text meets HTML and the
 * file system.
 */
#include <stdint.h>
#include <string.h>

#include "record/record.h"
#include "dashboard.h"
#include "base/hash.h"
#include "base/util.h"

/* A control picture (U+2400 + c, U+2421 for DEL) in UTF-8: visible, one
 * glyph, and no markup. */
static void put_picture(FILE *out, unsigned c)
{
	unsigned cp = c == 0x7f ? 0x2421 : 0x2400 + c;

	fputc(0xe0 | (cp >> 12), out);
	fputc(0x80 | ((cp >> 6) & 0x3f), out);
	fputc(0x80 | (cp & 0x3f), out);
}

void amp_html_put(FILE *out, const char *s, int keep_newlines)
{
	unsigned cp;
	size_t n;

	if (!s)
		return;
	while (*s) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&': fputs("&amp;", out); s++; continue;
		case '<': fputs("&lt;", out); s++; continue;
		case '>': fputs("&gt;", out); s++; continue;
		case '"': fputs("&quot;", out); s++; continue;
		case '\'': fputs("&#39;", out); s++; continue;
		default: break;
		}
		if (c == '\n' && keep_newlines) {
			fputc('\n', out);
			s++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			put_picture(out, c);
			s++;
			continue;
		}
		if (c < 0x80) {
			fputc(c, out);
			s++;
			continue;
		}
		if (!(n = amp_utf8_seq(s, &cp))) {
			fprintf(out, "\\x%02x", c);
			s++;
			continue;
		}
		/* C1 controls and the bidirectional overrides and isolates
		 * would reorder or hide the text around them. */
		if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			fprintf(out, "\\u%04x", cp);
		else
			fwrite(s, 1, n, out);
		s += n;
	}
}

void amp_dashboard_page_name(const char *task_id, char buf[AMP_DASHBOARD_NAME_MAX])
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(task_id), i, o;
	uint64_t h;

	if (amp_task_id_valid(task_id, len)) {
		snprintf(buf, AMP_DASHBOARD_NAME_MAX, "%s.html", task_id);
		return;
	}
	/* Not a task id (a hand-made tree): its bytes in hex, so that the
	 * name holds no "/", "..", or anything a shell or a browser reads,
	 * and the hash of all of it, so that two long names differ. */
	h = amp_fnv1a(AMP_FNV1A_BASIS, task_id, len);
	o = (size_t)snprintf(buf, AMP_DASHBOARD_NAME_MAX, "x-");
	for (i = 0; i < len && i < 24; i++) {
		buf[o++] = hex[(unsigned char)task_id[i] >> 4];
		buf[o++] = hex[(unsigned char)task_id[i] & 15];
	}
	snprintf(buf + o, AMP_DASHBOARD_NAME_MAX - o, "-%016llx.html", (unsigned long long)h);
}
