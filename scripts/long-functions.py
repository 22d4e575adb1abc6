#!/usr/bin/env python3
"""Lists product functions (not tests/ or bench/) longer than N lines (default 80), longest first.

A function is a brace-delimited body whose head looks like a signature (it has a ')' and is not a
control statement, a namespace, a class or an initializer); lambdas inside it count with it.
Comments, strings and raw strings are blanked first so their braces do not count. Option tables
(a function returning one static table) are listed too: read the list, not just its length.
Usage: scripts/long-functions.py [N]
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTROL = re.compile(
    r"^\s*(if|for|while|switch|namespace|class|struct|enum|union|else|do|try|catch|extern)\b")


def blank(text):
    """text with comments and string literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    spaces = lambda s: re.sub(r"[^\n]", " ", s)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith('R"', i) and (m := re.match(r'R"([^(\s]*)\(', text[i:])):
            j = text.find(")" + m.group(1) + '"', i)
            j = n if j < 0 else j + len(m.group(1)) + 2
        elif text[i] in "\"'":
            j = i + 1
            while j < n and text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(spaces(text[i:j]))
        i = j
    return "".join(out)


def functions(path):
    """(lines, first line, name) of each outermost function body in the file."""
    text = blank(path.read_text(errors="replace"))
    stack, head_start = [], 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[head_start:i].strip()
            in_function = any(kind == "function" for kind, *_ in stack)
            is_function = (not in_function and ")" in head and not CONTROL.match(head)
                           and not head.endswith("=") and not head.endswith(","))
            if is_function:
                words = head.split("(")[0].split()
                stack.append(("function", text.count("\n", 0, i) + 1, words[-1] if words else "?"))
            else:
                stack.append(("block",))
            head_start = i + 1
        elif c == "}":
            if stack:
                top = stack.pop()
                if top[0] == "function":
                    yield text.count("\n", 0, i) + 1 - top[1] + 1, top[1], top[2]
            head_start = i + 1
        elif c == ";":
            head_start = i + 1


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    listed = subprocess.run(["git", "ls-files", "*.cpp", "*.hpp", "*.h", "*.cu", "*.cuh"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    long = []
    for name in listed:
        if name.startswith(("tests/", "bench/")):
            continue
        for lines, line, function in functions(ROOT / name):
            if lines > limit:
                long.append((lines, f"{name}:{line}", function))
    for lines, where, function in sorted(long, reverse=True):
        print(f"{lines:4d}  {where}  {function}")
    print(f"{len(long)} product function(s) over {limit} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
