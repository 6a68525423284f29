/*
 * dashboard_serve.c - `amp dashboard --serve`: a small, read-only HTTP
 * server for the dashboard's pages (dashboard.h), on libmicrohttpd.
 *
 * One thread, one event loop (libmicrohttpd's epoll mode, run from here):
 * every connection is read and written as its bytes come, so a slow or
 * idle client holds no other.  Each connection has one deadline from its
 * accept to its last byte, whatever it sends meanwhile: a client that
 * trickles a byte at a time is cut off at the deadline, not kept while it
 * keeps trickling (libmicrohttpd's own timeout restarts at every read).
 * The handlers, which bring the site up to date, run one at a time in the
 * loop: amp_store is not shared across threads.
 *
 * libmicrohttpd is loaded with dlopen when a server starts, not linked:
 * linked, its TLS dependencies (12 shared libraries) would load at the
 * start of every amp command, ~4.7 ms each on this project's machine, for
 * the one command that serves.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "dashboard_int.h"
#include "base/util.h"

#define REQUEST_MAX 8192
/* Connections open at once; past it a new one is closed at its accept. */
#define CONN_MAX 256
/* Memory of one connection: libmicrohttpd reads no more of a request head
 * past it (the deadline then closes the connection); a head under it and
 * over REQUEST_MAX is refused here (400). */
#define POOL_BYTES (64 * 1024)
/* Idle wait of the loop: how soon a signal or a deadline is seen. */
#define TICK_MS 100
#define MHD_SONAME "libmicrohttpd.so.12"

/* The libmicrohttpd functions amp calls, resolved by dlopen. */
static struct mhd_api {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_run) *run;
	__typeof__(MHD_get_daemon_info) *get_daemon_info;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
} mhd;

/* One open connection: its socket, the monotonic time it must end by, and
 * the length of its request's target up to its first NUL byte. */
struct conn {
	int used, cut, fd;
	int64_t end_ms;
	size_t target_len;
};

struct server {
	amp_store *st;
	const char *dir;
	int64_t deadline_ms;
	struct conn conns[CONN_MAX];
};

/* Resolves `mhd` once; AMP_EIO when the library or a function is missing. */
static int load_mhd(amp_error *err)
{
	void *h;

	if (mhd.start_daemon)
		return AMP_OK;
	if (!(h = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL)))
		return amp_error_set(err, AMP_EIO, "", "cannot load %s (Debian: libmicrohttpd12): %s",
				     MHD_SONAME, dlerror());
	/* POSIX's way to store dlsym's answer in a function pointer. */
#define LOAD(f)                                                                            \
	if (!(*(void **)&mhd.f = dlsym(h, "MHD_" #f)))                                     \
		return amp_error_set(err, AMP_EIO, "", "%s has no MHD_%s", MHD_SONAME, #f)
	LOAD(stop_daemon);
	LOAD(run);
	LOAD(get_daemon_info);
	LOAD(get_connection_info);
	LOAD(create_response_from_buffer);
	LOAD(add_response_header);
	LOAD(queue_response);
	LOAD(destroy_response);
	LOAD(lookup_connection_value);
	LOAD(start_daemon); /* last: it marks the table complete */
#undef LOAD
	return AMP_OK;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
/* 1 when `path` (after the leading "/") names a file the site may hold:
 * [A-Za-z0-9._/-], no empty, "." or ".." component, no dot file. */
static int safe_path(const char *path)
{
	const char *p;

	if (!*path)
		return 1;
	for (p = path; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-' || *p == '/'))
			return 0;
	for (p = path; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
		if (*p == '/' || *p == '.' || !*p)
			return 0;
	return 1;
}

static const char *content_type(const char *path)
{
	size_t n = strlen(path);

	if (n > 5 && !strcmp(path + n - 5, ".html"))
		return "text/html; charset=utf-8";
	if (n > 4 && !strcmp(path + n - 4, ".png"))
		return "image/png";
	if (n > 4 && !strcmp(path + n - 4, ".svg"))
		return "image/svg+xml";
	if (n > 3 && !strcmp(path + n - 3, ".js"))
		return "text/javascript; charset=utf-8";
	return "application/octet-stream";
}

/* Queues the answer: `body` (len bytes) is copied, or taken and freed
 * when `take`; the headers every answer carries, plus extra (a name and a
 * value) when given.  libmicrohttpd leaves the body out for HEAD. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     const char *extra, const char *extra_value, char *body, size_t len, int take)
{
	struct MHD_Response *r;
	enum MHD_Result ok;

	r = mhd.create_response_from_buffer(len, body, take ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (!r) {
		if (take)
			free(body);
		return MHD_NO;
	}
	ok = mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) &&
	     mhd.add_response_header(r, "X-Content-Type-Options", "nosniff") &&
	     mhd.add_response_header(r, "Content-Security-Policy", dash_live_csp()) &&
	     mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") &&
	     /* one request per connection, as before: no client keeps one open */
	     mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close") &&
	     (!extra || mhd.add_response_header(r, extra, extra_value)) ?
		     mhd.queue_response(c, code, r) :
		     MHD_NO;
	mhd.destroy_response(r);
	return ok;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned int code, const char *reason,
				   const char *extra, const char *extra_value)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%u %s\n", code, reason);

	return reply(c, code, "text/plain; charset=utf-8", extra, extra_value, body, (size_t)n, 0);
}

/* Called by libmicrohttpd with the request's target as it came, before it
 * cuts the query off: keeps its length up to the first NUL byte for
 * target_ok. */
static void *on_target(void *cls, const char *target, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = info ? info->socket_context : NULL;

	(void)cls;
	if (k)
		k->target_len = strlen(target);
	return NULL;
}

/* 1 when the target had no NUL byte.  libmicrohttpd lays the request line
 * out in place, a NUL where each space was: the target then ends right
 * before the version, unless a NUL byte of the client's ended it first
 * (which C strings, safe_path among them, would take for its end). */
static int target_ok(struct MHD_Connection *c, const char *url, const char *version)
{
	const union MHD_ConnectionInfo *info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct conn *k = info ? info->socket_context : NULL;

	return k && url + k->target_len + 1 == version;
}

/* The URL as it came: a %XX stays as it is, and so is refused by
 * safe_path, as the site has no name that needs one. */
static size_t unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* A query parameter of the request, for dash_serve_query. */
static const char *query_arg(void *ctx, const char *name)
{
	return mhd.lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

/* The ids of the messages ref and the errors ref: what live.js polls to
 * learn that the SSOT moved, without a pass. */
static enum MHD_Result reply_tip(struct server *sv, struct MHD_Connection *c)
{
	char body[2 * GIT_OID_HEXSZ + 4];
	git_oid a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	git_reference_name_to_id(&a, amp_store_repo(sv->st), amp_store_messages_ref(sv->st));
	git_reference_name_to_id(&b, amp_store_repo(sv->st), amp_store_errors_ref(sv->st));
	git_error_clear();
	git_oid_tostr(body, GIT_OID_HEXSZ + 1, &a);
	body[GIT_OID_HEXSZ] = ' ';
	git_oid_tostr(body + GIT_OID_HEXSZ + 1, GIT_OID_HEXSZ + 1, &b);
	return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", NULL, NULL, body, strlen(body), 0);
}

/* A file of the site (taken, freed here): an HTML page with live.js. */
static enum MHD_Result reply_page(struct MHD_Connection *c, const char *path, char *body, size_t blen)
{
	char *live = NULL;
	size_t llen = 0;

	if (strcmp(content_type(path), "text/html; charset=utf-8"))
		return reply(c, MHD_HTTP_OK, content_type(path), NULL, NULL, body, blen, 1);
	if (dash_live_page(body, blen, &live, &llen) < 0) {
		free(body);
		free(live);
		return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "Internal Server Error", NULL, NULL);
	}
	free(body);
	return reply(c, MHD_HTTP_OK, content_type(path), NULL, NULL, live, llen, 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct server *sv = cls;
	char file[PATH_MAX], *body = NULL;
	const char *path;
	const union MHD_ConnectionInfo *size;
	size_t blen = 0;
	int64_t now;
	amp_error err;
	struct stat sb;

	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	size = mhd.get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	/* libmicrohttpd takes a version it does not know for HTTP/0.9 */
	if (!size || size->header_size > REQUEST_MAX || strncmp(version, "HTTP/1.", 7) || url[0] != '/' ||
	    !target_ok(c, url, version))
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "Bad Request", NULL, NULL);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed", "Allow", "GET, HEAD");
	path = url + 1;
	if (!safe_path(path))
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "Bad Request", NULL, NULL);
	if (!*path)
		path = "index.html";
	if (!strcmp(path, "live.js"))
		return reply(c, MHD_HTTP_OK, content_type(path), NULL, NULL, (char *)dash_live_js,
			     dash_live_js_len, 0);
	if (!strcmp(path, "amp-tip"))
		return reply_tip(sv, c);
	/* The pages as of now: a pass costs what changed since the last. */
	if (amp_clock_now_ms(&now, &err) < 0 || amp_dashboard_write(sv->st, sv->dir, now, NULL, &err) < 0)
		return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "Internal Server Error", NULL, NULL);
	if (!strcmp(path, "tasks.html")) {
		if (dash_serve_query(sv->st, sv->dir, query_arg, c, now, &body, &blen) < 0) {
			free(body);
			return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "Internal Server Error", NULL, NULL);
		}
	} else if ((size_t)snprintf(file, sizeof(file), "%s/%s", sv->dir, path) >= sizeof(file) ||
		   stat(file, &sb) < 0 || !S_ISREG(sb.st_mode) || amp_read_file(file, &body, &blen, &err) < 0) {
		return reply_error(c, MHD_HTTP_NOT_FOUND, "Not Found", NULL, NULL);
	}
	return reply_page(c, path, body, blen);
}

/* Keeps the table of open connections and their deadlines. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct server *sv = cls;
	const union MHD_ConnectionInfo *info;
	struct conn *k = *socket_context;
	size_t i;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (k)
			k->used = 0;
		return;
	}
	if (!(info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)))
		return;
	for (i = 0; i < CONN_MAX && sv->conns[i].used; i++)
		;
	if (i == CONN_MAX) {
		/* no room to keep its deadline: it gets none of the server */
		shutdown(info->connect_fd, SHUT_RDWR);
		return;
	}
	k = &sv->conns[i];
	k->used = 1;
	k->cut = 0;
	k->fd = info->connect_fd;
	k->end_ms = mono_ms() + sv->deadline_ms;
	*socket_context = k;
}

/* Ends the connections past their deadline.  shutdown(), not close(): the
 * socket stays libmicrohttpd's, which sees it end on its next run and
 * closes it (and calls on_connection) itself. */
static void cut_late(struct server *sv)
{
	int64_t now = mono_ms();
	size_t i;

	for (i = 0; i < CONN_MAX; i++)
		if (sv->conns[i].used && !sv->conns[i].cut && now >= sv->conns[i].end_ms) {
			shutdown(sv->conns[i].fd, SHUT_RDWR);
			sv->conns[i].cut = 1;
		}
}

int amp_dashboard_serve(amp_store *st, const char *dir, const char *bind_addr, int port,
			int deadline_sec, volatile sig_atomic_t *stop, amp_dashboard_ready_fn ready,
			void *ctx, amp_error *err)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char portstr[16], host[NI_MAXHOST], url[NI_MAXHOST + 32];
	int fd = -1, one = 1, status = AMP_OK, rc;
	struct server *sv = NULL;
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if ((rc = getaddrinfo(bind_addr, portstr, &hints, &ai)) != 0)
		return amp_error_set(err, AMP_EUSAGE, "", "--bind: '%s' is not a numeric IP address",
				     amp_term(bind_addr));
	if ((status = load_mhd(err)) < 0)
		goto cleanup;
	if (!(sv = calloc(1, sizeof(*sv)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	sv->st = st;
	sv->dir = dir;
	sv->deadline_ms = (int64_t)deadline_sec * 1000;
	if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot listen on %s port %d: %s",
				       amp_term(bind_addr), port, strerror(errno));
		goto cleanup;
	}
	if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), portstr, sizeof(portstr),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot read the listening address");
		goto cleanup;
	}
	/* Epoll without a thread of its own: MHD_run below is the loop. */
	d = mhd.start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, on_request, sv,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONN_MAX,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)deadline_sec,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv,
			     MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
			     MHD_OPTION_URI_LOG_CALLBACK, on_target, NULL,
			     MHD_OPTION_STRICT_FOR_CLIENT, 1,
			     MHD_OPTION_END);
	if (!d || !(info = mhd.get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD))) {
		status = amp_error_set(err, AMP_EIO, "", "cannot start the HTTP server on %s port %d",
				       amp_term(bind_addr), port);
		goto cleanup;
	}
	snprintf(url, sizeof(url), strchr(host, ':') ? "http://[%s]:%s/" : "http://%s:%s/", host, portstr);
	if (ready)
		ready(url, ctx);
	while (!*stop) {
		struct pollfd pfd = { info->epoll_fd, POLLIN, 0 };

		/* Short waits, so that a signal or a deadline is seen promptly. */
		poll(&pfd, 1, TICK_MS);
		mhd.run(d);
		cut_late(sv);
	}
cleanup:
	if (d)
		mhd.stop_daemon(d); /* closes the listening socket too */
	else if (fd >= 0)
		close(fd);
	free(sv);
	freeaddrinfo(ai);
	return status;
}
