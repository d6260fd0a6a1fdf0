#!/usr/bin/env python3
"""List functions longer than a limit in C++ sources (clang-formatted code; a heuristic).

usage: scripts/function-lengths.py [--max N] FILE|DIR...   exit 1 when one is longer than N.
A function is a `{` opened at namespace or class level after a line with `(`; its length is the
number of lines from its signature to its closing brace. Lambdas count as part of their function.
"""
import os
import re
import sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else)\b")


def functions(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    lines = text.split("\n")
    depth_kinds = []  # per open brace: "ns", "class", "fn", "other"
    sig_start = None
    out = []
    fn_start = None
    fn_depth = None
    fn_name = ""
    for i, line in enumerate(lines):
        code = re.sub(r"//.*", "", line)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        code = re.sub(r"'(\\.|[^'\\])*'", "''", code)
        in_fn = fn_start is not None
        if not in_fn and sig_start is None and "(" in code and not CONTROL.match(code):
            sig_start = i
        for ch in code:
            if ch == "{":
                if in_fn or fn_start is not None:
                    depth_kinds.append("other")
                    continue
                head = " ".join(lines[sig_start if sig_start is not None else i:i + 1])
                if re.search(r"\bnamespace\b", code) or re.search(r"\bextern\s+\"", code):
                    depth_kinds.append("ns")
                elif re.search(r"\b(class|struct|union|enum)\b", head) and "(" not in head.split("{")[0]:
                    depth_kinds.append("class")
                elif sig_start is not None and "(" in head and "=" not in head.split("(")[0]:
                    depth_kinds.append("fn")
                    fn_start, fn_depth = sig_start, len(depth_kinds)
                    m = re.search(r"([\w:~<>]+)\s*\(", head)
                    fn_name = m.group(1) if m else "?"
                else:
                    depth_kinds.append("other")
            elif ch == "}":
                if depth_kinds:
                    if fn_start is not None and len(depth_kinds) == fn_depth:
                        out.append((fn_start + 1, i - fn_start + 1, fn_name))
                        fn_start = None
                    depth_kinds.pop()
                sig_start = None
        if fn_start is None and (code.rstrip().endswith(";") or code.strip() == ""):
            sig_start = None
    return out


def main():
    args = sys.argv[1:]
    limit = 120
    if args[:1] == ["--max"]:
        limit = int(args[1])
        args = args[2:]
    files = []
    for a in args:
        if os.path.isdir(a):
            for root, _, names in os.walk(a):
                files += [os.path.join(root, n) for n in names if n.endswith((".cpp", ".hpp"))]
        else:
            files.append(a)
    bad = 0
    for f in sorted(files):
        for line, length, name in functions(f):
            if length > limit:
                print(f"{f}:{line}: {name} is {length} lines (limit {limit})")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
