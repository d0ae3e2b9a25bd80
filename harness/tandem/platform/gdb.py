"""A gdb session on all three images: `--gdb` on `run` and `exec` makes
QEMU wait for gdb (its gdb stub on a unix socket in the boot's private log
directory, every core stopped before its first instruction), and the
boot's log directory gets a gdb script that
loads the monitor's, the RTOS's and Linux's symbols at their load addresses
(each ELF is linked where it runs: the monitor at secure flash and RAM, the
RTOS at its secure RAM, vmlinux at its kernel virtual addresses, Linux
having no KASLR) and connects. `./tandem gdb` starts gdb-multiarch with the
script of the boot that waits.

QEMU's breakpoints are its own (checked as it translates code, by address),
not the architecture's: they stop a core at EL3, S-EL1 or NS-EL1 alike,
whatever the secure debug settings (MDCR_EL3.SDD). Each core is a thread
(`info threads`).

Why a unix socket and not a TCP port: QEMU's stub passes gdb's `monitor`
command to QEMU's own monitor (`pmemsave` writes guest bytes to any host
path QEMU can write, `xp` reads secure RAM), and a TCP port on 127.0.0.1
is open to every local user of the host while QEMU waits or after gdb
detaches. The socket lives in the boot's log directory, which only its
owner may enter (mode 0700, `logdir.new_log_dir`), so only the user who
started the boot can connect (docs/security.md, issue 46 hole 1).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import logdir
from tandem.platform.paths import KERNEL, LOGS, firmware_elf

PROGRAM = "gdb-multiarch"
SCRIPT = "gdbinit"
# The stub's socket in the boot's log directory, and QEMU's name for it.
SOCKET = "gdb.sock"
CHARDEV_ID = "tandem-gdb"
# A unix socket's path, with its terminating NUL, fits sockaddr_un.sun_path.
SOCKET_PATH_MAX = 107


def socket_path(run_dir: Path) -> Path:
    """Where QEMU's stub listens for this boot; an error if the path is too
    long for a unix socket (a clone in a deep directory)."""
    path = run_dir.resolve() / SOCKET
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise TandemError(
            f"--gdb: the stub's socket path {path} is longer than a unix socket's "
            f"{SOCKET_PATH_MAX} bytes: clone Tandem into a shorter path"
        )
    return path


def qemu_args(run_dir: Path) -> list[str]:
    """QEMU's options for the stub: a unix socket server in the boot's
    private directory (no TCP port), every core stopped (-S)."""
    path = socket_path(run_dir)
    return [
        "-chardev",
        f"socket,id={CHARDEV_ID},path={path},server=on,wait=off",
        "-gdb",
        f"chardev:{CHARDEV_ID}",
        "-S",
    ]


def vmlinux_for(kernel: Path | None) -> Path:
    """The vmlinux beside a kernel Image (its build directory's, as Linux's
    build leaves them: O/arch/arm64/boot/Image and O/vmlinux)."""
    image = kernel or KERNEL
    return image.resolve().parents[3] / "vmlinux"


def symbol_files(kernel: Path | None, partitions: bool, board: str) -> list[Path]:
    """The ELF files gdb loads: `board`'s monitor and RTOS (each board's
    firmware is linked at its own addresses; Makefile: the ELF beside each
    binary), the EL2 layer with partitions, and Linux; an error naming any
    that is missing."""
    images = ["tandem-monitor", "tandem-rtos", *(["tandem-hyp"] if partitions else [])]
    files = [*(firmware_elf(board, i) for i in images), vmlinux_for(kernel)]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise TandemError(f"--gdb: no symbols in {', '.join(missing)} (run `make build`)")
    return files


def script(socket: Path, files: list[Path]) -> str:
    """gdb's commands: aarch64, every image's symbols at the addresses its
    ELF gives, then the connection to QEMU's stub on its unix socket."""
    lines = [
        "# Written by `tandem --gdb` for this boot: `./tandem gdb` runs it.",
        "set pagination off",
        "set confirm off",
        "set architecture aarch64",
    ]
    lines += [f"add-symbol-file {f}" for f in files]
    lines.append(f"target remote {socket}")
    return "\n".join(lines) + "\n"


def write_script(run_dir: Path, kernel: Path | None, partitions: bool, board: str) -> Path:
    """The boot's gdb script (LOGDIR/gdbinit)."""
    path = run_dir / SCRIPT
    path.write_text(script(socket_path(run_dir), symbol_files(kernel, partitions, board)))
    return path


def program() -> str:
    """gdb-multiarch's path; an error saying how to get it."""
    path = shutil.which(PROGRAM)
    if path is None:
        raise TandemError(f"{PROGRAM} not found (run `make setup`: Debian's gdb-multiarch)")
    return path


def argv(script_path: Path, extra: list[str]) -> list[str]:
    """gdb-multiarch with the boot's script, then `extra` (e.g. -batch -ex ...)."""
    return [program(), "-q", "-x", str(script_path), *extra]


def waiting_script(logs: Path = LOGS) -> Path:
    """The newest boot's gdb script whose boot still runs (its log
    directory held: `logdir.in_use`) and whose stub listens: the script is
    written before QEMU starts, and gdb can connect only once QEMU has
    made the socket."""

    scripts = sorted(logs.glob(f"*/{SCRIPT}")) if logs.is_dir() else []
    for path in reversed(scripts):
        sock = path.parent / SOCKET
        if logdir.in_use(path.parent) and sock.is_socket():
            return path
    raise TandemError(
        "no boot is waiting for gdb: start one with `./tandem run --gdb` or "
        "`./tandem exec --gdb -- COMMANDS` (it prints where gdb connects)"
    )


def main(script_path: Path | None, extra: list[str]) -> int:
    """`tandem gdb`: replaces this process with gdb-multiarch."""
    path = script_path or waiting_script()
    if not path.is_file():
        raise TandemError(f"no gdb script {path}")
    command = argv(path, extra)
    print(f"tandem: {' '.join(command)}", flush=True)
    os.execv(command[0], command)
    return 0  # not reached
