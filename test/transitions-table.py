#!/usr/bin/env python3
"""Prints the transition table of lib/protocol/task.c (amp_transitions[]) as the
Markdown rows README.md "Task states" shows, one per line, so a test can
check that the README states exactly what the code does."""
import re
import sys

src = open(sys.argv[1]).read()
table = src[src.index("const amp_transition amp_transitions[]"):]
table = table[:table.index("{ NULL, NULL, 0, NULL }")]
for event, state, allowed, effect in re.findall(
        r'\{ "([a-z_]+)", "([a-z_*]+)", ([01]), "((?:[^"\\]|\\.)*)" \}', table):
    print("| %s | %s | %s | %s |" % (event, state if state != "*" else "any other",
                                    "allowed" if allowed == "1" else "**refused**",
                                    effect.replace('\\"', '"')))
