#!/usr/bin/env python3
"""Checks that the modules of a Rust crate import each other in one
direction only, and that none names a crate it must not know.

    scripts/check-module-cycles.py SRC_DIR [--forbid CRATE]...

A module is a file of SRC_DIR (`name.rs` or `name/mod.rs`; `lib.rs` or
`main.rs` is the root). Module A depends on B when A names `crate::B`
(`super::B`), uses a macro B defines, or, in the root, calls `B::`; the
root's `mod` and `pub use` lines are declarations, not dependencies. A cycle
is reported with its path. `--forbid` names crates no module may name (an
application crate, for a firmware that must not call back into one)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(text: str) -> str:
    """The source without `//` comments (strings holding `//` are rare
    enough in firmware to ignore)."""
    return re.sub(r"//[^\n]*", "", text)


def modules(src: Path) -> dict[str, str]:
    """Module name -> source text, the root as `crate`."""
    out: dict[str, str] = {}
    for path in sorted(src.glob("*.rs")):
        name = "crate" if path.stem in ("lib", "main") else path.stem
        out[name] = strip_comments(path.read_text())
    for path in sorted(src.glob("*/mod.rs")):
        out[path.parent.name] = strip_comments(path.read_text())
    return out


def macros(mods: dict[str, str]) -> dict[str, str]:
    """Macro name -> the module that defines it."""
    return {
        m.group(1): name
        for name, text in mods.items()
        for m in re.finditer(rf"macro_rules!\s*({IDENT})", text)
    }


def braced_names(text: str, start: int) -> list[str]:
    """The first path segment of each item in the `{...}` at `start`."""
    depth, item, names = 0, "", []
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            names.append(item)
            item = ""
        elif depth >= 1:
            item += ch
    names.append(item)
    return [m.group(0) for n in names if (m := re.match(IDENT, n.strip()))]


def dependencies(name: str, text: str, mods: dict[str, str], defined: dict[str, str]) -> set[str]:
    """The modules `name` depends on."""
    found: set[str] = set()
    for m in re.finditer(r"(?<![$\w])(?:crate|super)::(\{|" + IDENT + ")", text):
        if m.group(1) == "{":
            found.update(braced_names(text, m.start(1)))
        else:
            found.add(m.group(1))
    found.update(m.group(1) for m in re.finditer(rf"\b({IDENT})!", text) if m.group(1) in defined)
    if name == "crate":
        body = re.sub(r"^\s*(pub(\([^)]*\))?\s+)?(mod|use)\b[^;]*;", "", text, flags=re.M)
        found.update(m.group(1) for m in re.finditer(rf"(?<![:\w])({IDENT})::", body))
    deps = {defined.get(d, d) for d in found}
    # A name that is not a module is an item of the root.
    deps = {d if d in mods else "crate" for d in deps}
    deps.discard(name)
    return deps


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` as a path, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return [*stack[stack.index(d) :], d]
            if d not in state and (cycle := visit(d)):
                return cycle
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (cycle := visit(n)):
            return cycle
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("--forbid", action="append", default=[])
    args = parser.parse_args()
    mods = modules(args.src)
    defined = macros(mods)
    status = 0
    for name, text in mods.items():
        for crate in args.forbid:
            if re.search(rf"(?<![\w$]){re.escape(crate)}::", text):
                print(f"check-module-cycles: {args.src}: {name} names {crate}", file=sys.stderr)
                status = 1
    graph = {name: dependencies(name, text, mods, defined) for name, text in mods.items()}
    cycle = find_cycle(graph)
    if cycle:
        print(
            f"check-module-cycles: {args.src}: modules import in a loop: {' -> '.join(cycle)}",
            file=sys.stderr,
        )
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
