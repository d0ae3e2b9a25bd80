"""Checks that this machine's QEMU can boot Tandem (`make setup` runs it).

Not just QEMU's version: QEMU builds Tandem's exact machine from the same
command line a boot uses (so a missing ROM or data file of any device that
command line names shows up here, at set-up, rather than at the first
boot), it loads TCG plugins (tandem-pathcount needs them), and, once built,
the memory model's plugin finds Tandem's entry points in it (QEMU patch
0006).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import memmodel, qemu_command
from tandem.platform.board import load_board

# Plugin API version 4 (tandem-pathcount) came with QEMU 9.2; Tandem is
# built and measured on 10.0.
QEMU_MIN = (10, 0)
VERSION = re.compile(r"QEMU emulator version (\d+)\.(\d+)")
PLUGIN_LOAD_ATTEMPT = "Could not load plugin"


@dataclass(frozen=True)
class Check:
    """One thing checked, and what was found."""

    what: str
    ok: bool
    detail: str


def parse_version(text: str) -> tuple[int, int]:
    """(major, minor) from QEMU's `--version` output."""
    m = VERSION.search(text)
    if not m:
        raise TandemError(f"cannot read QEMU's version from: {text.strip()[:200]!r}")
    return int(m.group(1)), int(m.group(2))


def _version() -> Check:
    try:
        text = qemu_command.run(qemu_command.version_argv(), "QEMU").stdout.decode()
        version = parse_version(text)
    except TandemError as e:
        return Check("QEMU version", False, str(e))
    want = ".".join(map(str, QEMU_MIN))
    got = ".".join(map(str, version))
    if version < QEMU_MIN:
        return Check("QEMU version", False, f"{got}, need >= {want}")
    return Check("QEMU version", True, f"{got} (>= {want})")


def _machine() -> Check:
    board = load_board()
    what = f"QEMU builds Tandem's machine ({board.qemu_machine}, {board.max_cores} cores)"
    with tempfile.TemporaryDirectory() as tmp:
        blank = Path(tmp) / "blank.bin"
        blank.write_bytes(b"\0" * 4)
        dumped = Path(tmp) / "machine.dtb"
        # A machine with every core the board has: the largest Tandem boots.
        argv = qemu_command.dump_dtb_argv(board, board.max_cores, blank, dumped)
        try:
            qemu_command.run(argv, "QEMU")
        except TandemError as e:
            return Check(what, False, str(e))
        if not dumped.exists() or dumped.stat().st_size == 0:
            return Check(what, False, "QEMU exited without writing the device tree")
    return Check(what, True, "every device on the command line has what it needs")


def _plugins() -> Check:
    what = "QEMU loads TCG plugins"
    with tempfile.TemporaryDirectory() as tmp:
        absent = Path(tmp) / "absent.so"
        try:
            qemu_command.run(qemu_command.plugin_probe_argv(absent), "QEMU")
        except TandemError as e:
            # A QEMU with plugin support tries to open the file and says so;
            # one without rejects the option itself.
            if PLUGIN_LOAD_ATTEMPT in str(e):
                return Check(what, True, "plugin support built in")
            return Check(what, False, str(e))
    return Check(what, False, "QEMU accepted a plugin that does not exist")


MEMPLUGIN_CHECK = "tandem-memplugin: check:"


def _memory_model() -> Check:
    what = "QEMU runs the memory model's plugin (patch 0006's entry points)"
    if not memmodel.PLUGIN.exists():
        return Check(what, True, f"skipped: {memmodel.PLUGIN.name} not built yet (make build)")
    argv = qemu_command.memplugin_check_argv(memmodel.PLUGIN)
    try:
        done = qemu_command.run(argv, "QEMU")
    except TandemError as e:
        return Check(what, False, str(e))
    said = done.stderr.decode(errors="replace")
    if MEMPLUGIN_CHECK not in said:
        return Check(what, False, f"the plugin did not answer: {said.strip()[:200]!r}")
    return Check(what, True, said.split(MEMPLUGIN_CHECK, 1)[1].strip())


def check_qemu() -> list[Check]:
    """Every check, in order; later ones are skipped once QEMU is missing."""
    version = _version()
    if not version.ok:
        return [version]
    checks = [version, _machine(), _plugins()]
    if checks[-1].ok:
        checks.append(_memory_model())
    return checks
