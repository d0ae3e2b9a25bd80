"""What one boot needs on disk before QEMU starts, step by step: the
layout (which Linux runs where), the initramfs, Linux's command line, the
RTOS's blobs, the device trees, the partition table and consoles, the
secure flash, a blank disk, QEMU's command line and gdb's script, all in
the boot's own log directory (platform/logdir.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tandem.errors import TandemError
from tandem.platform import capacity, cpio, dtb, flash, gdb, logdir, pinned, qemu_command
from tandem.platform.apps import workload_blob
from tandem.platform.board import Board
from tandem.platform.boot_options import BootOptions, check, check_built
from tandem.platform.configs import Partition, PlatformConfig
from tandem.platform.paths import INITRAMFS, KERNEL, firmware

# The blank disk BootOptions.disk_mib asks for, in the boot's log directory.
DISK_NAME = "disk.img"
# The secure flash a boot starts from (platform/flash.py), removed afterwards.
FLASH_NAME = "flash.bin"


@dataclass
class Prepared:
    """Everything one QEMU boot needs, on disk, plus its command line."""

    argv: list[str]
    secure_log: Path
    console_log: Path
    run_dir: Path
    # With partitions: the console logs of those not on stdio, by name.
    consoles: dict[str, Path] = field(default_factory=dict)
    # Holds run_dir as in use (logdir.new_log_dir) until `release`.
    in_use: BinaryIO | None = None

    def release(self) -> None:
        """The boot is over: its log directory may be pruned."""
        if self.in_use is not None:
            self.in_use.close()


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
    config = options.config
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


def initramfs(
    layout: Layout,
    run_dir: Path,
    add: tuple[cpio.Added, ...] = (),
    pins: pinned.Pinned | None = None,
) -> tuple[bytes, ...]:
    """Step 2: the initramfs as chunks: Tandem's (checked against `pins`,
    a run's pinned inputs), then what `add` puts into the guest, then
    (exec) the commands.

    One initramfs for every partition: each Linux's rcS runs the script
    named after its partition (its command line says which). The scripts
    are also written beside the boot's logs (exec.sh, exec-NAME.sh), and
    what was added is listed in added.txt."""
    chunks = [pinned.read(INITRAMFS, pins)]
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
    board = options.board
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
            seed=options.linux_seed,
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
            seed=options.linux_seed,
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
    board: Board,
    blobs: RtosBlobs,
    images: list[LinuxImages],
    table: bytes,
    run_dir: Path,
    pins: pinned.Pinned | None = None,
) -> Path:
    """Step 7: the secure flash the boot starts from (flash.bin: firmware,
    checked against `pins`, a run's pinned inputs, boot configuration,
    workload, Linux's images, partition table)."""
    return flash.write(
        board,
        pinned.read(firmware(board.name), pins),
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
    return gdb.write_script(run_dir, kernel, bool(plan.partitions), options.board.name)


def prepare(options: BootOptions, exec_script: str | None = None) -> Prepared:
    """Writes what one boot needs into a new log directory (the steps
    above, in order) and returns QEMU's command line."""
    board = options.board
    check(options)
    check_built(options)
    plan = layout(options, exec_script)
    kernel_path = options.kernel or KERNEL
    if not kernel_path.is_file():
        raise TandemError(
            f"no Linux image {kernel_path}: build it first (`make`; build/linux-trace's: "
            "`make trace-kernel`)"
        )
    run_dir, in_use = logdir.new_log_dir()
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
    initrd = initramfs(plan, run_dir, options.add, options.pinned)
    args = bootargs(options, exec_script)
    off = linux_off(options, plan)
    blobs = rtos_blobs(options, plan, off, run_dir)
    kernel = pinned.read(kernel_path, options.pinned)
    images = device_trees(options, board, plan, args, initrd, kernel, run_dir)
    table = partition_table(board, options, plan, off, run_dir)
    consoles = partition_consoles(board, plan, run_dir)
    firmware = flash_image(board, blobs, images, table, run_dir, options.pinned)
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
