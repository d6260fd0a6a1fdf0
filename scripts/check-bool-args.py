#!/usr/bin/env python3
"""Names at call sites: no function or constructor that src/ declares with a bool parameter is
called in src/ with a bare `true` or `false` argument (a reader cannot tell what `f(x, true)`
means: the parameter becomes an enum or a named option, ARCHITECTURE.md "Names at call sites").
Usage: check-bool-args.py [SRC]; prints each call found and exits 1, else a one-line summary."""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent / "src")
DECL = re.compile(r"([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override|=\s*0|;|\{|->|:)", re.S)
BOOL_PARAM = re.compile(r"(?:^|,)\s*(?:const\s+)?bool\s+\w+")
KEYWORDS = {"if", "while", "for", "return", "switch", "catch", "sizeof", "decltype"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)  # string literals hold no calls


def bool_functions():
    names = set()
    for header in src.rglob("*.hpp"):
        for m in DECL.finditer(strip_comments(header.read_text())):
            if m.group(1) not in KEYWORDS and BOOL_PARAM.search(m.group(2)):
                names.add(m.group(1))
    return names


def top_level_args(text, start):
    """The arguments of the call whose '(' is at `start`, split at top-level commas."""
    depth, args, current = 0, [], []
    for ch in text[start:]:
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(current))
                return args
        elif ch == "," and depth == 1:
            args.append("".join(current))
            current = []
            continue
        current.append(ch)
    return args


def main():
    names = bool_functions()
    if not names:
        print(f"check-bool-args: no declarations found under {src}")
        return 1
    call = re.compile(r"\b(" + "|".join(sorted(names)) + r")\s*\(")
    found = []
    for path in sorted(list(src.rglob("*.cpp")) + list(src.rglob("*.hpp"))):
        text = strip_comments(path.read_text())
        for m in call.finditer(text):
            args = [a.strip() for a in top_level_args(text, m.end() - 1)]
            if any(a in ("true", "false") for a in args):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(src.parent)}:{line}: {m.group(1)}(... {'/'.join(a for a in args if a in ('true', 'false'))} ...): name it (an enum or a named option)")
    for f in found:
        print(f)
    if found:
        return 1
    print(f"bool arguments: {len(names)} functions take a bool; none is called with a bare true or false")
    return 0


sys.exit(main())
