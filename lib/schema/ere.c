/*
 * ere.c - a Thompson NFA for a plain subset of POSIX EREs (ere.h).
 *
 * The pattern is parsed into a tree, the tree compiled backwards into an
 * array of states (a repeat {m,n} is m copies then n-m optional ones), and
 * a string is matched by running every thread at once, one byte at a time
 * (Thompson; Russ Cox, "Regular Expression Matching Can Be Simple And
 * Fast"): time linear in the string times the states, no backtracking.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ere.h"

#define MAX_NODES 4096
#define MAX_STATES 4096
#define MAX_BOUND 255
#define MAX_DEPTH 64

enum { T_SET, T_BOL, T_EOL, T_CAT, T_ALT, T_REP };
enum { S_SET, S_SPLIT, S_BOL, S_EOL, S_MATCH };

struct node {
	int type;
	int a, b;          /* children (T_CAT, T_ALT), child (T_REP: a) */
	int min, max;      /* T_REP; max -1: no bound */
	int set;           /* T_SET */
};

struct state {
	int op;
	int out, out1;
	int set;
};

struct amp_ere {
	unsigned char (*sets)[32];
	int nsets;
	struct state *st;
	int nst, start;
	/* the matcher's lists, one slot per state */
	int *cur, *next, *stack;
	unsigned *mark;  /* the generation that last reached each state */
	unsigned gen;
};

struct parser {
	const char *p;
	struct node *nodes;
	int n, depth;
	amp_ere *re;
};

static int add_node(struct parser *ps, int type, int a, int b)
{
	struct node *x;

	if (ps->n == MAX_NODES)
		return -1;
	x = &ps->nodes[ps->n];
	memset(x, 0, sizeof(*x));
	x->type = type;
	x->a = a;
	x->b = b;
	return ps->n++;
}

/* A new empty byte set; its index, or -1. */
static int new_set(amp_ere *re)
{
	unsigned char (*grown)[32];

	if (re->nsets % 64 == 0) {
		if (re->nsets >= MAX_NODES ||
		    !(grown = realloc(re->sets, (size_t)(re->nsets + 64) * sizeof(*grown))))
			return -1;
		re->sets = grown;
	}
	memset(re->sets[re->nsets], 0, sizeof(re->sets[0]));
	return re->nsets++;
}

static void set_bit(unsigned char *set, unsigned c)
{
	set[c >> 3] |= (unsigned char)(1u << (c & 7));
}

static int set_node(struct parser *ps, int *set)
{
	int n;

	if ((*set = new_set(ps->re)) < 0 || (n = add_node(ps, T_SET, 0, 0)) < 0)
		return -1;
	ps->nodes[n].set = *set;
	return n;
}

/* The POSIX classes, in the C locale. */
static int in_class(const char *name, size_t len, unsigned c)
{
#define IS(s) (len == sizeof(s) - 1 && !memcmp(name, s, len))
	int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), digit = c >= '0' && c <= '9';

	if (IS("alpha")) return alpha;
	if (IS("digit")) return digit;
	if (IS("alnum")) return alpha || digit;
	if (IS("upper")) return c >= 'A' && c <= 'Z';
	if (IS("lower")) return c >= 'a' && c <= 'z';
	if (IS("space")) return c == ' ' || (c >= '\t' && c <= '\r');
	if (IS("blank")) return c == ' ' || c == '\t';
	if (IS("punct")) return c > ' ' && c < 127 && !alpha && !digit;
	if (IS("print")) return c >= ' ' && c < 127;
	if (IS("graph")) return c > ' ' && c < 127;
	if (IS("cntrl")) return c < ' ' || c == 127;
	if (IS("xdigit")) return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
	return -1;
#undef IS
}

/* [...] after its '['; the T_SET node, or -1. */
static int parse_bracket(struct parser *ps)
{
	const char *p = ps->p;
	unsigned char *set;
	int neg = 0, first = 1, n, idx;
	unsigned c, lo, hi;

	if ((n = set_node(ps, &idx)) < 0)
		return -1;
	set = ps->re->sets[idx];
	if (*p == '^') {
		neg = 1;
		p++;
	}
	for (;; first = 0) {
		c = (unsigned char)*p;
		if (!c || c >= 0x80)
			return -1;
		if (c == ']' && !first)
			break;
		if (c == '[' && (p[1] == '.' || p[1] == '='))
			return -1;
		if (c == '[' && p[1] == ':') {
			const char *name = p + 2, *end = strstr(name, ":]");

			if (!end || in_class(name, (size_t)(end - name), 'a') < 0)
				return -1;
			for (c = 1; c < 0x80; c++)
				if (in_class(name, (size_t)(end - name), c))
					set_bit(set, c);
			p = end + 2;
			continue;
		}
		/* '-' is itself only first or last: "[0-9-x]" is an error
		 * (a range's end starting another) */
		if (c == '-' && !first && p[1] != ']')
			return -1;
		lo = c;
		p++;
		if (*p == '-' && p[1] && p[1] != ']') {
			hi = (unsigned char)p[1];
			if (hi >= 0x80 || hi == '[' || hi < lo)
				return -1;
			p += 2;
		} else {
			hi = lo;
		}
		for (c = lo; c <= hi; c++)
			set_bit(set, c);
	}
	ps->p = p + 1;
	if (neg)
		for (c = 0; c < 32; c++)
			set[c] = (unsigned char)~set[c];
	return n;
}

static int parse_alt(struct parser *ps);

/* One atom: a group, a bracket, '.', an anchor, an escaped or a plain
 * character; -1 for anything else. */
static int parse_atom(struct parser *ps)
{
	unsigned c = (unsigned char)*ps->p;
	int n, idx;

	switch (c) {
	case '(':
		ps->p++;
		if (++ps->depth > MAX_DEPTH || (n = parse_alt(ps)) < 0 || *ps->p != ')')
			return -1;
		ps->depth--;
		ps->p++;
		return n;
	case '[':
		ps->p++;
		return parse_bracket(ps);
	case '^':
		ps->p++;
		return add_node(ps, T_BOL, 0, 0);
	case '$':
		ps->p++;
		return add_node(ps, T_EOL, 0, 0);
	case '.':
		if ((n = set_node(ps, &idx)) < 0)
			return -1;
		memset(ps->re->sets[idx], 0xff, sizeof(ps->re->sets[0]));
		ps->p++;
		return n;
	case '\\':
		c = (unsigned char)ps->p[1];
		/* \w \b \< \1 ... are GNU's: regcomp's business */
		if (!c || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z'))
			return -1;
		ps->p++;
		break;
	case '*': case '+': case '?': case '{': case '}': case ']': case ')': case '|':
	case '\0':
		return -1;
	default:
		if (c >= 0x80)
			return -1;
	}
	if ((n = set_node(ps, &idx)) < 0)
		return -1;
	set_bit(ps->re->sets[idx], c);
	ps->p++;
	return n;
}

static int bound(const char **p)
{
	int v = 0, digits = 0;

	while (**p >= '0' && **p <= '9' && digits < 4) {
		v = v * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	return digits && v <= MAX_BOUND && !(**p >= '0' && **p <= '9') ? v : -1;
}

/* A quantifier after an atom, if any, into *min and *max; 0 none, 1 one, -1 a
 * malformed one. */
static int parse_quant(struct parser *ps, int *min, int *max)
{
	const char *p = ps->p;

	switch (*p) {
	case '*': *min = 0; *max = -1; break;
	case '+': *min = 1; *max = -1; break;
	case '?': *min = 0; *max = 1; break;
	case '{':
		p++;
		if ((*min = bound(&p)) < 0)
			return -1;
		*max = *min;
		if (*p == ',') {
			p++;
			*max = *p == '}' ? -1 : bound(&p);
			if (*p != '}' && *max == -1)
				return -1;
			if (*max != -1 && *max < *min)
				return -1;
		}
		if (*p != '}')
			return -1;
		ps->p = p + 1;
		return 1;
	default:
		return 0;
	}
	ps->p = p + 1;
	return 1;
}

/* Atoms, each maybe repeated, up to '|', ')' or the end; -1 when empty. */
static int parse_seq(struct parser *ps)
{
	int seq = -1, atom, min, max, q, r;

	while (*ps->p && *ps->p != '|' && *ps->p != ')') {
		/* Anchors only where they begin or end a whole alternative of
		 * the pattern: glibc matches "($|c){2}b" in "cb", which no
		 * reading of POSIX or ECMA-262 allows; such patterns are left
		 * to it. */
		if ((*ps->p == '^' && (seq >= 0 || ps->depth)) ||
		    (*ps->p == '$' && (ps->depth || (ps->p[1] && ps->p[1] != '|'))))
			return -1;
		if ((atom = parse_atom(ps)) < 0 || (q = parse_quant(ps, &min, &max)) < 0)
			return -1;
		if (q) {
			/* a repeated anchor, or a repeat repeated: regcomp's */
			if (ps->nodes[atom].type == T_BOL || ps->nodes[atom].type == T_EOL ||
			    (*ps->p && strchr("*+?{", *ps->p)) || (r = add_node(ps, T_REP, atom, 0)) < 0)
				return -1;
			ps->nodes[r].min = min;
			ps->nodes[r].max = max;
			atom = r;
		}
		seq = seq < 0 ? atom : add_node(ps, T_CAT, seq, atom);
		if (seq < 0)
			return -1;
	}
	return seq;
}

static int parse_alt(struct parser *ps)
{
	int left = parse_seq(ps), right;

	while (left >= 0 && *ps->p == '|') {
		ps->p++;
		if ((right = parse_seq(ps)) < 0)
			return -1;
		left = add_node(ps, T_ALT, left, right);
	}
	return left;
}

static int add_state(amp_ere *re, int op, int out, int out1, int set)
{
	if (re->nst == MAX_STATES)
		return -1;
	re->st[re->nst] = (struct state){ op, out, out1, set };
	return re->nst++;
}

/* The states of node n, built before those of what follows (next); the
 * first one, or -1.  A node compiled twice is two copies. */
static int compile(amp_ere *re, const struct node *nodes, int n, int next)
{
	const struct node *x = &nodes[n];
	int a, b, i, s, loop;

	switch (x->type) {
	case T_SET:
		return add_state(re, S_SET, next, -1, x->set);
	case T_BOL:
		return add_state(re, S_BOL, next, -1, 0);
	case T_EOL:
		return add_state(re, S_EOL, next, -1, 0);
	case T_CAT:
		return (b = compile(re, nodes, x->b, next)) < 0 ? -1 : compile(re, nodes, x->a, b);
	case T_ALT:
		if ((a = compile(re, nodes, x->a, next)) < 0 || (b = compile(re, nodes, x->b, next)) < 0)
			return -1;
		return add_state(re, S_SPLIT, a, b, 0);
	}
	/* T_REP: after the min copies, a loop back (no bound) or max - min
	 * optional copies, each leading to the next or out */
	if (x->max < 0) {
		if ((loop = add_state(re, S_SPLIT, -1, next, 0)) < 0 ||
		    (re->st[loop].out = compile(re, nodes, x->a, loop)) < 0)
			return -1;
		s = loop;
	} else {
		s = next;
		for (i = x->min; i < x->max; i++)
			if ((a = compile(re, nodes, x->a, s)) < 0 ||
			    (s = add_state(re, S_SPLIT, a, next, 0)) < 0)
				return -1;
	}
	for (i = 0; i < x->min; i++)
		if ((s = compile(re, nodes, x->a, s)) < 0)
			return -1;
	return s;
}

amp_ere *amp_ere_compile(const char *ere)
{
	amp_ere *re = calloc(1, sizeof(*re));
	struct parser ps = { ere, NULL, 0, 0, re };
	int root, match;

	if (!re || !(ps.nodes = malloc(MAX_NODES * sizeof(*ps.nodes))) ||
	    !(re->st = malloc(MAX_STATES * sizeof(*re->st))))
		goto fail;
	if ((root = parse_alt(&ps)) < 0 || *ps.p ||
	    (match = add_state(re, S_MATCH, -1, -1, 0)) < 0 ||
	    (re->start = compile(re, ps.nodes, root, match)) < 0)
		goto fail;
	free(ps.nodes);
	ps.nodes = NULL;
	if (!(re->cur = malloc((size_t)re->nst * sizeof(int))) ||
	    !(re->next = malloc((size_t)re->nst * sizeof(int))) ||
	    !(re->mark = calloc((size_t)re->nst, sizeof(*re->mark))) ||
	    /* a generation pops each state once, and each split pushes two */
	    !(re->stack = malloc((2 * (size_t)re->nst + 1) * sizeof(int))))
		goto fail;
	return re;
fail:
	free(ps.nodes);
	amp_ere_free(re);
	return NULL;
}

void amp_ere_free(amp_ere *re)
{
	if (!re)
		return;
	free(re->sets);
	free(re->st);
	free(re->cur);
	free(re->next);
	free(re->mark);
	free(re->stack);
	free(re);
}

/* Adds state s and what it leads to without reading a byte, at position
 * pos of len, to list (*n entries); 1 when that reaches the match. */
static int follow(amp_ere *re, int s, size_t pos, size_t len, int *list, int *n)
{
	int top = 0, matched = 0;

	re->stack[top++] = s;
	while (top) {
		const struct state *x;

		s = re->stack[--top];
		if (re->mark[s] == re->gen)
			continue;
		re->mark[s] = re->gen;
		x = &re->st[s];
		switch (x->op) {
		case S_SET:
			list[(*n)++] = s;
			break;
		case S_SPLIT:
			re->stack[top++] = x->out1;
			re->stack[top++] = x->out;
			break;
		case S_BOL:
			if (pos == 0)
				re->stack[top++] = x->out;
			break;
		case S_EOL:
			if (pos == len)
				re->stack[top++] = x->out;
			break;
		case S_MATCH:
			matched = 1;
			break;
		}
	}
	return matched;
}

int amp_ere_match(amp_ere *re, const char *s, size_t len)
{
	size_t pos;
	int ncur = 0, nnext, i, *swap;

	if (len > UINT_MAX / 2)
		return -1;
	for (pos = 0; pos < len; pos++)
		if (!s[pos] || (unsigned char)s[pos] >= 0x80)
			return -1;
	/* a new generation per position; before they wrap, the marks start
	 * again */
	if (re->gen > UINT_MAX - len - 2) {
		memset(re->mark, 0, (size_t)re->nst * sizeof(*re->mark));
		re->gen = 0;
	}
	re->gen++;
	if (follow(re, re->start, 0, len, re->cur, &ncur))
		return 1;
	for (pos = 0; pos < len; pos++) {
		unsigned c = (unsigned char)s[pos];

		re->gen++;
		nnext = 0;
		for (i = 0; i < ncur; i++) {
			const struct state *x = &re->st[re->cur[i]];

			if (re->sets[x->set][c >> 3] & (1u << (c & 7)) &&
			    follow(re, x->out, pos + 1, len, re->next, &nnext))
				return 1;
		}
		/* a match may start at any position */
		if (follow(re, re->start, pos + 1, len, re->next, &nnext))
			return 1;
		swap = re->cur;
		re->cur = re->next;
		re->next = swap;
		ncur = nnext;
	}
	return 0;
}
