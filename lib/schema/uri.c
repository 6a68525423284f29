/*
 * uri.c - URIs (RFC 3986): resolving a reference against a base, the
 * fragment, percent-decoding; what "$id" and "$ref" need.
 */
#include "schema_int.h"

#include <stdlib.h>
#include <string.h>

/* --- URIs (RFC 3986) --------------------------------------------------- */

struct uri {
	const char *scheme, *auth, *path, *query, *frag;
	size_t scheme_len, auth_len, path_len, query_len, frag_len;
	int has_scheme, has_auth, has_query, has_frag;
};

static void uri_split(const char *s, struct uri *u)
{
	const char *p = s;

	memset(u, 0, sizeof(*u));
	if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
		p++;
		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
		       *p == '.')
			p++;
		if (*p == ':') {
			u->has_scheme = 1;
			u->scheme = s;
			u->scheme_len = (size_t)(p - s);
			s = p + 1;
		}
	}
	if (s[0] == '/' && s[1] == '/') {
		u->has_auth = 1;
		u->auth = s + 2;
		u->auth_len = strcspn(u->auth, "/?#");
		s = u->auth + u->auth_len;
	}
	u->path = s;
	u->path_len = strcspn(s, "?#");
	s += u->path_len;
	if (*s == '?') {
		u->has_query = 1;
		u->query = s + 1;
		u->query_len = strcspn(u->query, "#");
		s = u->query + u->query_len;
	}
	if (*s == '#') {
		u->has_frag = 1;
		u->frag = s + 1;
		u->frag_len = strlen(u->frag);
	}
}

/* RFC 3986 §5.2.4, appending the result to out. */
static void remove_dots(struct buf *out, const char *in, size_t n)
{
	struct buf b = { 0 };
	const char *end = in + n;
	size_t seg;

	schema_buf_add(&b, "", 0);
	while (in < end) {
		size_t left = (size_t)(end - in);

		if (left >= 3 && !strncmp(in, "../", 3)) {
			in += 3;
		} else if (left >= 2 && !strncmp(in, "./", 2)) {
			in += 2;
		} else if ((left >= 3 && !strncmp(in, "/./", 3)) ||
			   (left == 2 && !strncmp(in, "/.", 2))) {
			in += 2;
			if (left == 2) {
				schema_buf_putc(&b, '/');
				break;
			}
		} else if ((left >= 4 && !strncmp(in, "/../", 4)) ||
			   (left == 3 && !strncmp(in, "/..", 3))) {
			in += 3;
			while (b.len > 0 && b.p[b.len - 1] != '/')
				b.len--;
			if (b.len > 0)
				b.len--;
			if (b.p)
				b.p[b.len] = '\0';
			if (left == 3) {
				schema_buf_putc(&b, '/');
				break;
			}
		} else if ((left == 1 && in[0] == '.') ||
			   (left == 2 && !strncmp(in, "..", 2))) {
			break;
		} else {
			seg = 1;
			while (seg < left && in[seg] != '/')
				seg++;
			if (in[0] != '/') {
				/* the first segment has no leading slash */
				seg = 0;
				while (seg < left && in[seg] != '/')
					seg++;
			}
			schema_buf_add(&b, in, seg);
			in += seg;
		}
	}
	if (b.oom)
		out->oom = 1;
	else
		schema_buf_add(out, b.p, b.len);
	free(b.p);
}

/* The absolute form of `ref` against `base` (RFC 3986 §5.2.2); the caller
 * frees it.  A NULL or empty base leaves `ref` as it is. */
char *schema_uri_resolve(const char *base, const char *ref)
{
	struct uri b, r;
	struct buf out = { 0 };
	const char *slash;

	if (!base || !*base)
		return strdup(ref);
	uri_split(base, &b);
	uri_split(ref, &r);
	if (r.has_scheme) {
		schema_buf_add(&out, r.scheme, r.scheme_len);
		schema_buf_putc(&out, ':');
	} else if (b.has_scheme) {
		schema_buf_add(&out, b.scheme, b.scheme_len);
		schema_buf_putc(&out, ':');
	}
	if (r.has_scheme || r.has_auth) {
		if (r.has_auth) {
			schema_buf_puts(&out, "//");
			schema_buf_add(&out, r.auth, r.auth_len);
		}
		remove_dots(&out, r.path, r.path_len);
		if (r.has_query) {
			schema_buf_putc(&out, '?');
			schema_buf_add(&out, r.query, r.query_len);
		}
	} else {
		if (b.has_auth) {
			schema_buf_puts(&out, "//");
			schema_buf_add(&out, b.auth, b.auth_len);
		}
		if (r.path_len == 0) {
			schema_buf_add(&out, b.path, b.path_len);
			if (r.has_query || b.has_query)
				schema_buf_putc(&out, '?');
			if (r.has_query)
				schema_buf_add(&out, r.query, r.query_len);
			else if (b.has_query)
				schema_buf_add(&out, b.query, b.query_len);
		} else {
			if (r.path[0] == '/') {
				remove_dots(&out, r.path, r.path_len);
			} else {
				struct buf merged = { 0 };

				if (b.has_auth && b.path_len == 0) {
					schema_buf_putc(&merged, '/');
				} else {
					slash = NULL;
					for (size_t i = 0; i < b.path_len; i++)
						if (b.path[i] == '/')
							slash = b.path + i;
					if (slash)
						schema_buf_add(&merged, b.path,
							(size_t)(slash - b.path) + 1);
				}
				schema_buf_add(&merged, r.path, r.path_len);
				if (merged.oom)
					out.oom = 1;
				else
					remove_dots(&out, merged.p, merged.len);
				free(merged.p);
			}
			if (r.has_query) {
				schema_buf_putc(&out, '?');
				schema_buf_add(&out, r.query, r.query_len);
			}
		}
	}
	if (r.has_frag) {
		schema_buf_putc(&out, '#');
		schema_buf_add(&out, r.frag, r.frag_len);
	}
	return schema_buf_detach(&out);
}

/* Cuts the fragment off an absolute URI in place. */
void schema_strip_fragment(char *uri)
{
	char *hash = strchr(uri, '#');

	if (hash)
		*hash = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s in place (a fragment is a URI component, so
 * "#/percent%25field" names the member "percent%field"). */
void schema_percent_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*w++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
			s += 2;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}
