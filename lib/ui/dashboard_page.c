/*
 * dashboard_page.c - what every page of the dashboard (dashboard.h) is
 * made of: the file written through a rename, the chrome (one stylesheet,
 * the navigation, the Content-Security-Policy), states and times.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "base/clock.h"
#include "dashboard_int.h"

#include "base/tempfile.h"

/* Writes data to dir/rel through a temporary file and a rename, so that a
 * reader (a browser, the server) never sees half a page.  With
 * `if_changed`, a file already holding these bytes is left alone. */
int dash_write_file(struct gen *g, const char *rel, const char *data, size_t len, int if_changed,
		    amp_error *err)
{
	amp_tempfile t = { .fd = -1 };
	char path[PATH_MAX], tmp[sizeof(t.tmp)];
	int status = AMP_OK;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", g->dir, rel) >= sizeof(path))
		return amp_error_set(err, AMP_EIO, "", "%s/%s: path too long", g->dir, rel);
	if (if_changed) {
		char *old = NULL;
		size_t oldlen = 0;

		if (amp_cache_read(path, len, &old, &oldlen) == 0 && oldlen == len &&
		    !memcmp(old, data, len)) {
			free(old);
			return AMP_OK;
		}
		free(old);
	}
	/* the errors name the temporary file (tempfile.h) */
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if (amp_tempfile_open(&t, path, 0) == 0)
		snprintf(tmp, sizeof(tmp), "%s", t.tmp);
	if (!t.tmp[0] || amp_tempfile_write(&t, data, len) < 0 || amp_tempfile_close(&t) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	if (amp_tempfile_commit(&t) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot rename %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	json_array_append_new(g->written, json_string(rel));
cleanup:
	amp_tempfile_rollback(&t);
	return status;
}

int dash_page_open(struct page *p, amp_error *err)
{
	p->buf = NULL;
	p->len = 0;
	if (!(p->f = open_memstream(&p->buf, &p->len)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

int dash_page_finish(struct gen *g, struct page *p, const char *rel, int if_changed, amp_error *err)
{
	int status;

	if (fclose(p->f) != 0) {
		free(p->buf);
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	status = dash_write_file(g, rel, p->buf, p->len, if_changed, err);
	free(p->buf);
	return status;
}

/* Colours: every pair of text and background here has a contrast of 4.5
 * or more (WCAG AA, what axe-core checks). */
/* A task row of another state (role) than the fragment names is hidden
 * (the rule's end: "{display:none}"). */
#define STATE_FILTER(s) "#state-" s ":target~.wrap tr.task:not([data-state=" s "]),"
#define ROLE_FILTER(r) "#role-" r ":target~.wrap tr.task:not([data-roles~=" r "])"
static const char css[] =
	"body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;padding:0 1em 2em;"
	"color:#1d1d1f;background:#fbfbfd;line-height:1.4}"
	"header{border-bottom:1px solid #ddd;margin-bottom:1em}"
	"nav a{margin-right:1em;display:inline-block;padding:.3em 0}h1{font-size:1.4em}"
	"h2{font-size:1.15em;margin-top:1.5em}h3{font-size:1em;margin:1em 0 .3em}"
	"a{color:#0645ad}"
	"table{border-collapse:collapse;width:100%;font-size:.92em}"
	"th,td{border-bottom:1px solid #e3e3e6;padding:.3em .4em;text-align:left;vertical-align:top}"
	"th a{color:inherit}.wrap{overflow-x:auto}"
	".st{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;background:#eee}"
	".st-approved{background:#d4f5dc}.st-rejected,.st-locked,.st-suspended,.st-aborted{background:#fbd5d5}"
	".st-awaiting_approval{background:#fff0c2}.overdue{color:#b00020;font-weight:600}"
	".needs{border-left:4px solid #b00020;background:#fff5f5;padding:.5em .8em;margin:.5em 0}"
	".needs p{margin:.3em 0}"
	"code.cmd{display:inline-block;user-select:all;background:#1d1d1f;color:#fff;padding:.15em .5em;"
	"border-radius:.3em;font-size:.9em;word-break:break-all}"
	".stats{display:flex;flex-wrap:wrap;gap:.6em;padding:0;list-style:none}"
	".stats li{background:#fff;border:1px solid #e3e3e6;border-radius:.4em;padding:.4em .8em}"
	".stats b{display:block;font-size:1.4em}"
	".filters a{margin-right:.8em;display:inline-block;padding:.2em 0}"
	".filters a[aria-current]{font-weight:700;color:#1d1d1f}"
	"form.q{margin:.5em 0}form.q label{margin-right:.6em}"
	"ol.tl{list-style:none;padding:0}ol.tl li{border-left:3px solid #ccd;margin:0 0 .8em;padding:.2em .7em}"
	"li.k-escalation{border-color:#b00020;background:#fff5f5}li.k-ctl{border-color:#888}"
	"li.k-ack{border-color:#dde;font-size:.9em;color:#444}li.rejected{border-color:#e06000}"
	"li.k-bad{border-color:#b00020}section.round{border:1px solid #e3e3e6;border-radius:.4em;"
	"padding:.2em .8em;margin:.8em 0;background:#fff}"
	".meta{color:#4a4a4f;font-size:.85em}.who{font-weight:600}"
	"pre{white-space:pre-wrap;word-break:break-all;background:#f3f3f6;padding:.5em;font-size:.8em}"
	"svg{width:100%;height:auto;max-width:60em;background:#fff;border:1px solid #e3e3e6}"
	"svg text{font-size:11px;fill:#333}"
	/* The views of a static page (dashboard_views.c): the fragment of
	 * the URL names the chart's window or the rows to show. */
	".win{display:none}.win:target,.win.fit{display:block}.win:target~.win.fit{display:none}"
	STATE_FILTER("new") STATE_FILTER("awaiting_approval") STATE_FILTER("dispatched")
	STATE_FILTER("in_progress") STATE_FILTER("submitted") STATE_FILTER("in_review")
	STATE_FILTER("approved") STATE_FILTER("rejected") STATE_FILTER("suspended")
	STATE_FILTER("locked") STATE_FILTER("aborted") STATE_FILTER("unreadable")
	ROLE_FILTER("admin") "," ROLE_FILTER("coordinator") "," ROLE_FILTER("executor") ","
	ROLE_FILTER("reviewer") "{display:none}"
	"@media (max-width:600px){body{padding:0 .5em 1em}th,td{padding:.25em}.hide-s{display:none}}";

/* The policy of every page: no script but, on the pages of task tables,
 * the filter script by its hash (dashboard_script.c), so that even a
 * markup mistake could not run one (--serve adds its own,
 * dashboard_serve.c). */
#define CSP_META_START "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; " \
		       "style-src 'unsafe-inline'; img-src 'self'"

static void page_head(FILE *f, const char *title, const char *up, int filtered)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", f);
	if (filtered)
		fprintf(f, CSP_META_START "; script-src '%s'\">\n", dash_filter_hash());
	else
		fputs(CSP_META_START "\">\n", f);
	/* The site's own icon, so that a browser asks for no other. */
	fprintf(f, "<link rel=\"icon\" href=\"%sfavicon.svg\">\n<title>", up);
	amp_html_put(f, title, 0);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<header><nav aria-label=\"pages\">"
		"<a href=\"%sindex.html\">Overview</a><a href=\"%sneeds.html\">Needs the admin</a>"
		"<a href=\"%stasks.html\">Tasks</a><a href=\"%sagents.html\">Agents</a>"
		"<a href=\"%serrors.html\">Error log</a></nav>\n<h1>", css, up, up, up, up, up);
	amp_html_put(f, title, 0);
	fputs("</h1></header>\n<main>\n", f);
}

void dash_page_head(FILE *f, const char *title, const char *up)
{
	page_head(f, title, up, 0);
}

void dash_page_head_filtered(FILE *f, const char *title, const char *up)
{
	page_head(f, title, up, 1);
}

void dash_page_tail(FILE *f, int64_t now_ms)
{
	fputs("</main>\n<footer class=\"meta\"><p>Generated by amp dashboard from the SSOT", f);
	if (now_ms >= 0) {
		fputs(" at ", f);
		dash_put_time(f, now_ms);
	}
	fputs("; read-only.</p></footer>\n</body></html>\n", f);
}

const char *dash_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

long long dash_ival(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* A state as a badge; the class name is one of amp's own state words. */
const char *const dash_states[] = { "new", "awaiting_approval", "dispatched", "in_progress",
	"submitted", "in_review", "approved", "rejected", "suspended", "locked", "aborted",
	"unreadable", NULL };

void dash_put_state(FILE *f, const char *state)
{
	const char *const *known = dash_states;
	const char *cls = "other";
	size_t i;

	for (i = 0; state && known[i]; i++)
		if (!strcmp(state, known[i]))
			cls = known[i];
	fprintf(f, "<span class=\"st st-%s\">", cls);
	amp_html_put(f, state ? state : "?", 0);
	fputs("</span>", f);
}

void dash_put_span(FILE *f, int64_t span_ms)
{
	int64_t s = span_ms / 1000;

	if (s < 60)
		fprintf(f, "%llds", (long long)s);
	else if (s < 100 * 60)
		fprintf(f, "%lldm", (long long)(s / 60));
	else if (s < 48 * 3600)
		fprintf(f, "%lldh", (long long)(s / 3600));
	else
		fprintf(f, "%lldd", (long long)(s / 86400));
}

/* <time> of ms: "2026-11-27 12:20 UTC", or in words relative to now_ms
 * ("4m ago", "in 2h") with the date as its title when now_ms >= 0; "-"
 * when ms < 0. */
static void put_time(FILE *f, int64_t ms, int64_t now_ms)
{
	char iso[AMP_TIME_BUFSZ], human[AMP_TIME_BUFSZ];

	if (ms < 0) {
		fputs("-", f);
		return;
	}
	/* "2026-11-27T12:20:22.001+00:00" */
	amp_time_format(ms, iso);
	snprintf(human, sizeof(human), "%.10s %.5s UTC", iso, iso + 11);
	if (now_ms < 0) {
		fprintf(f, "<time datetime=\"%s\">%s</time>", iso, human);
		return;
	}
	fprintf(f, "<time datetime=\"%s\" title=\"%s\">", iso, human);
	if (now_ms >= ms) {
		dash_put_span(f, now_ms - ms);
		fputs(" ago", f);
	} else {
		fputs("in ", f);
		dash_put_span(f, ms - now_ms);
	}
	fputs("</time>", f);
}

void dash_put_time(FILE *f, int64_t ms)
{
	put_time(f, ms, -1);
}

void dash_put_ago(FILE *f, int64_t ms, int64_t now_ms)
{
	put_time(f, ms, now_ms < 0 ? 0 : now_ms);
}

void dash_put_cmd(FILE *f, const char *fmt, const char *task_id)
{
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);

	if (!m)
		return;
	fprintf(m, fmt, task_id);
	fclose(m);
	fputs("<code class=\"cmd\">", f);
	amp_html_put(f, s, 0);
	fputs("</code>", f);
	free(s);
}

const char dash_favicon[] =
	"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
	"<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#0645ad\"/>"
	"<path d=\"M4 12 8 4l4 8\" stroke=\"#fff\" stroke-width=\"2\" fill=\"none\"/></svg>\n";
