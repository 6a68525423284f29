#!/usr/bin/env python3
"""Prints the transition table of lib/protocol/task.c (amp_transitions[]) as the
rows amp-protocol(7) "TASK STATES" shows (share/man/amp-protocol.7.scd),
so a test can check that the page states exactly what the code does.

Each row is printed as scdoc writes a table row, one cell a line:
'|  event', ':  state', ':  allowed' or ':  *refused*', ':  effect',
with scdoc's escapes (a backslash, '*', and '_' opening a word)."""
import re
import sys


def scdoc(text):
    text = text.replace("\\", "\\\\").replace("*", "\\*")
    return re.sub(r"(?<![A-Za-z0-9])_", r"\\_", text)


src = open(sys.argv[1]).read()
table = src[src.index("const amp_transition amp_transitions[]"):]
table = table[:table.index("{ NULL, NULL, 0, NULL }")]
for event, state, allowed, effect in re.findall(
        r'\{ "([a-z_]+)", "([a-z_*]+)", ([01]), "((?:[^"\\]|\\.)*)" \}', table):
    print("|  %s" % scdoc(event))
    print(":  %s" % scdoc(state if state != "*" else "any other"))
    print(":  %s" % ("allowed" if allowed == "1" else "*refused*"))
    print(":  %s" % scdoc(effect.replace('\\"', '"')))
