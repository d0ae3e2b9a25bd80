"""`tandem check-dt`: the device trees the harness generates, validated
against the bindings of what Tandem adds to them (dt-schema's dt-validate).

The schemas: Tandem's own binding of the `tandem` node
(linux/Documentation/devicetree/bindings/firmware/tandem,tandem.yaml,
checked first against dt-schema's meta-schema with dt-doc-validate), and
Linux's bindings of the PSCI node and of the idle states (from the kernel
source the build unpacks), beside dt-schema's core schemas (`/chosen`,
`/cpus`, reserved memory, ...). The trees: every platform configuration's,
one per Linux (partitions each have theirs), with Linux idling through
PSCI and with WFI alone, and `tandem` with static capacities.

dt-validate prints what it finds and exits 0 all the same, so every line it
prints is a finding; the check fails on any, except the known ones in
QEMU's own part of the tree (KNOWN_QEMU), which Tandem does not write.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import capacity, dtb
from tandem.platform.board import Board, load_board
from tandem.platform.configs import Workload, available, load_config
from tandem.platform.paths import BUILD, ROOT

BINDINGS = ROOT / "linux" / "Documentation" / "devicetree" / "bindings"
TANDEM_BINDING = BINDINGS / "firmware" / "tandem,tandem.yaml"
KERNEL_SOURCE = BUILD / "linux-source-6.1"
# Linux's bindings of what Tandem adds beside its own node.
KERNEL_BINDINGS = ("arm/psci.yaml", "cpu/idle-states.yaml")
# Findings in QEMU's own nodes (its tree, dumped as is): a node name and
# what dt-validate says of it. QEMU's platform bus carries an
# interrupt-parent that dt-schema's qemu,platform binding does not list.
KNOWN_QEMU = (("platform-bus@c000000", "'interrupt-parent' does not match any of the regexes"),)
# Linux's command line and initramfs size in the generated trees: any.
BOOTARGS = "console=ttyAMA0 earlycon panic=-1"
INITRD_SIZE = 16 << 20


@dataclass(frozen=True)
class Tree:
    """One generated device tree: what it is for, and the file."""

    label: str
    path: Path


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise TandemError(f"{name} not found: it comes with Debian's dt-schema (run `make setup`)")
    return path


def schemas(out: Path, kernel: bool = True) -> Path:
    """The schema directory: Tandem's binding and (`kernel`) Linux's,
    under the paths their `$id`s name."""
    source = KERNEL_SOURCE / "Documentation" / "devicetree" / "bindings"
    wanted = KERNEL_BINDINGS if kernel else ()
    missing = [b for b in wanted if not (source / b).is_file()]
    if missing:
        raise TandemError(
            f"Linux's bindings {', '.join(missing)} are missing from {KERNEL_SOURCE} "
            "(run `make build`, which unpacks the kernel source)"
        )
    copies = [(source / b, out / b) for b in wanted]
    copies += [(own, out / own.relative_to(BINDINGS)) for own in BINDINGS.rglob("*.yaml")]
    for src, dest in copies:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    return out


def check_binding(binding: Path = TANDEM_BINDING, bindings: Path = BINDINGS) -> list[str]:
    """What dt-doc-validate finds wrong with a binding (meta-schema, `$id`
    against its path); empty when it is right."""
    done = subprocess.run(
        [_tool("dt-doc-validate"), "-u", str(bindings.resolve()), str(binding.resolve())],
        capture_output=True,
        text=True,
        check=False,
    )
    found = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if done.returncode != 0 and not found:
        found.append(f"dt-doc-validate exited {done.returncode}")
    return found


def validate(tree: Path, schema_dir: Path) -> list[str]:
    """dt-validate's findings for one DTB (each with the schema it came
    from), those in KNOWN_QEMU left out; empty when it is valid."""
    done = subprocess.run(
        [_tool("dt-validate"), "-s", str(schema_dir), str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    findings: list[str] = []
    for line in (done.stdout + done.stderr).splitlines():
        if not line.strip():
            continue
        if line.startswith("\tFrom schema:") and findings:
            findings[-1] += "\n" + line
        else:
            findings.append(line.removeprefix(f"{tree}: "))
    if done.returncode != 0 and not findings:
        findings.append(f"dt-validate exited {done.returncode}")
    return [
        f
        for f in findings
        if not any(f.startswith(f"{node}: ") and what in f for node, what in KNOWN_QEMU)
    ]


def generated_trees(out: Path, board: Board | None = None, smp: int = 4) -> list[Tree]:
    """Every configuration's device trees as boots get them (QEMU's tree
    dumped for the machine, Tandem's additions merged in), under `out`."""
    board = board or load_board()
    trees: list[Tree] = []
    for name in available():
        config = load_config(name)
        linux_cores = config.linux_cores(smp)
        # A configuration's partitions are checked on the board they are
        # built for, as a boot checks them.
        config.check_on(board)
        for idle in dtb.LINUX_IDLE:
            partitions = config.partitions_for(smp)
            if not partitions:
                path = out / f"{name}-{idle}.dtb"
                dtb.build_dtb(board, smp, linux_cores, BOOTARGS, INITRD_SIZE, path, linux_idle=idle)
                trees.append(Tree(f"{name}, Linux idle {idle}", path))
            for p in partitions:
                path = out / f"{name}-{p.name}-{idle}.dtb"
                dtb.build_dtb(
                    board,
                    smp,
                    list(p.cores),
                    BOOTARGS,
                    INITRD_SIZE,
                    path,
                    partition=p,
                    linux_idle=idle,
                )
                trees.append(Tree(f"{name}, partition {p.name}, Linux idle {idle}", path))
    tandem = load_config("tandem")
    caps = capacity.static_capacities(Workload(1, 1000, 500), tandem.linux_cores(smp))
    path = out / "tandem-static-capacities.dtb"
    dtb.build_dtb(board, smp, tandem.linux_cores(smp), BOOTARGS, INITRD_SIZE, path, caps)
    trees.append(Tree("tandem, static capacities", path))
    return trees


def check(keep: Path | None = None) -> tuple[list[Tree], dict[str, list[str]]]:
    """Validates the binding, then every generated tree against it; returns
    the trees and what was found, by tree label ("binding" for the binding
    itself); nothing found means all is valid. `keep`: write the trees
    there instead of a temporary directory."""
    found: dict[str, list[str]] = {}
    binding = check_binding()
    if binding:
        found["binding"] = binding
    with tempfile.TemporaryDirectory(prefix="tandem-dt-") as tmp:
        work = Path(tmp)
        schema_dir = schemas(work / "schemas")
        out = keep or work / "trees"
        out.mkdir(parents=True, exist_ok=True)
        trees = generated_trees(out)
        for tree in trees:
            findings = validate(tree.path, schema_dir)
            if findings:
                found[tree.label] = findings
    return trees, found


def main(keep: Path | None = None) -> int:
    """`tandem check-dt`: prints each tree's verdict; 1 if anything was found."""
    trees, found = check(keep)
    if "binding" in found:
        print(f"{TANDEM_BINDING.relative_to(ROOT)}: INVALID")
        for f in found["binding"]:
            print(f"  {f}")
    else:
        print(f"{TANDEM_BINDING.relative_to(ROOT)}: valid (dt-doc-validate)")
    for tree in trees:
        findings = found.get(tree.label, [])
        print(f"{tree.label}: {'INVALID' if findings else 'valid'}")
        for f in findings:
            print("  " + f.replace("\n", "\n  "))
    return 1 if found else 0
