"""Booting Tandem on QEMU: assemble the inputs, start QEMU, run commands in
Linux and collect what they print.

Timing modes: platform/timing.py (docs/design.md, "Time and measurement").
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tandem.errors import TandemError
from tandem.platform import capacity, cpio, dtb, flash, gdb, memmodel, qemu_command
from tandem.platform.apps import AppRun, workload_blob
from tandem.platform.board import DEFAULT_BOARD, Board, load_board
from tandem.platform.configs import Ctxsw, Partition, PlatformConfig, Workload, load_config
from tandem.platform.paths import BUILD, INITRAMFS, KERNEL, LOGS, firmware, missing_artifacts
from tandem.platform.timing import Timing

# A boot's timing unless it asks for another (`run` and `exec` pick per
# host: choose_timing).
HOST_TIMING = Timing()
BEGIN = "@@TANDEM-EXEC-BEGIN@@"
END = re.compile(r"@@TANDEM-EXEC-END status=(\d+)@@")
RESTART = re.compile(r"^\[\s*\d+\.\d+\] reboot: Restarting system$")
# Linux's panic message, and how many console lines after it to report.
PANIC = "Kernel panic - not syncing"
PANIC_LINES = 30
# How run_exec writes console logs (and read_console_log reads them).
CONSOLE_ENCODING = "utf-8"
# Seconds QEMU may take to exit once the commands are done (poweroff).
POWEROFF_GRACE_S = 10.0
# The blank disk BootOptions.disk_mib asks for, in the boot's log directory.
DISK_NAME = "disk.img"
# The secure flash a boot starts from (platform/flash.py), removed afterwards.
FLASH_NAME = "flash.bin"
# Boot log directories kept under build/logs (oldest removed first).
KEEP_LOGS = 100
# In a boot's log directory: a file locked (flock) while the boot runs, so
# that pruning leaves the directory alone, whichever process runs the boot.
IN_USE = ".in-use"


@dataclass(frozen=True)
class BootOptions:
    """How to boot: platform configuration, timing mode, number of cores."""

    config: str = "tandem"
    # The board (boards/NAME.toml).
    board: str = DEFAULT_BOARD
    # How QEMU keeps time (mode and quantum), checked when made.
    timing: Timing = HOST_TIMING
    smp: int = 4
    # `exec` commands start this many µs after Linux is up: a controlled
    # phase against the RTOS's releases and Linux's ticks, so repetitions
    # differ in the deterministic timing modes (exp/common.rep_phase_us).
    phase_us: int = 0
    extra_bootargs: str = ""
    # Instruments on QEMU's command line (qemu_command.exec_log_args or
    # plugin_args); "{run_dir}" in them stands for the boot's log directory.
    extra_qemu_args: tuple[str, ...] = ()
    # A blank virtio-blk disk of this many MiB (a sparse host file in the
    # boot's log directory, removed afterwards), /dev/vda in Linux; 0: none.
    disk_mib: int = 0
    # The disk's throughput in bytes per second (QEMU's block throttling),
    # so that its requests stay in flight for host seconds; 0: unlimited.
    disk_bps: int = 0
    # What the RTOS runs (None: its demo application).
    workload: Workload | None = None
    # Protected tasks handing off (paper 004); instead of `workload`.
    ctxsw: Ctxsw | None = None
    # How Linux learns what the RTOS takes of each core: none, static (device
    # tree capacities), steal (PV stolen time) or both (platform/capacity.py).
    capacity: str = "none"
    # Cores running an RPC server (None: the highest RTOS core, see
    # PlatformConfig.default_rpc_cores; (): no RPC service).
    rpc_cores: tuple[int, ...] | None = None
    # Further RTOS applications to select, with their parameters
    # (rtos/apps/NAME/app.toml), in the workload blob.
    apps: tuple[AppRun, ...] = ()
    # What Linux's power-off does ("rtos-runs-on" or "machine-off"); None:
    # the configuration's for `run`, "machine-off" for `exec`, whose boot
    # ends with the commands.
    linux_off: str | None = None
    # With partitions: the one whose Linux runs `exec`'s commands and has
    # its console on stdio (None: the first).
    partition: str | None = None
    # With partitions: commands for other partitions' Linux, by name, run
    # at the same time (their output is in ExecResult.partitions).
    partition_scripts: tuple[tuple[str, str], ...] = ()
    # Another Linux image than Tandem's (build/linux/.../Image), e.g. the
    # latency-tracing kernel of `make trace-kernel`; None: Tandem's.
    kernel: Path | None = None
    # How Linux idles (dtb.LINUX_IDLE): "psci", cpuidle with the board's
    # idle states through PSCI CPU_SUSPEND beside WFI; "wfi", WFI alone.
    linux_idle: str = "psci"
    # Host files and directories put into the guest's file system for this
    # boot (`--add HOST[:GUEST]`), appended to the initramfs.
    add: tuple[cpio.Added, ...] = ()
    # QEMU waits for gdb before the first instruction (`--gdb`), its stub
    # on a unix socket in the boot's private log directory (gdb.qemu_args).
    gdb: bool = False


@dataclass
class Prepared:
    """Everything one QEMU boot needs, on disk, plus its command line."""

    argv: list[str]
    secure_log: Path
    console_log: Path
    run_dir: Path
    # With partitions: the console logs of those not on stdio, by name.
    consoles: dict[str, Path] = field(default_factory=dict)
    # Holds run_dir as in use (_new_log_dir) until `release`.
    in_use: BinaryIO | None = None

    def release(self) -> None:
        """The boot is over: its log directory may be pruned."""
        if self.in_use is not None:
            self.in_use.close()


def choose_timing(requested: str, smp: int, host_cores: int) -> tuple[str, str]:
    """The timing mode for `requested` ("auto" or one of timing.MODES), with why.

    Host timing needs a host core per emulated core: with fewer, the host
    deschedules vCPU threads for milliseconds and the RTOS misses releases
    that it would meet on hardware. Auto picks per-core timing then, and says
    so.
    """
    if requested != "auto":
        return requested, "as asked"
    if host_cores >= smp:
        return "host", f"auto: {host_cores} host cores for {smp} emulated"
    return "percore", (
        f"auto: only {host_cores} host cores for {smp} emulated, so host timing would "
        "miss RTOS releases; per-core clocks instead, which run ahead of the wall clock "
        "while every core idles; --timing host overrides"
    )


def _check(options: BootOptions, board: Board) -> None:
    if not 1 <= options.smp <= board.max_cores:
        raise TandemError(f"--smp must be 1..{board.max_cores}, got {options.smp}")
    if not 0 <= options.phase_us <= 10_000_000:
        raise TandemError(f"phase must be 0..10 s, got {options.phase_us} µs")
    capacity.check(options.capacity)
    if options.linux_idle not in dtb.LINUX_IDLE:
        raise TandemError(
            f"Linux idle mode must be one of {', '.join(dtb.LINUX_IDLE)}, "
            f"got '{options.linux_idle}'"
        )
    for a in options.add:
        a.check()
    if not 0 <= options.disk_mib <= 65536:
        raise TandemError(f"disk size must be 0..65536 MiB, got {options.disk_mib}")
    if options.disk_bps < 0 or (options.disk_bps and not options.disk_mib):
        raise TandemError(f"a disk throughput needs a disk and >= 0, got {options.disk_bps}")
    missing = missing_artifacts(board.name)
    if options.timing.memmodel is not None and not memmodel.PLUGIN.exists():
        missing.append(memmodel.PLUGIN)
    if missing:
        names = ", ".join(str(p.relative_to(BUILD.parent)) for p in missing)
        raise TandemError(f"not built yet: {names} (run `make build`)")


def _in_use(log_dir: Path) -> bool:
    """Whether a running boot, of this process or another, holds the log
    directory (its IN_USE file locked)."""
    try:
        f = (log_dir / IN_USE).open("rb")
    except FileNotFoundError:
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            # A file system without locks (some cluster mounts): keep what
            # cannot be checked.
            return True
    return False


def _new_log_dir() -> tuple[Path, BinaryIO]:
    """A fresh build/logs/<time> directory, locked as in use until
    the returned file is closed; old ones beyond KEEP_LOGS go unless a
    running boot holds them (boots side by side, `--jobs`, or another
    process's)."""
    LOGS.mkdir(parents=True, exist_ok=True)
    old = sorted(p for p in LOGS.iterdir() if p.is_dir())
    for stale in old[: max(0, len(old) - KEEP_LOGS + 1)]:
        if not _in_use(stale):
            shutil.rmtree(stale, ignore_errors=True)
    while True:
        # Named by the time to the nanosecond, so that names sort by age;
        # mkdir fails for a name another boot took, and the next try
        # takes a later time.
        now = time.time_ns()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now // 10**9))
        run_dir = LOGS / f"{stamp}-{now % 10**9:09d}"
        try:
            # Only its owner may enter: it holds the secure console's log
            # and, with --gdb, the socket of QEMU's gdb stub, whose
            # `monitor` command reaches QEMU's monitor (gdb.py).
            run_dir.mkdir(mode=0o700)
        except FileExistsError:
            continue
        break
    lock = (run_dir / IN_USE).open("wb")
    # On a file system without locks (some cluster mounts) pruning keeps
    # the directory anyway: _in_use cannot lock it either.
    with contextlib.suppress(OSError):
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return run_dir, lock


@dataclass(frozen=True)
class Layout:
    """Which Linux runs where in one boot, and which commands each runs:
    the configuration, Linux's cores, the partitions (none: one Linux) and
    the one whose Linux runs `exec`'s commands with its console on stdio."""

    config: PlatformConfig
    linux_cores: list[int]
    partitions: tuple[Partition, ...]
    primary: Partition | None
    # exec's commands per partition name ("" without partitions), the
    # phase's sleep included; empty for an interactive boot.
    scripts: dict[str, str]

    @property
    def others(self) -> list[str]:
        """The partitions running commands beside the primary's."""
        return [name for name in self.scripts if self.primary and name != self.primary.name]


def layout(options: BootOptions, exec_script: str | None) -> Layout:
    """Step 1: the configuration's cores and partitions for this boot, and
    which commands run in which Linux; an error for commands a partition
    cannot run."""
    config = load_config(options.config)
    linux_cores = config.linux_cores(options.smp)
    if not linux_cores:
        raise TandemError(f"configuration '{config.name}' leaves no core for Linux")
    partitions = config.partitions_for(options.smp)
    primary = config.partition(options.smp, options.partition)
    others = dict(options.partition_scripts)
    if others and primary is None:
        raise TandemError(f"configuration '{config.name}' has no partitions to run commands in")
    if primary is not None and primary.name in others:
        raise TandemError(f"partition {primary.name} runs the commands already")
    if others and exec_script is None:
        raise TandemError("commands for other partitions need commands for this one (exec)")
    for name in others:
        config.partition(options.smp, name)
    scripts: dict[str, str] = {}
    if exec_script is not None:
        if options.phase_us:
            exec_script = f"sleep {options.phase_us / 1e6:.6f}\n" + exec_script
        scripts = {primary.name: exec_script, **others} if primary else {"": exec_script}
    return Layout(config, linux_cores, partitions, primary, scripts)


def initramfs(layout: Layout, run_dir: Path, add: tuple[cpio.Added, ...] = ()) -> tuple[bytes, ...]:
    """Step 2: the initramfs as chunks: Tandem's, then what `add` puts into
    the guest, then (exec) the commands.

    One initramfs for every partition: each Linux's rcS runs the script
    named after its partition (its command line says which). The scripts
    are also written beside the boot's logs (exec.sh, exec-NAME.sh), and
    what was added is listed in added.txt."""
    chunks = [INITRAMFS.read_bytes()]
    if add:
        chunks.append(cpio.added(add))
        (run_dir / "added.txt").write_text(
            "".join(f"{a.host.resolve()} -> {a.guest}\n" for a in add)
        )
    if layout.scripts:
        files = {
            f"tandem/exec{'-' + name if name else ''}.sh": (0o755, text.encode())
            for name, text in layout.scripts.items()
        }
        chunks.append(cpio.archive(files))
        for file, (_, text) in files.items():
            (run_dir / Path(file).name).write_bytes(text)
    return tuple(chunks)


def bootargs(options: BootOptions, exec_script: str | None) -> str:
    """Step 3: Linux's command line.

    A panicking Linux resets at once (PSCI SYSTEM_RESET), and the monitor
    restarts it alone while the RTOS runs on: what a product wants.
    `--bootargs panic=0` keeps a panicked Linux for a look."""
    board = load_board(options.board)
    args = f"console={board.linux_console} {board.linux_earlycon} panic=-1"
    if exec_script is not None:
        args += " quiet"
    if options.extra_bootargs:
        args += " " + options.extra_bootargs
    return args


def linux_off(options: BootOptions, layout: Layout) -> str | None:
    """What Linux's power-off does in this boot (None: the configuration's).

    exec's boot ends with the commands (machine-off), unless several
    partitions run commands: then each Linux's power-off stops it alone,
    and the harness ends QEMU once all have finished."""
    if options.linux_off is None and layout.scripts:
        return "rtos-runs-on" if layout.others else "machine-off"
    return options.linux_off


@dataclass(frozen=True)
class RtosBlobs:
    """What the monitor and the RTOS read at boot: the boot configuration
    (cores' policies, features, RPC cores) and the applications' workload."""

    boot_config: bytes
    workload: bytes


def rtos_blobs(options: BootOptions, layout: Layout, off: str | None, run_dir: Path) -> RtosBlobs:
    """Step 4: the boot configuration and the workload blob, also written
    beside the boot's logs (bootconfig.bin, workload.bin)."""
    blobs = RtosBlobs(
        layout.config.boot_blob(
            options.smp,
            steal_time=capacity.uses_steal(options.capacity),
            rpc_cores=options.rpc_cores,
            linux_off=off,
        ),
        workload_blob(
            layout.config.rtos_apps(options.smp, options.workload, options.ctxsw, options.apps)
        ),
    )
    (run_dir / "bootconfig.bin").write_bytes(blobs.boot_config)
    (run_dir / "workload.bin").write_bytes(blobs.workload)
    return blobs


# One Linux's images in flash: kernel, device tree, initramfs.
LinuxImages = tuple[flash.Image, flash.Image, flash.Image]


def device_trees(
    options: BootOptions,
    board: Board,
    layout: Layout,
    args: str,
    initrd: tuple[bytes, ...],
    kernel: bytes,
    run_dir: Path,
) -> list[LinuxImages]:
    """Step 5: each Linux's device tree (tandem.dtb, or tandem-NAME.dtb per
    partition, with its source beside), and its images for the flash: the
    kernel, the tree and the initramfs, at the board's addresses (a
    partition's in its own RAM). The partitions' kernels and initramfs are
    the same objects, which the flash stores once."""
    kernel_chunks = (kernel,)
    capacities = (
        capacity.static_capacities(options.workload, layout.linux_cores)
        if capacity.uses_static(options.capacity)
        else None
    )
    initrd_size = sum(len(c) for c in initrd)
    if not layout.partitions:
        tree = dtb.build_dtb(
            board,
            options.smp,
            layout.linux_cores,
            args,
            initrd_size,
            run_dir / "tandem.dtb",
            capacities,
            linux_idle=options.linux_idle,
        )
        return [
            (
                flash.Image("kernel", kernel_chunks, board.kernel),
                flash.Image("device tree", (tree.read_bytes(),), board.dtb),
                flash.Image("initramfs", initrd, board.initrd),
            )
        ]
    if len(layout.partitions) > 2:
        raise TandemError("the board has consoles for two partitions")
    images = []
    for p in layout.partitions:
        tree = dtb.build_dtb(
            board,
            options.smp,
            list(p.cores),
            args,
            initrd_size,
            run_dir / f"tandem-{p.name}.dtb",
            capacities,
            partition=p,
            linux_idle=options.linux_idle,
        )
        images.append(
            (
                flash.Image("kernel", kernel_chunks, p.load(board, board.kernel)),
                flash.Image("device tree", (tree.read_bytes(),), p.load(board, board.dtb)),
                flash.Image("initramfs", initrd, p.load(board, board.initrd)),
            )
        )
    return images


def partition_table(
    board: Board, options: BootOptions, layout: Layout, off: str | None, run_dir: Path
) -> bytes:
    """Step 6a: the partition table the monitor and the EL2 layer read
    (partitions.bin beside the logs); empty without partitions. It names
    the partition whose power-off ends the machine: the one running exec's
    commands, or for `run` the first, when Linux's power-off ends it."""
    if not layout.partitions:
        return b""
    assert layout.primary is not None
    if off == "machine-off" and layout.scripts:
        machine_off: str | None = layout.primary.name
    elif (off or layout.config.linux_off) == "machine-off":
        machine_off = layout.partitions[0].name
    else:
        machine_off = None
    table = layout.config.partition_table(
        board,
        options.smp,
        {p.name: flash.header_offset(i) for i, p in enumerate(layout.partitions)},
        machine_off,
    )
    (run_dir / "partitions.bin").write_bytes(table)
    return table


@dataclass(frozen=True)
class Consoles:
    """Where the partitions' Linux consoles go: QEMU's first and third
    serial ports (a file, or None for stdio), and the files of the
    partitions not on stdio, by name."""

    serials: tuple[Path | None, Path | None]
    files: dict[str, Path]


def partition_consoles(board: Board, layout: Layout, run_dir: Path) -> Consoles | None:
    """Step 6b: with partitions, each Linux's console. Serial ports 0 and 2
    are the normal world's UARTs (the secure console is 1): the partition
    running the commands has its console on stdio, the others' go to files.
    None without partitions (one Linux, on serial 0)."""
    if not layout.partitions:
        return None
    assert layout.primary is not None
    slots: dict[int, Path | None] = {0: run_dir / "console-0.log", 2: run_dir / "console-2.log"}
    files: dict[str, Path] = {}
    for p in layout.partitions:
        serial = board.partition_devices[p.devices[0]].serial if p.devices else None
        if serial not in slots:
            raise TandemError(
                f"partition {p.name}: its console (first device) must be one of the "
                "board's UARTs with a serial port (boards/*.toml partition_devices)"
            )
        if p.name == layout.primary.name:
            slots[serial] = None
        else:
            files[p.name] = run_dir / f"console-{p.name}.log"
            slots[serial] = files[p.name]
    if None not in slots.values():
        raise TandemError(f"partition {layout.primary.name} has no console for the commands")
    return Consoles((slots[0], slots[2]), files)


def flash_image(
    board: Board, blobs: RtosBlobs, images: list[LinuxImages], table: bytes, run_dir: Path
) -> Path:
    """Step 7: the secure flash the boot starts from (flash.bin: firmware,
    boot configuration, workload, Linux's images, partition table)."""
    return flash.write(
        board,
        firmware(board.name).read_bytes(),
        blobs.boot_config,
        blobs.workload,
        images,
        run_dir / FLASH_NAME,
        table,
    )


def blank_disk(options: BootOptions, run_dir: Path) -> Path | None:
    """Step 8: the blank disk `disk_mib` asks for (sparse), or None."""
    if not options.disk_mib:
        return None
    disk = run_dir / DISK_NAME
    with disk.open("wb") as f:
        f.truncate(options.disk_mib << 20)
    return disk


def command_line(
    options: BootOptions,
    board: Board,
    firmware: Path,
    run_dir: Path,
    interactive: bool,
    disk: Path | None,
    consoles: Consoles | None,
) -> list[str]:
    """Step 9: QEMU's command line (platform/qemu_command.py), the
    instruments' "{run_dir}" replaced by the boot's log directory."""
    return qemu_command.boot_argv(
        board,
        options.smp,
        options.timing,
        firmware,
        [],
        run_dir / "secure.log",
        interactive=interactive,
        disk=disk,
        disk_bps=options.disk_bps,
        instruments=tuple(
            arg.replace("{run_dir}", str(run_dir)) for arg in options.extra_qemu_args
        ),
        consoles=None if consoles is None else consoles.serials,
        run_dir=run_dir,
        gdb=gdb.qemu_args(run_dir) if options.gdb else None,
    )


def gdb_script(options: BootOptions, plan: Layout, kernel: Path, run_dir: Path) -> Path | None:
    """Step 10 (`--gdb`): the boot's gdb script (gdbinit): every image's
    symbols and the connection to QEMU's stub; None without `--gdb`."""
    if not options.gdb:
        return None
    return gdb.write_script(run_dir, kernel, bool(plan.partitions), options.board)


def _announce_gdb(options: BootOptions, prepared: Prepared) -> None:
    if options.gdb:
        print(
            f"tandem: QEMU waits for gdb on {gdb.socket_path(prepared.run_dir)} "
            "(every core stopped; only you can connect); "
            f"`./tandem gdb` in another terminal, or gdb-multiarch -x "
            f"{prepared.run_dir / gdb.SCRIPT}",
            file=sys.stderr,
            flush=True,
        )


def prepare(options: BootOptions, exec_script: str | None = None) -> Prepared:
    """Writes what one boot needs into a new log directory (the steps
    above, in order) and returns QEMU's command line."""
    board = load_board(options.board)
    _check(options, board)
    plan = layout(options, exec_script)
    kernel_path = options.kernel or KERNEL
    if not kernel_path.is_file():
        raise TandemError(f"no Linux image {kernel_path}")
    run_dir, in_use = _new_log_dir()
    try:
        return _prepare_in(options, exec_script, board, plan, kernel_path, run_dir, in_use)
    except BaseException:
        in_use.close()
        raise


def _prepare_in(
    options: BootOptions,
    exec_script: str | None,
    board: Board,
    plan: Layout,
    kernel_path: Path,
    run_dir: Path,
    in_use: BinaryIO,
) -> Prepared:
    initrd = initramfs(plan, run_dir, options.add)
    args = bootargs(options, exec_script)
    off = linux_off(options, plan)
    blobs = rtos_blobs(options, plan, off, run_dir)
    images = device_trees(options, board, plan, args, initrd, kernel_path.read_bytes(), run_dir)
    table = partition_table(board, options, plan, off, run_dir)
    consoles = partition_consoles(board, plan, run_dir)
    firmware = flash_image(board, blobs, images, table, run_dir)
    disk = blank_disk(options, run_dir)
    argv = command_line(options, board, firmware, run_dir, exec_script is None, disk, consoles)
    gdb_script(options, plan, kernel_path, run_dir)
    return Prepared(
        argv,
        run_dir / "secure.log",
        run_dir / "console.log",
        run_dir,
        {} if consoles is None else consoles.files,
        in_use,
    )


REFUSAL = "cannot start:"


def monitor_refusal(secure_log: Path) -> str | None:
    """Why the monitor or the RTOS refused to start the machine, if one did
    (both log "cannot start: ..." and power off)."""
    try:
        text = secure_log.read_text(errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if REFUSAL in line:
            return line[line.index(REFUSAL) :]
    return None


def run_interactive(options: BootOptions) -> int:
    """Boots with the Linux console on this terminal; returns QEMU's status."""
    prepared = prepare(options)
    off = options.linux_off or load_config(options.config).linux_off
    print(f"tandem: secure console (monitor/RTOS) -> {prepared.secure_log}", file=sys.stderr)
    for name, log in prepared.consoles.items():
        print(f"tandem: partition {name}'s console -> {log}", file=sys.stderr)
    if off == "machine-off":
        quit_how = "`poweroff` or Ctrl-A X ends it"
    else:
        quit_how = (
            "Ctrl-A X ends it (`poweroff` stops Linux alone and the RTOS runs on; "
            "`reboot` restarts Linux alone)"
        )
    print(f"tandem: Linux console follows; {quit_how}", file=sys.stderr)
    _announce_gdb(options, prepared)
    proc = qemu_command.spawn(prepared.argv)
    try:
        status = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        (prepared.run_dir / FLASH_NAME).unlink(missing_ok=True)
        prepared.release()
    refusal = monitor_refusal(prepared.secure_log)
    if refusal:
        print(f"tandem: Tandem refused to start: {refusal}", file=sys.stderr)
        return 1
    return status


# The monitor's line when Linux's power-off leaves the RTOS running (for a
# partition: "Linux (partition B) asked to power off").
LINUX_STOPPED = re.compile(r"Linux( \(partition [A-Z]\))? asked to power off")


def wait_for_secure(secure_log: Path, text: str | re.Pattern[str], timeout_s: float) -> str:
    """Waits until the secure console (monitor, RTOS) shows `text`; returns
    the secure log so far."""
    deadline = time.monotonic() + timeout_s
    while True:
        log = secure_log.read_text(errors="replace")
        found = text.search(log) is not None if isinstance(text, re.Pattern) else text in log
        if found:
            return log
        if time.monotonic() > deadline:
            raise TandemError(
                f"secure console: no {text!r} within {timeout_s:.0f} s (log: {secure_log})"
            )
        time.sleep(0.1)


def _drop_restart_chatter(lines: list[str]) -> list[str]:
    """`lines` without what follows the kernel's last restart message."""
    for i in range(len(lines) - 1, -1, -1):
        if RESTART.match(lines[i]):
            return lines[:i]
    return lines


@dataclass
class ExecResult:
    """What a `tandem exec` boot produced."""

    status: int
    output: str
    console_log: Path
    secure_log: Path
    qemu_status: int
    # Host seconds from QEMU start to the first command running in Linux.
    boot_s: float
    # Host seconds from the end of the commands to QEMU exiting.
    poweroff_s: float
    # Times the commands rebooted the machine.
    reboots: int = 0
    lines: list[str] = field(default_factory=list)
    # With partitions: the other partitions' commands (partition_scripts).
    partitions: dict[str, PartitionResult] = field(default_factory=dict)


@dataclass
class PartitionResult:
    """What another partition's commands produced (its console log)."""

    status: int
    lines: list[str]
    console_log: Path


def script_output(lines: list[str]) -> tuple[int | None, list[str]]:
    """The exit status and output lines of the commands in a console log
    (None: they did not finish), after the last time they started (a
    restart runs them again)."""
    status: int | None = None
    output: list[str] = []
    inside = False
    for line in lines:
        if line.endswith(BEGIN):
            output, status, inside = [], None, True
            continue
        if inside:
            m = END.search(line)
            if m:
                if line[: m.start()]:
                    output.append(line[: m.start()])
                status = int(m.group(1))
                inside = False
            else:
                output.append(line)
    return status, output


def _wait_for_partitions(
    consoles: dict[str, Path], names: list[str], proc: subprocess.Popen[bytes]
) -> dict[str, PartitionResult]:
    """Waits (until QEMU ends, or the boot's timer kills it) for the other
    partitions' commands to finish; their results."""
    done: dict[str, PartitionResult] = {}
    while len(done) < len(names):
        for name in names:
            if name in done:
                continue
            log = consoles[name]
            text = log.read_text(errors="replace") if log.exists() else ""
            status, lines = script_output([line.rstrip("\r") for line in text.splitlines()])
            if status is not None:
                done[name] = PartitionResult(status, lines, log)
        if len(done) < len(names):
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    return done


@dataclass
class CommandsOutput:
    """The commands' output in a console, read line by line: `run_exec`
    reads QEMU's live, `read_console_log` a saved console log, with the same
    rules, so a run's raw console logs give back exactly what its boots
    printed (what `tandem exp merge` and a new parse read).

    Output starts after BEGIN and ends at END (with the status); a BEGIN
    while inside means the commands rebooted the machine and run again (their
    output kept, the restart's chatter dropped). A Linux panic ends the
    reading after PANIC_LINES lines, unless `panics` (the commands panic
    Linux on purpose)."""

    panics: bool = False
    # Stop at END: QEMU runs on after Linux's power-off (the RTOS, or other
    # partitions), so nothing after it is the commands'.
    stop_at_end: bool = False
    lines: list[str] = field(default_factory=list)
    status: int | None = None
    inside: bool = False
    begins: int = 0
    ends: int = 0
    reboots: int = 0
    panic: list[str] = field(default_factory=list)
    # Nothing more to read (the end, or a panic's last line).
    done: bool = False

    def feed(self, line: str) -> list[str]:
        """Reads one console line; returns the output lines it adds."""
        if self.panic or (PANIC in line and not self.panics):
            # Linux will not finish the commands: report the panic now, not
            # after the timeout.
            self.panic.append(line)
            if len(self.panic) >= PANIC_LINES or "---[ end Kernel panic" in line:
                self.done = True
            return []
        if line.endswith(BEGIN):
            if self.inside:
                # The commands rebooted the machine and now run again: keep
                # their output, drop the restart and boot chatter.
                self.reboots += 1
                self.lines = _drop_restart_chatter(self.lines)
            self.begins += 1
            self.inside = True
            return []
        if not self.inside:
            return []
        m = END.search(line)
        if m is None:
            self.lines.append(line)
            return [line]
        before = line[: m.start()]
        self.status = int(m.group(1))
        self.ends += 1
        self.inside = False
        self.done = self.stop_at_end
        if before:
            self.lines.append(before)
            return [before]
        return []


def read_console_log(data: bytes) -> CommandsOutput:
    """What the commands printed, from a console log `run_exec` wrote (every
    line it read, and none after it stopped reading)."""
    out = CommandsOutput()
    # Split at newlines only: a line may hold a carriage return or other
    # characters that str.splitlines would split at.
    lines = data.decode(CONSOLE_ENCODING, errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        out.feed(line)
    return out


def run_exec(
    options: BootOptions,
    script: str,
    timeout_s: float = 600.0,
    echo: Callable[[str], None] | None = None,
    panics: bool = False,
    cancel: threading.Event | None = None,
) -> ExecResult:
    """Boots, runs `script` as root in Linux once it is up, powers off.

    Command output (only that) is passed to `echo` line by line as it arrives;
    everything the console printed is saved to the console log. A Linux
    panic ends the boot at once with an error quoting it, unless `panics`
    (the commands panic Linux on purpose: the monitor restarts it, and the
    commands run again, as after a reboot). Setting `cancel` (from another
    thread: boots side by side, one failed or Ctrl-C) ends the boot with an
    error."""
    prepared = prepare(options, exec_script=script)
    _announce_gdb(options, prepared)
    others = [name for name, _ in options.partition_scripts]
    partition_results: dict[str, PartitionResult] = {}
    start = time.monotonic()
    proc = qemu_command.spawn(
        prepared.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    timed_out = threading.Event()
    cancelled = threading.Event()
    finished = threading.Event()

    def watch() -> None:
        # QEMU killed at the timeout or when `cancel` is set; reading its
        # output then ends.
        deadline = start + timeout_s
        while not finished.wait(0.1):
            if cancel is not None and cancel.is_set():
                cancelled.set()
            elif time.monotonic() > deadline:
                timed_out.set()
            else:
                continue
            proc.kill()
            return

    watcher = threading.Thread(target=watch, name="run_exec watch", daemon=True)
    watcher.start()
    reader = CommandsOutput(
        panics=panics, stop_at_end=options.linux_off == "rtos-runs-on" or bool(others)
    )
    boot_s = end_s = 0.0
    assert proc.stdout is not None
    try:
        with prepared.console_log.open("w", encoding=CONSOLE_ENCODING) as log:
            for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip("\r\n")
                log.write(line + "\n")
                begins, ends = reader.begins, reader.ends
                new = reader.feed(line)
                if reader.begins > begins:
                    boot_s = boot_s or time.monotonic() - start
                if reader.ends > ends:
                    end_s = time.monotonic()
                if echo:
                    for out in new:
                        echo(out)
                if reader.done:
                    break
        status = reader.status
        if reader.panic:
            proc.kill()
            proc.wait()
            raise TandemError(
                "Linux panicked:\n"
                + "\n".join(reader.panic)
                + f"\n(console: {prepared.console_log}, secure: {prepared.secure_log})"
            )
        if cancelled.is_set():
            raise TandemError(f"stopped (console: {prepared.console_log})")
        if others and status is not None:
            # The other partitions' commands run on: wait for them, then end
            # QEMU (every partition's power-off stopped it alone).
            partition_results = _wait_for_partitions(prepared.consoles, others, proc)
            proc.kill()
        elif options.linux_off == "rtos-runs-on" and status is not None:
            # Linux's power-off leaves the machine running (the RTOS runs
            # on): wait for the monitor to say Linux stopped, then end QEMU.
            wait_for_secure(prepared.secure_log, LINUX_STOPPED, POWEROFF_GRACE_S)
            proc.kill()
        try:
            qemu_status = proc.wait(timeout=POWEROFF_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TandemError(
                f"Linux did not power off within {POWEROFF_GRACE_S:.0f} s of the commands "
                f"ending (console: {prepared.console_log}, secure: {prepared.secure_log})"
            ) from None
    finally:
        finished.set()
        if proc.poll() is None:
            # Interrupted (Ctrl-C, SIGTERM, an error above): QEMU must not
            # outlive the harness and run on, unseen, for minutes.
            proc.kill()
            proc.wait()
        # The per-boot flash holds copies of the firmware, kernel and
        # initramfs plus the script: not worth keeping (exec.sh, the DTB
        # and the blobs beside the logs say what was in it).
        (prepared.run_dir / FLASH_NAME).unlink(missing_ok=True)
        (prepared.run_dir / DISK_NAME).unlink(missing_ok=True)
        prepared.release()
    if timed_out.is_set():
        raise TandemError(
            f"timed out after {timeout_s:.0f} s (console: {prepared.console_log}, "
            f"secure: {prepared.secure_log})"
        )
    refusal = monitor_refusal(prepared.secure_log)
    if refusal:
        raise TandemError(
            f"Tandem refused to start: {refusal} (secure: {prepared.secure_log}; "
            "run `make build` if the firmware and the harness disagree)"
        )
    if status is None:
        tail = "\n".join(prepared.console_log.read_text().splitlines()[-15:])
        raise TandemError(
            f"QEMU exited ({qemu_status}) before the commands finished; console tail:\n{tail}\n"
            f"(console: {prepared.console_log}, secure: {prepared.secure_log})"
        )
    for name in others:
        if name not in partition_results:
            other_log = prepared.consoles[name]
            text = other_log.read_text(errors="replace") if other_log.exists() else ""
            tail = "\n".join(text.splitlines()[-15:])
            raise TandemError(
                f"partition {name}'s commands did not finish; its console's tail:\n{tail}\n"
                f"(console: {other_log}, secure: {prepared.secure_log})"
            )
    return ExecResult(
        status=status,
        output="\n".join(reader.lines),
        console_log=prepared.console_log,
        secure_log=prepared.secure_log,
        qemu_status=qemu_status,
        boot_s=boot_s,
        poweroff_s=time.monotonic() - end_s,
        reboots=reader.reboots,
        lines=reader.lines,
        partitions=partition_results,
    )
