/* Names close to a mistyped one (base/similar.h). */
#include "similar.h"

#include <string.h>

#define LONGEST 256

size_t amp_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	/* three rows of the matrix: i-2, i-1, i */
	size_t rows[3][LONGEST + 1], *prev2, *prev, *cur, cost, v;

	if (la > LONGEST || lb > LONGEST)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		rows[1][j] = j;
	prev2 = rows[0];
	prev = rows[1];
	cur = rows[2];
	for (i = 1; i <= la; i++) {
		size_t *t;

		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			cost = a[i - 1] != b[j - 1];
			v = prev[j - 1] + cost;
			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

size_t amp_similar(const char *word, const char *const *candidates, size_t n,
		   size_t *best, size_t cap)
{
	size_t len = strlen(word), limit, least = (size_t)-1, found = 0, i, d;

	limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	for (i = 0; i < n; i++) {
		if (!candidates[i])
			continue;
		d = amp_edit_distance(word, candidates[i]);
		if (len >= 3 && !strncmp(candidates[i], word, len) && d > 1)
			d = 1;
		if (d == 0 || d > limit || d > least)
			continue;
		if (d < least) {
			least = d;
			found = 0;
		}
		if (found < cap)
			best[found++] = i;
	}
	return found;
}
