#!/usr/bin/python3
"""crosscheck.py - validate files against amp's schemas with python-jsonschema.

An independent second opinion on `amp validate`: every schemas/*.json is put
in a RefResolver store under its "$id", so relative "$ref"s resolve inside the
set and never over a network, and each file is checked by Draft7Validator with
a FormatChecker.  Run it with /usr/bin/python3 (the interpreter that has
jsonschema).

usage: crosscheck.py [--schema NAME] [--schema-dir DIR] FILE...
       crosscheck.py --expect TSV
       crosscheck.py --check-schemas

FILE...          one line per file, tab-separated:
                     FILE  valid
                     FILE  invalid  POINTER: REASON [| POINTER: REASON]...
                     FILE  error    REASON    (unreadable, or not one JSON value)
                 --schema is a schema file name or "$id" (default: ack.schema.json
                 for files named ack-*.json, message.schema.json otherwise).
--expect TSV     checks every row "FILE POINTER [PROPERTY]" of an EXPECTED.tsv
                 (FILE relative to the TSV): the file must be invalid with an
                 error at POINTER (whose reason names PROPERTY, if given, or
                 at POINTER/PROPERTY), and no error elsewhere, so that the file
                 breaks exactly one rule.  Prints "FILE  ok" or "FILE  BAD  ...".
--check-schemas  checks every schema against the draft-07 meta-schema and
                 that its "$id" is the base URI plus its file name.

Exit status: 0 when everything is valid / as expected, 1 otherwise, 2 on
usage errors.
"""
import argparse
import glob
import json
import os
import sys

import jsonschema
from jsonschema import Draft7Validator, FormatChecker, RefResolver

BASE = "https://amp.invalid/schemas/1.0/"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
HERE = os.path.dirname(os.path.abspath(__file__))


def pointer(path):
    """RFC 6901 JSON pointer of a jsonschema error path."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path)


def one_line(text):
    return " ".join(str(text).split())


class Checker:
    def __init__(self, schema_dir):
        self.files = {}
        self.store = {}
        for name in sorted(glob.glob(os.path.join(schema_dir, "*.json"))):
            with open(name, encoding="utf-8") as f:
                schema = json.load(f)
            self.files[name] = schema
            self.store[schema.get("$id", BASE + os.path.basename(name))] = schema
        self.validators = {}

    def validator(self, schema):
        uri = schema if schema.startswith("https:") else BASE + schema
        if uri not in self.validators:
            if uri not in self.store:
                raise KeyError(f"no schema {uri}")
            resolver = RefResolver(base_uri=uri, referrer=self.store[uri],
                                   store=self.store)
            self.validators[uri] = Draft7Validator(
                self.store[uri], resolver=resolver, format_checker=FormatChecker())
        return self.validators[uri]

    def errors(self, name, schema=None):
        """[(pointer, reason)] for file `name`; raises OSError/ValueError."""
        if schema is None:
            schema = ("ack.schema.json" if os.path.basename(name).startswith("ack-")
                      else "message.schema.json")
        with open(name, encoding="utf-8") as f:
            instance = json.load(f)
        errs = sorted(self.validator(schema).iter_errors(instance),
                      key=lambda e: list(map(str, e.absolute_path)))
        return [(pointer(e.absolute_path), one_line(e.message)) for e in errs]


def check_schemas(checker):
    status = 0
    for name, schema in checker.files.items():
        problems = []
        try:
            Draft7Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            problems.append(one_line(e.message))
        if schema.get("$schema") != DRAFT7:
            problems.append(f"$schema is not {DRAFT7}")
        if schema.get("$id") != BASE + os.path.basename(name):
            problems.append(f"$id is not {BASE + os.path.basename(name)}")
        if problems:
            status = 1
            print(f"{os.path.basename(name)}\tbad\t{'; '.join(problems)}")
        else:
            print(f"{os.path.basename(name)}\tok")
    return status


def check_expected(checker, tsv):
    status = 0
    base = os.path.dirname(tsv)
    with open(tsv, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    for row in rows:
        name, ptr, prop = (row + ["", ""])[:3]
        try:
            errs = checker.errors(os.path.join(base, name))
        except (OSError, ValueError) as e:
            errs = [("", f"not JSON: {e}")]
        at = [p == ptr or (prop and p == f"{ptr}/{prop}") for p, m in errs]
        named = any(p == ptr and (not prop or prop in m) or (prop and p == f"{ptr}/{prop}")
                    for p, m in errs)
        if named and all(at):
            print(f"{name}\tok")
        else:
            status = 1
            got = " | ".join(f"{p}: {m}" for p, m in errs) or "valid"
            print(f"{name}\tBAD\texpected {ptr or '(root)'}{' ' + prop if prop else ''}; got {got}")
    return status


def main():
    ap = argparse.ArgumentParser(usage="crosscheck.py [--schema NAME] FILE... | "
                                 "--expect TSV | --check-schemas")
    ap.add_argument("--schema")
    ap.add_argument("--schema-dir", default=os.path.join(HERE, "..", "schemas"))
    ap.add_argument("--check-schemas", action="store_true")
    ap.add_argument("--expect", metavar="TSV")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()

    checker = Checker(args.schema_dir)
    if args.check_schemas:
        return check_schemas(checker)
    if args.expect:
        return check_expected(checker, args.expect)
    if not args.files:
        ap.print_usage(sys.stderr)
        return 2
    status = 0
    for name in args.files:
        try:
            errs = checker.errors(name, args.schema)
        except KeyError as e:
            print(f"crosscheck.py: {e.args[0]}", file=sys.stderr)
            return 2
        except (OSError, ValueError) as e:
            print(f"{name}\terror\t{one_line(e)}")
            status = 1
            continue
        if errs:
            status = 1
            print(f"{name}\tinvalid\t" + " | ".join(f"{p}: {m}" for p, m in errs))
        else:
            print(f"{name}\tvalid")
    return status


if __name__ == "__main__":
    sys.exit(main())
