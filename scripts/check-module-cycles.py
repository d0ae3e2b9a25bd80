#!/usr/bin/env python3
"""Fails if the modules of a Rust crate use each other in a cycle.

Usage: check-module-cycles.py SRC_DIR...

Each SRC_DIR is a crate's flat `src/` (one file per module; `main.rs` or
`lib.rs` is the crate root). A module uses another when it names
`crate::other` (in code, a `use`, or an assembly `sym` operand), or an
exported macro defined there; the root uses the modules it names directly.
Names defined in the root count as the root.
A cycle means no module can be read, tested or replaced without the others
in it (issue 19), so `make lint` runs this on the firmware crates.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CRATE_PATH = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)")
USE_GROUP = re.compile(r"\buse\s+crate::\{")
MACRO = re.compile(r"macro_rules!\s+([A-Za-z_][A-Za-z0-9_]*)")
COMMENT = re.compile(r"//.*")


def group_names(text: str, start: int) -> list[str]:
    """First path segments of the items in the `{...}` opening at `start`."""
    depth, item, names = 0, "", []
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                names.append(item)
                break
        if depth == 1 and ch == ",":
            names.append(item)
            item = ""
        elif depth >= 1:
            item += ch
    return [n.strip().split("::")[0].strip() for n in names if n.strip()]


def uses(src: Path) -> dict[str, set[str]]:
    """Module -> the modules it uses (the root is called `crate`)."""
    files = {p.stem: p for p in sorted(src.glob("*.rs"))}
    root = "main" if "main" in files else "lib"
    texts = {m: COMMENT.sub("", p.read_text()) for m, p in files.items()}
    macros = {name: m for m, t in texts.items() for name in MACRO.findall(t)}

    def module_of(name: str) -> str:
        if name in files and name != root:
            return name
        return macros.get(name, "crate")

    graph: dict[str, set[str]] = {}
    for m, text in texts.items():
        me = "crate" if m == root else m
        names = set(CRATE_PATH.findall(text))
        if me == "crate":
            # The root names its modules directly (`trap::start_core`).
            names.update(n for n in files if re.search(rf"\b{n}::", text))
        for match in USE_GROUP.finditer(text):
            names.update(group_names(text, match.end() - 1))
        graph[me] = {module_of(n) for n in names} - {me}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(dirs: list[str]) -> int:
    failed = False
    for d in dirs:
        graph = uses(Path(d))
        for component in cycles(graph):
            failed = True
            edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
            print(f"check-module-cycles: {d}: modules use each other: {', '.join(edges)}")
        if not failed:
            print(f"check-module-cycles: {d}: no cycle among {len(graph)} modules")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
