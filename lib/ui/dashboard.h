/*
 * dashboard.h - the admin's dashboard: the SSOT as a static web site
 * (plain HTML and CSS, no JavaScript), regenerated incrementally, and a
 * small read-only HTTP/1.0 server for it, which adds filters as query
 * parameters and live refresh (dashboard_live.c).  The files of each
 * page kind: dashboard_int.h.
 *
 * Layout of the output directory DIR:
 *
 *   index.html              the overview: a header of what the admin wants
 *                           (open tasks, overdue ACKs, open escalations,
 *                           agents active in the hour), the tasks needing
 *                           the admin first (50 at most) as cards with the
 *                           command to run, the 100 most recently active
 *                           tasks, messages per hour and open escalations,
 *                           the age of the open tasks, a link to each
 *                           group page
 *   needs.html              every task needing the admin; overdue.html,
 *                           escalated.html, approval.html: one filter each
 *   tasks.html              --serve's filtered listing (as a file: links)
 *   agents.html             every named agent instance
 *   favicon.svg             the site's icon
 *   groups/<YYYY>-<S>.html  one page per shard of the task tree
 *                           (tasks/<YYYY>/<S>/, at most 100 tasks): the
 *                           row of each of its tasks
 *   tasks/<page>.html       one page per task: its conversation
 *   errors.html             the error log (refs/amp/errors), newest first
 *   .amp-dashboard.json     what the pages were built from (below)
 *   .amp-dashboard/         the same, per shard
 *
 * Every string that comes from a record is untrusted: it goes through
 * amp_html_put, which leaves no markup and shows control characters.
 *
 * The state follows the store's layout (store.h).  .amp-dashboard/
 * <shard>.json keeps the shard's tree id and each of its tasks' tree id and
 * row (what a group page, the overview and the aggregate need of it);
 * .amp-dashboard.json the tip, each shard's tree id, task count and newest
 * record, and the aggregate the overview is drawn from (the rows that may
 * need the admin, the 100 latest rows, messages and open escalations per
 * hour over the chart's 48 hours), updated from the shards that changed:
 * their old rows out, their new rows in.  Trees are content-addressed: a
 * shard whose tree id did not change is not read at all, and in a shard
 * that changed only the tasks whose tree id changed get their page
 * rewritten.  So one new message costs one task page, one group page and
 * the overview (and needs.html when what needs the admin changed); what
 * still grows with the history is one line per shard (100 tasks) in the
 * state and in the overview's list of groups.  Pages do not depend on the
 * time (deadlines are shown as dates) but for the overview (times in words,
 * the time it was generated) and the filter pages (overdue ACKs), rebuilt
 * on every pass; a page is written only when its bytes changed.  When the aggregate cannot
 * follow (a rewritten history: the newest hour went back, a recent task
 * left with nothing to replace it; a shard's state not the one it was made
 * from) it is made anew from every shard's state.  The state is keyed by
 * the store's policy and the page format: a mismatch, or a missing or
 * corrupt state file, rebuilds everything; so does deleting DIR.  A pass
 * makes no system call per unchanged shard: a task or group page deleted
 * by hand comes back when its shard changes, or with the state file
 * removed.
 */
#ifndef AMP_DASHBOARD_H
#define AMP_DASHBOARD_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "store/store.h"

/*
 * Writes s (NUL-terminated) to out as HTML text that is also safe inside a
 * quoted attribute value: & < > " ' become entities; a C0 control or DEL
 * is shown as its Unicode control picture (U+2400..U+241F, U+2421), a C1
 * control, a bidirectional override or isolate as the text "\u00XX"/
 * "\u202e", a byte that is not UTF-8 as "\xNN".  With `keep_newlines`, a
 * newline stays a newline (for <pre> blocks of amp's own JSON dumps).
 * NULL writes nothing.
 */
void amp_html_put(FILE *out, const char *s, int keep_newlines);

/* The file name (under tasks/) of the page of task_id, into buf: "<id>.html"
 * for a task id (amp_task_id_valid), else "x-<hex of its first bytes>-
 * <hash>.html", so that no name found in a tree can leave the directory
 * or collide with a real task's page. */
#define AMP_DASHBOARD_NAME_MAX 96
void amp_dashboard_page_name(const char *task_id, char buf[AMP_DASHBOARD_NAME_MAX]);

/*
 * Brings the site in `dir` (created when missing) up to date with the SSOT
 * of st at `now_ms`, rewriting only what changed; every file is written to
 * a temporary name and renamed.  *report (may be NULL; the caller owns it)
 * gets {"dir": DIR, "tip": commit id of the messages ref, "tasks": number
 * of tasks, "written": [paths under DIR, in the order written],
 * "unchanged": task pages kept as they were}.  Returns AMP_OK, or AMP_EIO
 * (the SSOT or DIR cannot be read or written) with err filled.
 */
int amp_dashboard_write(amp_store *st, const char *dir, int64_t now_ms, json_t **report,
			amp_error *err);

/* Called once the server listens, with its URL ("http://127.0.0.1:8080/"). */
typedef void (*amp_dashboard_ready_fn)(const char *url, void *ctx);

/*
 * Serves the site of `dir` over HTTP on bind_addr:port (a numeric IPv4 or
 * IPv6 address; port 0 picks a free one) until *stop is set, with
 * libmicrohttpd (loaded when called): GET and HEAD only (405 otherwise),
 * one request of at most 8 KiB per connection (400 beyond, or when
 * malformed), paths of [A-Za-z0-9._/-] without "..", a leading dot or "//"
 * in them (400), 404 for what is not there.  Connections are served side
 * by side, up to 256 at once; each is closed deadline_sec seconds after
 * its accept, whatever it has sent.  Each request for a page first brings
 * the site up to date (amp_dashboard_write) at the current clock.  Returns
 * AMP_OK when stopped, AMP_EUSAGE when the address is not one, AMP_EIO
 * when it cannot listen or libmicrohttpd cannot be loaded.
 */
int amp_dashboard_serve(amp_store *st, const char *dir, const char *bind_addr, int port,
			int deadline_sec, volatile sig_atomic_t *stop, amp_dashboard_ready_fn ready,
			void *ctx, amp_error *err);

#endif
