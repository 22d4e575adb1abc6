#!/usr/bin/env python3
"""Lists includes that run upward: a product file including a room its library does not link.

A room is a folder whose CMakeLists.txt makes a library (fabtrain_room, add_library); each file
belongs to the deepest room above it. A file may include its own room and the rooms whose
libraries its room's libraries link, directly or through others (target_link_libraries). So an
include this lists is an arrow the build does not draw: data flows one way (models, platforms ->
plan -> sim/exec -> selector/calibrate), and a lower room never includes a higher one.
Not checked: apps/, tests/, bench/ and tools/ (the programs and tests on top), and includes of
files outside the source tree.
Usage: scripts/check-includes.py   (exit 1 when any include runs upward)
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ON_TOP = {"apps", "tests", "bench", "tools", "build", "deps", "scripts", "docs"}
SOURCES = {".cpp", ".hpp", ".cu", ".cuh", ".h"}
CALL = re.compile(r"\b(fabtrain_room|add_library|target_link_libraries)\(([^)]*)\)", re.S)
KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "STATIC", "OBJECT", "SHARED"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rooms():
    """{room folder: set of its libraries}, {library: set of libraries it links}."""
    libraries_of, links = {}, {}
    for cmake in ROOT.rglob("CMakeLists.txt"):
        folder = cmake.parent.relative_to(ROOT)
        if folder == Path(".") or folder.parts[0] in ON_TOP:
            continue
        text = re.sub(r"#[^\n]*", "", cmake.read_text())
        for call, args in CALL.findall(text):
            words = [w for w in args.split() if w not in KEYWORDS]
            if not words:
                continue
            target, rest = words[0], words[1:]
            if call in ("fabtrain_room", "add_library"):
                libraries_of.setdefault(folder, set()).add(target)
            if call in ("fabtrain_room", "target_link_libraries"):
                links.setdefault(target, set()).update(w for w in rest if w.startswith("fabtrain_"))
    return libraries_of, links


def closure(libraries, links):
    seen, stack = set(), list(libraries)
    while stack:
        lib = stack.pop()
        if lib not in seen:
            seen.add(lib)
            stack.extend(links.get(lib, ()))
    return seen


def room_of(path, libraries_of):
    for parent in [path.parent, *path.parent.parents]:
        if parent in libraries_of:
            return parent
    return None


def main():
    libraries_of, links = rooms()
    offenders = []
    for file in sorted(ROOT.rglob("*")):
        rel = file.relative_to(ROOT)
        if file.suffix not in SOURCES or rel.parts[0] in ON_TOP or not file.is_file():
            continue
        own = room_of(rel, libraries_of)
        if own is None:
            continue
        reachable = closure(libraries_of[own], links)
        for included in INCLUDE.findall(file.read_text(errors="replace")):
            target = Path(included)
            if not (ROOT / target).is_file():
                continue
            room = room_of(target, libraries_of)
            if room is None or room == own or libraries_of[room] & reachable:
                continue
            offenders.append(f"{rel}: includes {included} ({room}/ is not linked by {own}/)")
    for line in offenders:
        print(line)
    print(f"{len(offenders)} include(s) running upward")
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
