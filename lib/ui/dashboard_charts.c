/*
 * dashboard_charts.c - the overview's charts (dashboard.h): messages per
 * hour with the open critical escalations over a window that fits the
 * data, and the age of the open tasks.  Plain SVG, no script.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "dashboard_int.h"

#define ival dash_ival
/* The activity chart shows at least this many hours. */
#define MIN_HOURS 6

/* Messages per hour (bars) and open critical escalations (a step line)
 * from the aggregate, over the `hours` hours up to the newest (a window
 * the admin chose, at most CHART_HOURS), or with 0 over the hours from the
 * first that has a message or an escalation open (of the CHART_HOURS the
 * aggregate keeps) to the newest: a history of one hour is not drawn as
 * one bar at the edge of two empty days. */
void dash_activity_svg(FILE *f, const json_t *agg, int hours)
{
	long long counts[CHART_HOURS] = { 0 }, open[CHART_HOURS] = { 0 }, maxc = 1, maxo = 0,
		  h1 = ival(agg, "h1"), run = ival(agg, "open_base");
	int k, from = CHART_HOURS - MIN_HOURS, n;
	double bw;
	char a[AMP_TIME_BUFSZ], b[AMP_TIME_BUFSZ], key[24];

	if (h1 < 0) {
		fputs("<p>No message yet.</p>\n", f);
		return;
	}
	for (k = 0; k < CHART_HOURS; k++) {
		snprintf(key, sizeof(key), "%lld", h1 - CHART_HOURS + 1 + k);
		counts[k] = ival(json_object_get(agg, "hours"), key);
		run += ival(json_object_get(agg, "open"), key);
		open[k] = run;
		if ((counts[k] || open[k]) && k < from)
			from = k;
	}
	if (hours > 0)
		from = CHART_HOURS - (hours < CHART_HOURS ? hours : CHART_HOURS);
	for (k = from; k < CHART_HOURS; k++) {
		if (counts[k] > maxc)
			maxc = counts[k];
		if (open[k] > maxo)
			maxo = open[k];
	}
	n = CHART_HOURS - from;
	bw = 720.0 / n;
	fprintf(f, "<svg viewBox=\"0 0 800 200\" role=\"img\" aria-label=\"messages per hour over the "
		"last %d hour(s)%s, and open escalations\">\n", n, hours > 0 ? "" : " of activity");
	for (k = from; k < CHART_HOURS; k++)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#5b8fd6\">"
			"<title>%lld message(s), %lld open escalation(s)</title></rect>\n",
			40 + (k - from) * bw, 170 - 150.0 * (double)counts[k] / (double)maxc, bw * 0.85,
			150.0 * (double)counts[k] / (double)maxc, counts[k], open[k]);
	fputs("<polyline fill=\"none\" stroke=\"#b00020\" stroke-width=\"2\" points=\"", f);
	for (k = from; k < CHART_HOURS; k++) {
		double y = 170 - 150.0 * (double)open[k] / (double)(maxo ? maxo : 1);

		fprintf(f, "%.1f,%.1f %.1f,%.1f ", 40 + (k - from) * bw, y, 40 + (k - from + 1) * bw, y);
	}
	fprintf(f, "\"/>\n<text x=\"2\" y=\"24\">%lld</text><text x=\"2\" y=\"170\">0</text>"
		"<text x=\"40\" y=\"192\">%.16s</text><text x=\"760\" y=\"192\" text-anchor=\"end\">%.16s</text>"
		"<text x=\"760\" y=\"14\" text-anchor=\"end\" fill=\"#b00020\">open escalations (max %lld)</text>"
		"\n</svg>\n", maxc, amp_time_format((h1 - n + 1) * HOUR_MS, a),
		amp_time_format((h1 + 1) * HOUR_MS, b), maxo);
}

void dash_age_svg(FILE *f, const json_t *firsts, int64_t now_ms)
{
	static const struct { const char *label; long long upto_h; } buckets[] = {
		{ "under 1h", 1 }, { "1-6h", 6 }, { "6-24h", 24 }, { "1-3d", 72 }, { "3-7d", 168 },
		{ "7d or more", -1 },
	};
	long long count[6] = { 0 }, max = 1;
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)firsts, k, v) {
		long long age_h = (now_ms - strtoll(k, NULL, 10)) / HOUR_MS;

		for (i = 0; i < 5 && age_h >= buckets[i].upto_h; i++)
			;
		count[i] += json_integer_value(v);
	}
	for (i = 0; i < 6; i++)
		if (count[i] > max)
			max = count[i];
	fputs("<svg viewBox=\"0 0 800 170\" role=\"img\" aria-label=\"open tasks by age since their "
	      "first record\">\n", f);
	for (i = 0; i < 6; i++)
		fprintf(f, "<text x=\"4\" y=\"%zu\">%s</text><rect x=\"110\" y=\"%zu\" width=\"%.1f\" "
			"height=\"18\" fill=\"#7b5ea7\"><title>%lld open task(s) %s old</title></rect>"
			"<text x=\"%.1f\" y=\"%zu\">%lld</text>\n", 22 + i * 25, buckets[i].label, 8 + i * 25,
			600.0 * (double)count[i] / (double)max, count[i], buckets[i].label,
			116 + 600.0 * (double)count[i] / (double)max, 22 + i * 25, count[i]);
	fputs("</svg>\n", f);
}
