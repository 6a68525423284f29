/*
 * dashboard_serve.c - `amp dashboard --serve`: a small, read-only
 * HTTP/1.0 server for the dashboard's pages (dashboard.h).  One request per
 * connection, served in turn: it is for one admin's browser, not a crowd.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"
#include "dashboard.h"
#include "util.h"

#define REQUEST_MAX 8192
/* A client gets this long to send its request. */
#define REQUEST_TIMEOUT_SEC 5

static void respond(int fd, int code, const char *reason, const char *type, const char *extra,
		    const char *body, size_t len, int head)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "X-Content-Type-Options: nosniff\r\n"
			 "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src 'self'\r\n"
			 "%sConnection: close\r\n\r\n", code, reason, type, len, extra ? extra : "");
	size_t off = 0;
	ssize_t w;

	if (n > 0 && (size_t)n < sizeof(hdr)) {
		while (off < (size_t)n && (w = write(fd, hdr + off, (size_t)n - off)) > 0)
			off += (size_t)w;
	}
	for (off = 0; !head && off < len && (w = write(fd, body + off, len - off)) > 0;)
		off += (size_t)w;
}

static void respond_error(int fd, int code, const char *reason, const char *extra, int head)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%d %s\n", code, reason);

	respond(fd, code, reason, "text/plain; charset=utf-8", extra, body, (size_t)n, head);
}

/* Reads the request head (up to the blank line); 0, or -1 when it is
 * larger than REQUEST_MAX, -2 when the client went away or was too slow. */
static int read_request(int fd, char *buf, size_t *len)
{
	ssize_t r;

	*len = 0;
	for (;;) {
		if (*len == REQUEST_MAX)
			return -1;
		r = read(fd, buf + *len, REQUEST_MAX - *len);
		if (r <= 0)
			return -2;
		*len += (size_t)r;
		buf[*len] = 0;
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return 0;
	}
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
	return "application/octet-stream";
}

static void serve_one(amp_store *st, const char *dir, int fd)
{
	char req[REQUEST_MAX + 1], method[16], target[REQUEST_MAX + 1], version[16], file[PATH_MAX];
	const char *path;
	char *body = NULL, *q;
	size_t len = 0, blen = 0;
	int head, r;
	int64_t now;
	amp_error err;
	struct stat sb;

	if ((r = read_request(fd, req, &len)) == -1) {
		respond_error(fd, 400, "Bad Request", NULL, 0);
		return;
	}
	if (r < 0)
		return;
	if (sscanf(req, "%15[A-Z] %8192[^ \r\n] %15[^\r\n]", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) || target[0] != '/') {
		respond_error(fd, 400, "Bad Request", NULL, 0);
		return;
	}
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		respond_error(fd, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", 0);
		return;
	}
	if ((q = strchr(target, '?')))
		*q = 0;
	path = target + 1;
	if (!safe_path(path)) {
		respond_error(fd, 400, "Bad Request", NULL, head);
		return;
	}
	if (!*path)
		path = "index.html";
	/* The pages as of now: a pass costs what changed since the last. */
	if (amp_clock_now_ms(&now, &err) < 0 || amp_dashboard_write(st, dir, now, NULL, &err) < 0) {
		respond_error(fd, 500, "Internal Server Error", NULL, head);
		return;
	}
	if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, path) >= sizeof(file) ||
	    stat(file, &sb) < 0 || !S_ISREG(sb.st_mode) || amp_read_file(file, &body, &blen, &err) < 0) {
		respond_error(fd, 404, "Not Found", NULL, head);
		return;
	}
	respond(fd, 200, "OK", content_type(path), NULL, body, blen, head);
	free(body);
}

int amp_dashboard_serve(amp_store *st, const char *dir, const char *bind_addr, int port,
			volatile sig_atomic_t *stop, amp_dashboard_ready_fn ready, void *ctx,
			amp_error *err)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char portstr[16], host[NI_MAXHOST], url[NI_MAXHOST + 32];
	int fd = -1, one = 1, status = AMP_OK, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if ((rc = getaddrinfo(bind_addr, portstr, &hints, &ai)) != 0)
		return amp_error_set(err, AMP_EUSAGE, "", "--bind: '%s' is not a numeric IP address",
				     amp_term(bind_addr));
	if ((fd = socket(ai->ai_family, SOCK_STREAM, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0 ||
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
	snprintf(url, sizeof(url), strchr(host, ':') ? "http://[%s]:%s/" : "http://%s:%s/", host, portstr);
	if (ready)
		ready(url, ctx);
	while (!*stop) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		struct timeval tv = { REQUEST_TIMEOUT_SEC, 0 };
		int c;

		/* Short waits, so that a signal ends the loop promptly. */
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if ((c = accept(fd, NULL, NULL)) < 0)
			continue;
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve_one(st, dir, c);
		close(c);
	}
cleanup:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return status;
}
