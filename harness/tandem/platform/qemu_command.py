"""QEMU's command line: the one place Tandem builds and starts QEMU.

Every boot, the device-tree dump, the version query and every instrument
(execution log, plugins) get their options here, and QEMU is started only
by `spawn` and `run` below. The command line names every device Tandem uses
and nothing else: `-nodefaults` drops what the `virt` board would add on its
own (a virtio-net PCI NIC whose option ROM comes from a package set-up does
not install, a default serial port, monitor and parallel port), so a boot
needs nothing from the machine beyond what `make setup` installs.

The devices a boot has:
- serial0 (PL011 at 0x0900_0000): Linux's console, on stdio;
- serial1 (PL011 at 0x0904_0000, secure): the monitor's and RTOS's console,
  to a file;
- with partitions, serial2 (PL011 at 0x090C_0000, Tandem's QEMU patch 0005):
  the second Linux's console; whichever partition runs the commands has
  its console on stdio, the other's goes to a file;
- generic loaders placing the boot configuration, kernel, DTB and initramfs
  in normal RAM, and the firmware in secure flash (`-bios`);
- optionally one virtio-blk disk on virtio-mmio (no option ROM), its
  throughput optionally throttled.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.errors import TandemError
from tandem.platform.board import Board
from tandem.platform.paths import QEMU_INSTALL
from tandem.platform.timing import Timing

PROGRAM = "qemu-system-aarch64"


def program() -> str:
    """The QEMU binary every invocation uses: Tandem's build of Debian's
    source with its patches (scripts/build-qemu.sh), in every timing mode."""
    return str(QEMU_INSTALL / "bin" / PROGRAM)


# QEMU's serial ports with partitions: the first and second Linux's consoles
# and the secure console between them (qemu/patches/0005).
PARTITION_SERIALS = 3


def machine_args(board: Board, smp: int, el2: bool = False) -> list[str]:
    """The options that decide the machine (with its serial ports, which
    `serial_args` adds), and so QEMU's device tree. `el2`: EL2 on, for
    partitions."""
    return [
        "-machine",
        board.qemu_machine_el2 if el2 else board.qemu_machine,
        "-cpu",
        board.qemu_cpu,
        "-smp",
        str(smp),
        "-m",
        board.qemu_memory,
        "-nodefaults",
    ]


def version_argv() -> list[str]:
    """Asks QEMU for its version."""
    return [program(), "--version"]


def dump_dtb_argv(
    board: Board, smp: int, firmware: Path, out: Path, el2: bool = False
) -> list[str]:
    """Writes QEMU's own device tree for this machine to `out` and exits."""
    args = machine_args(board, smp, el2)
    i = args.index("-machine") + 1
    args[i] = f"{args[i]},dumpdtb={out}"
    # With partitions the third serial port makes the second Linux's UART.
    serials = ["-serial", "null"] * PARTITION_SERIALS if el2 else []
    return [program(), *args, *serials, "-bios", str(firmware), "-display", "none"]


def plugin_probe_argv(library: Path) -> list[str]:
    """Starts a machine-less QEMU that loads `library` as a plugin (set-up's
    check for plugin support)."""
    return [program(), "-machine", "none", "-display", "none", *plugin_args(library, [])]


def memplugin_check_argv(library: Path) -> list[str]:
    """Starts a machine-less QEMU whose memory-model plugin checks its
    install (patch 0006's entry points, a profile) and ends QEMU."""
    options = ["profile=a53", "out=/dev/null", "check=on"]
    return [program(), "-machine", "none", "-display", "none", *plugin_args(library, options)]


@dataclass(frozen=True)
class Load:
    """A file QEMU's generic loader places at a physical address."""

    path: Path
    address: int


def boot_argv(
    board: Board,
    smp: int,
    timing: Timing,
    firmware: Path,
    loads: list[Load],
    secure_log: Path,
    interactive: bool,
    disk: Path | None = None,
    disk_bps: int = 0,
    instruments: tuple[str, ...] = (),
    consoles: tuple[Path | None, Path | None] | None = None,
    run_dir: Path | None = None,
    gdb: list[str] | None = None,
) -> list[str]:
    """A whole boot's command line.

    `interactive` multiplexes QEMU's monitor onto the Linux console (Ctrl-A X
    quits); otherwise stdio carries only the console. `instruments` are
    options from `exec_log_args` or `plugin_args`. `consoles` (partitions:
    EL2 on, a second Linux): the first and second Linux's consoles, a file
    each or None for stdio (exactly one). `run_dir`: where the memory
    model (if the timing has one) writes its counters. `disk_bps`: the
    disk's throughput limit in bytes per second (0: none). `gdb`: the
    options of QEMU's gdb stub (`gdb.qemu_args`: a unix socket, every core
    stopped until gdb continues)."""
    el2 = consoles is not None
    argv = [program(), *machine_args(board, smp, el2), *timing.qemu_args(run_dir)]
    argv += ["-bios", str(firmware)]
    for load in loads:
        argv += ["-device", f"loader,file={load.path},addr={load.address:#x},force-raw=on"]
    argv += ["-display", "none", "-monitor", "none"]
    stdio = "mon:stdio" if interactive else "stdio"
    if consoles is None:
        ports = {"normal": stdio, "secure": f"file:{secure_log}", "null": "null"}
        for role in board.qemu_serials:
            argv += ["-serial", ports[role]]
    else:
        first, second = consoles
        if (first is None) == (second is None):
            raise TandemError("one Linux console on stdio, the other to a file")
        argv += ["-serial", stdio if first is None else f"file:{first}"]
        argv += ["-serial", f"file:{secure_log}"]
        argv += ["-serial", stdio if second is None else f"file:{second}"]
    if disk is not None:
        throttle = f",throttling.bps-total={disk_bps}" if disk_bps else ""
        argv += [
            "-drive",
            f"file={disk},if=none,format=raw,id=disk0{throttle}",
            "-device",
            "virtio-blk-device,drive=disk0",
        ]
    if gdb is not None:
        argv += gdb
    return argv + list(instruments)


def exec_log_args(address_filter: str, log: str) -> tuple[str, ...]:
    """QEMU's execution log of the code in `address_filter` (ranges
    `lo..hi`, comma-separated), one line per block run, into `log`."""
    return ("-d", "in_asm,exec,nochain", "-dfilter", address_filter, "-D", log)


def plugin_args(library: Path, options: list[str]) -> tuple[str, ...]:
    """Loads a TCG plugin with `key=value` options."""
    return ("-plugin", ",".join([str(library), *options]))


class QemuInHostTest(TandemError):
    """Raised by the test suite's guard when a test not marked `qemu` starts QEMU."""


def spawn(argv: list[str], **popen: Any) -> subprocess.Popen[bytes]:  # noqa: ANN401
    """Starts QEMU in the background (a boot)."""
    _check_argv(argv)
    try:
        return subprocess.Popen(argv, **popen)
    except FileNotFoundError as e:
        raise TandemError(f"{argv[0]} not found (run `make setup`)") from e


def run(argv: list[str], what: str) -> subprocess.CompletedProcess[bytes]:
    """Runs QEMU to completion (a query or a dump); fails with its message."""
    _check_argv(argv)
    try:
        return subprocess.run(argv, check=True, capture_output=True)
    except FileNotFoundError as e:
        raise TandemError(f"{what}: {argv[0]} not found (run `make setup`)") from e
    except subprocess.CalledProcessError as e:
        raise TandemError(f"{what} failed: {e.stderr.decode(errors='replace').strip()}") from e


def _check_argv(argv: list[str]) -> None:
    if not argv or argv[0] != program():
        raise TandemError(
            f"not a QEMU command line built by tandem.platform.qemu_command: {argv[:2]}"
        )
    if not Path(argv[0]).exists():
        raise TandemError(f"QEMU is not built yet: {argv[0]} is missing (run `make build`)")
