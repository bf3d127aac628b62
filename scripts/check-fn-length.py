#!/usr/bin/env python3
"""Keeps functions short enough to read at once: no function of the engine or the bench
(crates/cairn/src, crates/cairn-bench/src) longer than 150 lines, from its `fn` line to
its closing brace. Test modules (`#[cfg(test)] mod ...`) and test files are left out.
Run by scripts/test.sh; split a long function into named phases (CONTRIBUTING.md)."""

import os
import re
import sys

LIMIT = 150
ROOTS = ["crates/cairn/src", "crates/cairn-bench/src"]
FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
TEST_MOD = re.compile(r"\s*#\[cfg\(test\)\]")
MOD_OPEN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?mod \w+\s*\{")
# Braces inside string and char literals do not count.
LITERAL = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])\'')


def braces(line: str) -> int:
    code = LITERAL.sub("", line.split("//", 1)[0])
    return code.count("{") - code.count("}")


def long_functions(path: str):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if TEST_MOD.match(lines[i]) and i + 1 < len(lines) and MOD_OPEN.match(lines[i + 1]):
            depth, j = 0, i + 1
            for j in range(i + 1, len(lines)):
                depth += braces(lines[j])
                if depth <= 0:
                    break
            i = j + 1
            continue
        m = FN.match(lines[i])
        if m:
            depth, started, end = 0, False, i
            for end in range(i, len(lines)):
                depth += braces(lines[end])
                started |= "{" in lines[end]
                if started and depth <= 0:
                    break
                if not started and lines[end].rstrip().endswith(";"):
                    break
            n = end - i + 1
            if n > LIMIT:
                yield n, i + 1, m.group(6)
        i += 1


def main() -> int:
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bad = []
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(".rs"):
                    path = os.path.join(dirpath, f)
                    bad += [(n, path, line, name) for n, line, name in long_functions(path)]
    for n, path, line, name in sorted(bad, reverse=True):
        print(f"check-fn-length: {path}:{line}: fn {name} is {n} lines, more than {LIMIT}:"
              " split it into named phases", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
