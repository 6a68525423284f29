/*
 * dashboard_live.c - what --serve adds to the static pages (dashboard.h):
 * the listing of every task filtered and sorted by query parameters
 * (tasks.html?state=...&holder=...&q=...&overdue=1&escalated=1&sort=...),
 * and live refresh: each HTML page it serves gets one script, live.js,
 * which polls /amp-tip (the ids of the two refs, cheap) every 2 seconds
 * and, when they moved (or once a minute, for the times in words), fetches
 * the page again and swaps its <main> and <footer> in place: no reload.
 * The script is a constant of this file, served from the same origin; the
 * pages' policy allows that one origin's scripts and no inline one, so no
 * text of a message can run (it is escaped as on the static pages, and a
 * page fetched again is parsed by DOMParser, which runs nothing).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "dashboard_int.h"

const char dash_live_js[] =
	"(function () {\n"
	"  'use strict';\n"
	"  var tip = null, swapped = Date.now();\n"
	"  function swap(html) {\n"
	"    var doc = new DOMParser().parseFromString(html, 'text/html');\n"
	"    ['main', 'footer'].forEach(function (tag) {\n"
	"      var fresh = doc.querySelector(tag), cur = document.querySelector(tag);\n"
	"      if (fresh && cur) cur.replaceWith(document.importNode(fresh, true));\n"
	"    });\n"
	"    swapped = Date.now();\n"
	"    document.documentElement.setAttribute('data-amp-refreshed', String(swapped));\n"
	"  }\n"
	"  function text(r) { if (!r.ok) throw new Error(r.status); return r.text(); }\n"
	"  function poll() {\n"
	"    fetch('/amp-tip', { cache: 'no-store' }).then(text).then(function (t) {\n"
	"      var stale = tip !== null && (t !== tip || Date.now() - swapped > 60000);\n"
	"      tip = t;\n"
	"      if (stale) return fetch(location.href, { cache: 'no-store' }).then(text).then(swap);\n"
	"    }).catch(function () {}).then(function () { setTimeout(poll, 2000); });\n"
	"  }\n"
	"  poll();\n"
	"})();\n";
const size_t dash_live_js_len = sizeof(dash_live_js) - 1;

/* The policy the server sends with a page: the static one plus scripts
 * and fetches of its own origin. */
const char *dash_live_csp(void)
{
	static char csp[256];

	if (!csp[0])
		snprintf(csp, sizeof(csp), "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
			 "script-src 'self' '%s'; connect-src 'self'", dash_filter_hash());
	return csp;
}

/* The static policy's start; the attribute ends at the next '">' (a
 * page of task tables adds the filter script's hash). */
#define STATIC_CSP "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"

/* The first n bytes of needle in hay (len bytes), or NULL. */
static const char *find(const char *hay, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(hay + i, needle, n))
			return hay + i;
	return NULL;
}

int dash_live_page(const char *html, size_t len, char **out, size_t *outlen)
{
	const char *csp = find(html, len, STATIC_CSP);
	const char *end = NULL, *p, *stop;
	FILE *m;

	/* The last </body>: every page ends with it, and message text
	 * cannot hold one (it is escaped). */
	for (p = html; (p = find(p, len - (size_t)(p - html), "</body>")); p++)
		end = p;
	*out = NULL;
	*outlen = 0;
	if (!(m = open_memstream(out, outlen)))
		return -1;
	stop = csp && end > csp ? find(csp, (size_t)(end - csp), "\">") : NULL;
	if (!stop) {
		fwrite(html, 1, len, m);
	} else {
		fwrite(html, 1, (size_t)(csp - html), m);
		fprintf(m, "content=\"%s\">", dash_live_csp());
		p = stop + 2;
		fwrite(p, 1, (size_t)(end - p), m);
		fputs("<script src=\"/live.js\"></script>\n", m);
		fwrite(end, 1, len - (size_t)(end - html), m);
	}
	return fclose(m) == 0 ? 0 : -1;
}

/* Every task's row, from the state the last pass wrote (the caller
 * decrefs); NULL when out of memory. */
static json_t *all_rows(amp_store *st, const char *dir)
{
	char path[PATH_MAX], name[AMP_DASHBOARD_NAME_MAX];
	json_t *top, *rows = json_array(), *state, *v, *t;
	const char *k, *tk;

	snprintf(path, sizeof(path), "%s/.amp-dashboard.json", dir);
	if (!rows || !(top = amp_cache_json(st, path)))
		return rows;
	json_object_foreach(json_object_get(top, "shards"), k, v) {
		amp_dashboard_page_name(k, name);
		name[strlen(name) - 5] = 0; /* ".html" */
		snprintf(path, sizeof(path), "%s/.amp-dashboard/%s.json", dir, name);
		if (!(state = amp_cache_json(st, path)))
			continue;
		json_object_foreach(json_object_get(state, "tasks"), tk, t)
			if (json_is_object(json_object_get(t, "row")))
				json_array_append(rows, json_object_get(t, "row"));
		json_decref(state);
	}
	json_decref(top);
	return rows;
}

/* Decodes %XX and "+" of a query value into buf (cut at bufsz - 1). */
static const char *decode(const char *s, char *buf, size_t bufsz)
{
	size_t n = 0;
	unsigned v;

	if (!s)
		return NULL;
	for (; *s && n + 1 < bufsz; s++) {
		if (*s == '%' && s[1] && s[2] && sscanf(s + 1, "%2x", &v) == 1) {
			buf[n++] = (char)v;
			s += 2;
		} else {
			buf[n++] = *s == '+' ? ' ' : *s;
		}
	}
	buf[n] = 0;
	return buf;
}

int dash_serve_query(amp_store *st, const char *dir, dash_arg_fn arg, void *ctx, int64_t now_ms,
		     char **body, size_t *len)
{
	char state[64], holder[256], text[256], sort[32];
	struct dash_query q;
	json_t *rows = all_rows(st, dir);
	FILE *m;

	memset(&q, 0, sizeof(q));
	q.state = decode(arg(ctx, "state"), state, sizeof(state));
	q.holder = decode(arg(ctx, "holder"), holder, sizeof(holder));
	q.text = decode(arg(ctx, "q"), text, sizeof(text));
	q.sort = decode(arg(ctx, "sort"), sort, sizeof(sort));
	q.overdue = arg(ctx, "overdue") && !strcmp(arg(ctx, "overdue"), "1");
	q.escalated = arg(ctx, "escalated") && !strcmp(arg(ctx, "escalated"), "1");
	q.desc = arg(ctx, "desc") && !strcmp(arg(ctx, "desc"), "1");
	*body = NULL;
	if (!rows || !(m = open_memstream(body, len))) {
		json_decref(rows);
		return -1;
	}
	dash_render_query(m, rows, &q, now_ms);
	json_decref(rows);
	return fclose(m) == 0 ? 0 : -1;
}
