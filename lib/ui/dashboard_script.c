/*
 * dashboard_script.c - the one inline script of the static overview and
 * group pages (dashboard_int.h): it filters the task table's rows by the
 * URL's query and fragment (index.html#q=login&holder=alice&overdue=1
 * &escalated=1&state=rejected&sort=deadline&desc=1), so that every filter
 * is a URL an admin can bookmark, without a server.  The page's
 * Content-Security-Policy allows this script by its sha256 and no other
 * inline one (CSP Level 2 "hash-source"): a script that message text
 * smuggled in, or this one altered, does not run.  It matches rows by
 * their textContent and their data-* attributes and never writes markup,
 * so a row's text stays text; with scripts off the page shows every row.
 */
#include <stdio.h>
#include <string.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "dashboard_int.h"

/* Sort keys, as --serve's sort= (dashboard_overview.c query_cmp):
 * [attribute, numeric, larger first]; rows without a deadline last. */
const char dash_filter_js[] =
	"(function () {\n"
	"  'use strict';\n"
	"  var sorted = false;\n"
	"  var keys = { task: ['task', 0, 0], state: ['state', 0, 0], holder: ['holder', 0, 0],\n"
	"    rejects: ['rejects', 1, 1], deadline: ['due', 1, 0], last: ['last', 1, 1] };\n"
	"  function params() {\n"
	"    var p = new URLSearchParams(location.search);\n"
	"    new URLSearchParams(location.hash.slice(1)).forEach(function (v, k) { p.set(k, v); });\n"
	"    return p;\n"
	"  }\n"
	"  function val(r, k) {\n"
	"    var v = r.getAttribute('data-' + k[0]) || '';\n"
	"    return k[1] ? (v === '' ? Infinity : Number(v)) : v;\n"
	"  }\n"
	"  function apply() {\n"
	"    var t = document.querySelector('table.filtered');\n"
	"    if (!t) return;\n"
	"    var rows = Array.prototype.slice.call(t.querySelectorAll('tr.task')), p = params(),\n"
	"      q = (p.get('q') || '').toLowerCase(), h = p.get('holder') || p.get('agent') || '',\n"
	"      st = p.get('state') || '', od = p.get('overdue') === '1', es = p.get('escalated') === '1',\n"
	"      now = Number(t.getAttribute('data-now')) || Date.now(), sort = p.get('sort'),\n"
	"      k = Object.prototype.hasOwnProperty.call(keys, sort) ? keys[sort] : null,\n"
	"      desc = p.get('desc') === '1', n = 0, out = document.getElementById('shown');\n"
	"    rows.forEach(function (r, i) { if (r.ampIndex === undefined) r.ampIndex = i; });\n"
	"    rows.sort(function (a, b) {\n"
	"      var x = k ? val(a, k) : 0, y = k ? val(b, k) : 0, c = x < y ? -1 : x > y ? 1 : 0;\n"
	"      if (k && k[2]) c = -c;\n"
	"      if (desc) c = -c;\n"
	"      return c || a.ampIndex - b.ampIndex;\n"
	"    });\n"
	"    rows.forEach(function (r) {\n"
	"      var due = r.getAttribute('data-due') || '', ok =\n"
	"        (!q || r.textContent.toLowerCase().indexOf(q) >= 0) &&\n"
	"        (!h || (r.getAttribute('data-holders') || '').split(' ').indexOf(h) >= 0) &&\n"
	"        (!st || r.getAttribute('data-state') === st) &&\n"
	"        (!od || (due !== '' && Number(due) < now)) &&\n"
	"        (!es || r.getAttribute('data-escalated') === '1');\n"
	"      r.hidden = !ok;\n"
	"      n += ok ? 1 : 0;\n"
	"      if (k || sorted) r.parentNode.appendChild(r);\n"
	"    });\n"
	"    sorted = !!k;\n"
	"    t.querySelectorAll('th a[data-sort]').forEach(function (a) {\n"
	"      var s = a.getAttribute('data-sort'), np = new URLSearchParams(p);\n"
	"      np.set('sort', s);\n"
	"      if (s === sort && !desc) np.set('desc', '1'); else np.delete('desc');\n"
	"      a.setAttribute('href', '#' + np.toString());\n"
	"      if (s === sort) a.parentNode.setAttribute('aria-sort', desc ? 'descending' : 'ascending');\n"
	"      else a.parentNode.removeAttribute('aria-sort');\n"
	"    });\n"
	"    if (out) out.textContent = n + ' of ' + rows.length + ' task(s) shown';\n"
	"  }\n"
	"  apply();\n"
	"  window.addEventListener('hashchange', apply);\n"
	"  new MutationObserver(apply).observe(document.documentElement,\n"
	"    { attributes: true, attributeFilter: ['data-amp-refreshed'] });\n"
	"})();\n";

const char *dash_filter_hash(void)
{
	/* "sha256-" and the base64 of 32 bytes (44 characters) */
	static char hash[8 + BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;

	if (hash[0])
		return hash;
	sha256_init(&c);
	sha256_update(&c, sizeof(dash_filter_js) - 1, (const uint8_t *)dash_filter_js);
	sha256_digest(&c, sizeof(digest), digest);
	memcpy(hash, "sha256-", 7);
	base64_encode_raw((char *)hash + 7, sizeof(digest), digest);
	hash[7 + BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE)] = 0;
	return hash;
}

void dash_put_filter_script(FILE *f)
{
	fputs("<p class=\"meta\" id=\"shown\" aria-live=\"polite\"></p>\n<script>", f);
	fputs(dash_filter_js, f);
	fputs("</script>\n", f);
}
