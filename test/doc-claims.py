#!/usr/bin/env python3
"""Checks that the documentation still says what the tests hold it to.

  doc-claims.py claims SRC < TABLE
      TABLE has one claim a line, 'file | sentence | test file | test name'
      (blank lines and '#' lines skipped).  For each: the sentence is in the
      file (README.md, share/man/*.scd, share/doc/*.md), read as text
      (markup, scdoc escapes and line breaks do not count), and the test
      file holds a test of that name ('@test "NAME"' in a bats file, a
      function or string in a C test).  Prints one line per claim that
      fails and exits 1 if any does.

  doc-claims.py held-by SRC PAGE...
      Every test a page names in its 'Held by:' paragraphs ('25 "name"',
      '30-strict "name"', 'test_store "name"'; a name cut short with '...'
      or '…' is a prefix) is a test of that file.  Prints the ones that
      are not, and how many were checked, and exits 1 if any is missing.

  doc-claims.py blocks FILE START END [MIN]
      The code blocks of FILE between the lines START and END (the README's
      '<!-- tour -->', a man page's '; hub'), in order, as one script: the
      blocks are run as written, so the text cannot drift from the code.
      A block is '```' or '```sh' to '```'; in a .scd file scdoc's escapes
      are undone.  Exits 1 when fewer than MIN (default 2) blocks are found.
"""
import glob
import os
import re
import sys


def text_of(path):
    """The file read as plain text: markup, escapes and line breaks gone."""
    return plain(open(path, encoding="utf-8").read(), path.endswith(".scd"))


def plain(s, scd):
    """S as plain text: scdoc's (SCD) or Markdown's markup gone."""
    if scd:
        # scdoc: a backslash escapes the next character; unescaped '*'
        # is bold, and '_' at a word's edge is underline
        keep = {"*": "\ue001", "_": "\ue002", "\\": "\ue003"}
        s = re.sub(r"\\(.)", lambda m: keep.get(m.group(1), m.group(1)), s)
        s = s.replace("*", "")
        s = re.sub(r"(?<![A-Za-z0-9\ue001-\ue003])_|_(?![A-Za-z0-9\ue001-\ue003])", "", s)
        for c, k in keep.items():
            s = s.replace(k, c)
    else:
        s = s.replace("`", "").replace("**", "")
    return re.sub(r"\s+", " ", s)


def tests_of(src, name):
    """The test names of test file NAME: 'NN-name.bats', 'NN' (any
    test/NN-*.bats) or a C test program under test/c/."""
    if name.startswith("test_"):
        path = os.path.join(src, "test", "c", name + ".c")
        return [open(path).read()] if os.path.exists(path) else []
    if name.endswith(".bats"):
        files = [os.path.join(src, "test", name)]
    else:
        files = glob.glob(os.path.join(src, "test", name + ".bats")) + \
            glob.glob(os.path.join(src, "test", name + "-*.bats"))
    names = []
    for f in files:
        if os.path.exists(f):
            names += re.findall(r'^@test "(.*)" \{$', open(f).read(), re.M)
    return names


def has_test(src, file, name):
    name = re.sub(r"\s*(\.\.\.|…)$", "", name.strip())
    for t in tests_of(src, file):
        if file.startswith("test_"):
            if name in t:
                return True
        elif t == name or t.startswith(name) and name != "":
            return True
    return False


def claims(src):
    bad = 0
    n = 0
    for line in sys.stdin:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        doc, sentence, tfile, tname = [x.strip() for x in line.split(" | ")]
        n += 1
        path = os.path.join(src, doc)
        if not os.path.exists(path):
            print("%s: no such file (claim: %s)" % (doc, sentence))
            bad += 1
        elif re.sub(r"\s+", " ", sentence) not in text_of(path):
            print("%s: the claim is gone: %s" % (doc, sentence))
            bad += 1
        if not has_test(src, tfile, tname):
            print("%s: no test '%s' (for: %s)" % (tfile, tname, sentence))
            bad += 1
    print("%d claims checked" % n)
    return 1 if bad or n == 0 else 0


def held_by(src, pages):
    bad = 0
    n = 0
    for page in pages:
        source = open(page, encoding="utf-8").read()
        # a 'Held by' paragraph runs to the next blank line
        for block in re.findall(r"Held by[^:\n]*:(.*?)(?:\n\s*\n|\Z)", source, re.S):
            current = None
            for m in re.finditer(r'(?:(?<![\w-])(\d\d[a-z]?(?:-[a-z]+)?|test_[a-z_]+) )?"([^"]+)"',
                                 plain(block, page.endswith(".scd"))):
                if m.group(1):
                    current = m.group(1)
                if current is None:
                    continue
                n += 1
                if not has_test(src, current, m.group(2)):
                    print('%s: no test of %s named "%s"' % (os.path.basename(page), current, m.group(2)))
                    bad += 1
    print("%d named tests checked" % n)
    return 1 if bad or n == 0 else 0


def blocks(path, start, end, least="2"):
    text = open(path, encoding="utf-8").read()
    part = text[text.index("\n" + start + "\n"):text.index("\n" + end + "\n")]
    found = re.findall(r"^```(?:sh)?\n(.*?)^```$", part, re.S | re.M)
    if path.endswith(".scd"):
        found = [re.sub(r"\\(.)", r"\1", b) for b in found]
    print("\n".join(found))
    return 0 if len(found) >= int(least) else 1


if __name__ == "__main__":
    if sys.argv[1] == "blocks":
        sys.exit(blocks(*sys.argv[2:6]))
    if sys.argv[1] == "claims":
        sys.exit(claims(sys.argv[2]))
    sys.exit(held_by(sys.argv[2], sys.argv[3:]))
