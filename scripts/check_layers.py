#!/usr/bin/env python3
"""Checks the layering of docs/architecture.md ("Layers") against the code.

One folder is one library: its CMakeLists.txt calls headerd_library(NAME DEPS ... [TEST_DEPS ...]).
This check fails when
  - a source of the folder (a .cpp or .hpp that is not a test source) includes a header of a layer
    that the library's DEPS do not reach, directly or through the DEPS of those libraries (CMake
    links them PUBLIC, so what a dependency uses is below the folder as well);
  - a test source (NAME_test.cpp, test_*.hpp) includes a header of a layer that neither DEPS nor
    TEST_DEPS reach; the header-only helpers of tests/ that a test source includes are followed, so
    their includes count as the test's;
  - a library source includes a header of a folder that is no library (tests/, bench/, fuzz/);
  - DEPS name a headerd library that does not exist, or the DEPS form a cycle;
  - the table "The CMake targets and their DEPS" of docs/architecture.md lists other DEPS than
    the CMakeLists.txt, or misses a library.
Only `#include "folder/..."` lines count (the project's headers are included by their path from the
checkout's root). Each finding names the file, the line, the layer and what the library's DEPS
reach. Exit code 0 when there is none, 1 when there are findings, 2 on usage errors.

  scripts/check_layers.py               # the checkout this script is in
  scripts/check_layers.py --root DIR    # another tree (tests/check_layers_test.sh)
"""

import argparse
import os
import re
import sys

SKIP_DIRS = {".git", "node_modules"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
CALL_RE = re.compile(r"\bheaderd_library\s*\(")
KEYWORDS = {"DEPS", "TEST_DEPS", "EXCLUDE"}
DOC = "docs/architecture.md"


class Library:
    def __init__(self, name, folder, cmake, line):
        self.name = name
        self.folder = folder  # relative to the root, "/"-separated
        self.cmake = cmake  # folder/CMakeLists.txt
        self.line = line
        self.deps = []  # headerd libraries only, in CMake's order
        self.test_deps = []


def is_test_source(filename):
    return filename.endswith("_test.cpp") or (filename.startswith("test_") and filename.endswith(".hpp"))


def is_source(filename):
    return filename.endswith((".cpp", ".hpp", ".h")) and not filename.endswith("_benchmark.cpp")


def strip_comment(line):
    return line.split("#", 1)[0]


def parse_libraries(root, findings):
    """Every headerd_library() call below root, by name."""
    libraries = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build"))
        if "CMakeLists.txt" not in filenames:
            continue
        path = os.path.join(dirpath, "CMakeLists.txt")
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        text = "\n".join(strip_comment(line) for line in lines)
        for match in CALL_RE.finditer(text):
            end = text.find(")", match.end())
            if end < 0:
                findings.append(f"{rel}: headerd_library( without its closing parenthesis")
                continue
            line = text.count("\n", 0, match.start()) + 1
            words = text[match.end() : end].split()
            if not words or words[0] in KEYWORDS:
                findings.append(f"{rel}:{line}: headerd_library() without a name")
                continue
            folder = os.path.dirname(rel)
            lib = Library(words[0], folder, rel, line)
            section = None
            for word in words[1:]:
                if word in KEYWORDS:
                    section = word
                elif word.startswith("headerd::"):
                    target = {"DEPS": lib.deps, "TEST_DEPS": lib.test_deps}.get(section)
                    if target is None:
                        findings.append(f"{rel}:{line}: {word} outside DEPS and TEST_DEPS")
                    else:
                        target.append(word[len("headerd::") :])
            if lib.name in libraries:
                other = libraries[lib.name]
                findings.append(f"{rel}:{line}: library '{lib.name}' is also defined in {other.cmake}:{other.line}")
                continue
            libraries[lib.name] = lib
    return libraries


def check_graph(libraries, findings):
    """Unknown DEPS and cycles; returns False when the graph cannot be walked."""
    ok = True
    for lib in libraries.values():
        for kind, names in (("DEPS", lib.deps), ("TEST_DEPS", lib.test_deps)):
            for name in names:
                if name not in libraries:
                    findings.append(
                        f"{lib.cmake}:{lib.line}: {kind} of '{lib.name}' names headerd::{name}, "
                        f"which no headerd_library() defines"
                    )
                    ok = False
    if not ok:
        return False
    state = {}  # name -> 1 on the path, 2 done

    def visit(name, path):
        state[name] = 1
        for dep in libraries[name].deps:
            if state.get(dep) == 1:
                cycle = path[path.index(dep) :] + [dep]
                findings.append(
                    f"{libraries[name].cmake}:{libraries[name].line}: the DEPS form a cycle: "
                    + " -> ".join(cycle)
                    + " (layers depend one way only)"
                )
                return False
            if dep not in state and not visit(dep, path + [dep]):
                return False
        state[name] = 2
        return True

    for name in sorted(libraries):
        if name not in state and not visit(name, [name]):
            return False
    return True


def closure(libraries, names):
    seen = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(libraries[name].deps)
    return seen


def layer_of(libraries, path):
    """The library whose folder holds `path` (the deepest one), or None."""
    folder = os.path.dirname(path)
    best = None
    for lib in libraries.values():
        if folder == lib.folder or folder.startswith(lib.folder + "/"):
            if best is None or len(lib.folder) > len(best.folder):
                best = lib
    return best


def read_includes(root, rel):
    out = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                out.append((number, m.group(1)))
    return out


def describe(lib, test):
    deps = ", ".join(lib.deps) or "none"
    text = f"DEPS {deps}"
    if test:
        text += f"; TEST_DEPS {', '.join(lib.test_deps) or 'none'}"
    return text


def check_sources(root, libraries, findings):
    """Every include of every library folder's sources; returns (files, includes) checked."""
    files = includes = 0
    for lib in sorted(libraries.values(), key=lambda l: l.folder):
        allowed = closure(libraries, [lib.name])
        allowed_test = closure(libraries, [lib.name] + lib.test_deps)
        directory = os.path.join(root, lib.folder)
        for filename in sorted(os.listdir(directory)):
            rel = f"{lib.folder}/{filename}" if lib.folder else filename
            if not is_source(filename) or not os.path.isfile(os.path.join(root, rel)):
                continue
            test = is_test_source(filename)
            files += 1
            reach = allowed_test if test else allowed
            whose = f"{lib.name}'s tests" if test else f"'{lib.name}'"
            # (file, line, include, chain of helper includes before it)
            pending = [(rel, number, inc, []) for number, inc in read_includes(root, rel)]
            followed = set()
            while pending:
                src, number, inc, chain = pending.pop(0)
                includes += 1
                if "/" not in inc:
                    continue  # not a project header by path (none are today)
                where = "".join(f'{f}:{n}: #include "{i}" -> ' for f, n, i in chain)
                target = layer_of(libraries, inc)
                if target is None:
                    if not test:
                        findings.append(
                            f'{where}{src}:{number}: #include "{inc}": {inc} belongs to no layer '
                            f"(no headerd_library() in {os.path.dirname(inc)}/); a library source of "
                            f"'{lib.name}' may include only the headers of its layers ({describe(lib, False)}; "
                            f"{lib.cmake})"
                        )
                    elif inc not in followed and os.path.isfile(os.path.join(root, inc)):
                        # A test helper (tests/*.hpp): what it includes, the test includes.
                        followed.add(inc)
                        pending.extend(
                            (inc, n, i, chain + [(src, number, inc)]) for n, i in read_includes(root, inc)
                        )
                    continue
                if target.name not in reach:
                    findings.append(
                        f'{where}{src}:{number}: #include "{inc}": layer \'{target.name}\' ({target.folder}/) '
                        f"is not a dependency of {whose}: {describe(lib, test)} in {lib.cmake}, which reach "
                        f"{', '.join(sorted(reach))}"
                    )
    return files, includes


def check_doc(root, libraries, findings):
    """The DEPS column of docs/architecture.md's table against the CMake DEPS."""
    path = os.path.join(root, DOC)
    if not os.path.isfile(path):
        findings.append(f"{DOC}: missing; it documents the layers this check enforces")
        return
    rows = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_table = False
    for number, line in enumerate(lines, 1):
        if line.startswith("| folder | library | DEPS (headerd) |"):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= {"-", " "}:
            continue
        m = re.match(r"`([^`]+)`", cells[1])
        if not m:
            findings.append(f"{DOC}:{number}: no library name in '{cells[1]}'")
            continue
        deps = [] if cells[2] in ("-", "") else [d.strip() for d in cells[2].split(",")]
        rows[m.group(1)] = (number, cells[0].strip("`").rstrip("/"), deps)
    if not rows:
        findings.append(f"{DOC}: no table with the header '| folder | library | DEPS (headerd) |'")
        return
    for name, lib in sorted(libraries.items()):
        if name not in rows:
            findings.append(
                f"{DOC}: the DEPS table has no row for library '{name}' ({lib.cmake}: DEPS {', '.join(lib.deps) or '-'})"
            )
            continue
        number, folder, deps = rows[name]
        if folder != lib.folder:
            findings.append(f"{DOC}:{number}: library '{name}' is in {lib.folder}/, the table says {folder}/")
        if sorted(deps) != sorted(lib.deps):
            findings.append(
                f"{DOC}:{number}: DEPS of '{name}' are {', '.join(deps) or '-'} in the table but "
                f"{', '.join(lib.deps) or '-'} in {lib.cmake}:{lib.line}"
            )
    for name, (number, _, _) in sorted(rows.items()):
        if name not in libraries:
            findings.append(f"{DOC}:{number}: the table lists library '{name}', which no headerd_library() defines")


def main():
    parser = argparse.ArgumentParser(
        description="Fails when a folder's code includes a layer its headerd_library() DEPS do not reach "
        "(docs/architecture.md, 'Layers')."
    )
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=default_root, help="the checkout to check (default: this script's)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"check_layers: --root {args.root}: not a directory", file=sys.stderr)
        return 2

    findings = []
    libraries = parse_libraries(root, findings)
    if not libraries:
        print(f"check_layers: no headerd_library() call in any CMakeLists.txt below {root}", file=sys.stderr)
        return 2
    files = includes = 0
    if check_graph(libraries, findings):
        files, includes = check_sources(root, libraries, findings)
    check_doc(root, libraries, findings)
    for finding in findings:
        print(f"check_layers: {finding}", file=sys.stderr)
    if findings:
        print(f"check_layers: FAIL: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print(
        f"check_layers: ok: {len(libraries)} layers, {files} files, {includes} includes within their "
        f"folder's DEPS (tests: DEPS + TEST_DEPS); {DOC}'s DEPS table matches"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
