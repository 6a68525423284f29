/*
 * ere.h - a matcher for the common, plain part of POSIX extended regular
 * expressions, for the schemas' "pattern" keywords on ASCII strings.
 *
 * glibc's regcomp() and the first regexec() of each pattern (which builds
 * its DFA state by state) were 1.4M of the 5.8M instructions of an `amp
 * send`, paid again by every process.  The patterns amp meets are small and
 * plain (anchors, literals, brackets, groups, alternatives, counted
 * repeats), and a Thompson NFA of them is built in microseconds and run in
 * time linear in the string (no backtracking, whatever the pattern).
 *
 * Only a conservative subset is compiled: the ERE that schema.c's
 * translation of an ECMA-262 pattern gives, ASCII, with no empty
 * alternative or group, no GNU escape (\w \b \< ...), no collating element
 * or equivalence class, no repeat of a repeat, anchors only where they
 * begin or end a whole alternative of the pattern, bounds up to 255.  Anything else is refused (the caller keeps regcomp), so whatever
 * this compiles, regcomp() compiles too, and in the C locale it matches the
 * same strings: the test compares them (test/c/test_ere.c).
 */
#ifndef AMP_ERE_H
#define AMP_ERE_H

#include <stddef.h>

typedef struct amp_ere amp_ere;

/* The NFA of `ere` (NUL-terminated), or NULL when it is outside the subset
 * above or memory runs out.  Free with amp_ere_free. */
amp_ere *amp_ere_compile(const char *ere);
void amp_ere_free(amp_ere *re);

/*
 * 1 when some part of s[0..len) matches, as regexec() without REG_NOTBOL
 * and REG_NEWLINE would say in the C locale; 0 when none does; -1 when s is
 * not for this matcher (a byte that is NUL or not ASCII, or 2 GiB and more:
 * ask regexec).
 */
int amp_ere_match(amp_ere *re, const char *s, size_t len);

#endif
