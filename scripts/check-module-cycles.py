#!/usr/bin/env python3
"""Checks that modules import each other in one direction only: within a
Rust crate, between the harness's Python modules, and between the Rust
workspace's crates.

    scripts/check-module-cycles.py SRC_DIR [--forbid CRATE]...
    scripts/check-module-cycles.py --python PACKAGE_DIR
    scripts/check-module-cycles.py --workspace REPO_DIR

SRC_DIR: a Rust crate's modules. A module is a file of SRC_DIR (`name.rs`
or `name/mod.rs`; `lib.rs` or `main.rs` is the root). Module A depends on B
when A names `crate::B` (`super::B`), uses a macro B defines, or, in the
root, calls `B::`; the root's `mod` and `pub use` lines are declarations,
not dependencies. A cycle is reported with its path. `--forbid` names
crates no module may name (an application crate, for a firmware that must
not call back into one).

--python: the harness's package (harness/tandem). Module A depends on B
when A imports B anywhere (at the top, in a function, for type checking
only: each is a dependency of the design); `from P import N` depends on
P.N where that is a module, else on P. An import of a package's module
does not count as one of the package's __init__. Besides cycles, an
import up the package's layers (PYTHON_LAYERS) is a breach, and so is a
module in no layer.

--workspace: the crates of REPO_DIR/Cargo.toml's workspace, by their
[dependencies], [build-dependencies] and [dev-dependencies] on each other.
Besides cycles, a crate depending on a crate of a higher layer
(RUST_LAYERS, by the crate's directory) is a breach, and so is a crate in
no layer: a generator that reads several crates belongs in a tools crate
above them.

Prints each breach and exits 1 if there is one."""

from __future__ import annotations

import argparse
import ast
import fnmatch
import re
import sys
import tomllib
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# The harness's layers, lowest first: a module may import its own layer's
# and lower layers' modules, never a higher layer's. "P.*" is package P
# and everything under it; other names are one module. From the package's
# layout: errors and files written whole (results.py, which the platform's
# files use too) at the bottom; the platform (booting Tandem) knows
# nothing of measuring; runs' bookkeeping (boots side by side, provenance,
# claims) uses the platform; instruments measure with both; experiments
# are made of instruments; the command line is on top.
PYTHON_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("tandem", "tandem.errors", "tandem.results", "tandem.stats")),
    ("platform", ("tandem.platform.*",)),
    ("runs", ("tandem.pool", "tandem.provenance", "tandem.claims")),
    ("instruments", ("tandem.instruments.*",)),
    ("experiments", ("tandem.exp.*",)),
    ("command line", ("tandem.cli", "tandem.__main__")),
)

# The Rust workspace's layers, lowest first, by the crate's directory
# (fnmatch patterns): what the worlds share (the ABI, boards as data,
# locks, the UART driver, the page-table crate); the pure, host-tested cores; the firmware
# images made of them; and host-side tools, generators and QEMU plugins,
# which may read any crate below.
RUST_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shared", ("abi", "abi/*", "boards", "lock", "paging", "runtime", "uart")),
    ("cores", ("*/core", "rtos/kernel", "rtos/mm", "rtos/rpmsg")),
    ("firmware", ("*/firmware", "rtos/apps")),
    ("host tools", ("tools/*", "harness/*", "qemu/*")),
)


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


def dependencies(
    name: str, text: str, mods: dict[str, str], defined: dict[str, str]
) -> set[str]:
    """The modules `name` depends on."""
    found: set[str] = set()
    for m in re.finditer(r"(?<![$\w])(?:crate|super)::(\{|" + IDENT + ")", text):
        if m.group(1) == "{":
            found.update(braced_names(text, m.start(1)))
        else:
            found.add(m.group(1))
    found.update(
        m.group(1) for m in re.finditer(rf"\b({IDENT})!", text) if m.group(1) in defined
    )
    if name == "crate":
        body = re.sub(
            r"^\s*(pub(\([^)]*\))?\s+)?(mod|use)\b[^;]*;", "", text, flags=re.MULTILINE
        )
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


def python_modules(package: Path) -> dict[str, Path]:
    """Module name -> file, for every module of `package` (a package's
    __init__.py is the package's name)."""
    out: dict[str, Path] = {}
    root = package.parent
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def python_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that module `name` (file `path`) imports."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        # The longest prefix that is a module: `import a.b.c` of a
        # function c in module a.b is a dependency on a.b.
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(m for a in node.names if (m := resolve(a.name)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                m = (
                    resolve(f"{base}.{a.name}")
                    if f"{base}.{a.name}" in known
                    else resolve(base)
                )
                if m:
                    found.add(m)
    found.discard(name)
    return found


def layer_of(name: str, layers: tuple[tuple[str, tuple[str, ...]], ...]) -> int | None:
    """The index of the layer `name` is in (PYTHON_LAYERS' patterns), or None."""
    for i, (_, patterns) in enumerate(layers):
        for pattern in patterns:
            if pattern.endswith(".*"):
                stem = pattern[:-2]
                if name == stem or name.startswith(stem + "."):
                    return i
            elif name == pattern:
                return i
    return None


def upward(
    graph: dict[str, set[str]], layer: dict[str, int], names: list[str], what: str
) -> list[str]:
    """Each dependency from a lower layer to a higher one, in words."""
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if layer[a] < layer[b]:
                out.append(
                    f"{what} {a} ({names[layer[a]]}) depends on {b} ({names[layer[b]]}), "
                    "a higher layer"
                )
    return out


def check_python(package: Path) -> list[str]:
    """Cycles, upward imports and modules in no layer, in the harness."""
    known = python_modules(package)
    graph = {name: python_imports(name, path, known) for name, path in known.items()}
    names = [n for n, _ in PYTHON_LAYERS]
    layer: dict[str, int] = {}
    out = []
    for name in sorted(known):
        i = layer_of(name, PYTHON_LAYERS)
        if i is None:
            out.append(
                f"{name}: in no layer (scripts/check-module-cycles.py, PYTHON_LAYERS)"
            )
        else:
            layer[name] = i
    if out:
        return out
    cycle = find_cycle(graph)
    if cycle:
        out.append(f"{package}: modules import in a loop: {' -> '.join(cycle)}")
    return out + upward(graph, layer, names, "module")


def crates(repo: Path) -> dict[str, tuple[str, set[str]]]:
    """Crate name -> (its directory from `repo`, the names it depends on)."""
    workspace = tomllib.loads((repo / "Cargo.toml").read_text())["workspace"]
    out: dict[str, tuple[str, set[str]]] = {}
    for member in workspace["members"]:
        manifest = tomllib.loads((repo / member / "Cargo.toml").read_text())
        tables = [manifest.get(k, {}) for k in DEPENDENCY_TABLES]
        for target in manifest.get("target", {}).values():
            tables += [target.get(k, {}) for k in DEPENDENCY_TABLES]
        deps = set()
        for table in tables:
            for key, spec in table.items():
                renamed = spec.get("package") if isinstance(spec, dict) else None
                deps.add(renamed or key)
        out[manifest["package"]["name"]] = (member, deps)
    return out


DEPENDENCY_TABLES = ("dependencies", "build-dependencies", "dev-dependencies")


def check_workspace(repo: Path) -> list[str]:
    """Cycles, upward dependencies and crates in no layer, in the workspace."""
    found = crates(repo)
    graph = {name: deps & set(found) - {name} for name, (_, deps) in found.items()}
    names = [n for n, _ in RUST_LAYERS]
    layer: dict[str, int] = {}
    out = []
    for name, (directory, _) in sorted(found.items()):
        i = next(
            (
                i
                for i, (_, patterns) in enumerate(RUST_LAYERS)
                if any(fnmatch.fnmatchcase(directory, p) for p in patterns)
            ),
            None,
        )
        if i is None:
            out.append(
                f"{directory} ({name}): in no layer (scripts/check-module-cycles.py, RUST_LAYERS)"
            )
        else:
            layer[name] = i
    if out:
        return out
    cycle = find_cycle(graph)
    if cycle:
        out.append(
            f"{repo}/Cargo.toml: crates depend on each other in a loop: {' -> '.join(cycle)}"
        )
    shown = {n: f"{n} [{found[n][0]}]" for n in found}
    return out + upward(
        {shown[k]: {shown[d] for d in v} for k, v in graph.items()},
        {shown[k]: v for k, v in layer.items()},
        names,
        "crate",
    )


def check_crate(src: Path, forbid: list[str]) -> list[str]:
    """Cycles between one Rust crate's modules, and the crates they may not name."""
    mods = modules(src)
    defined = macros(mods)
    out = []
    for name, text in mods.items():
        for crate in forbid:
            if re.search(rf"(?<![\w$]){re.escape(crate)}::", text):
                out.append(f"{src}: {name} names {crate}")
    graph = {
        name: dependencies(name, text, mods, defined) for name, text in mods.items()
    }
    cycle = find_cycle(graph)
    if cycle:
        out.append(f"{src}: modules import in a loop: {' -> '.join(cycle)}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, nargs="?")
    parser.add_argument("--forbid", action="append", default=[])
    parser.add_argument("--python", type=Path, metavar="PACKAGE_DIR")
    parser.add_argument("--workspace", type=Path, metavar="REPO_DIR")
    args = parser.parse_args()
    if sum(x is not None for x in (args.src, args.python, args.workspace)) != 1:
        parser.error("give one of SRC_DIR, --python PACKAGE_DIR, --workspace REPO_DIR")
    if args.python is not None:
        found = check_python(args.python)
    elif args.workspace is not None:
        found = check_workspace(args.workspace)
    else:
        found = check_crate(args.src, args.forbid)
    for line in found:
        print(f"check-module-cycles: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
