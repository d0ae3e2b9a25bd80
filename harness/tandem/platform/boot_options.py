"""How to boot: the options of one boot (BootOptions), which carry the
board and the platform configuration as read and checked once (not their
names), checked together before anything is written; and the timing mode
`run` and `exec` pick per host.

Timing modes: platform/timing.py (docs/design.md, "Time and measurement").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import capacity, cpio, dtb, memmodel
from tandem.platform.apps import AppRun
from tandem.platform.board import Board, load_board
from tandem.platform.configs import Ctxsw, PlatformConfig, Workload, load_config
from tandem.platform.paths import BUILD, missing_artifacts
from tandem.platform.pinned import Pinned
from tandem.platform.timing import Timing

# A boot's timing unless it asks for another (`run` and `exec` pick per
# host: choose_timing).
HOST_TIMING = Timing()
# The configuration a boot has unless it names another.
DEFAULT_CONFIG = "tandem"


@dataclass(frozen=True)
class BootOptions:
    """How to boot: platform configuration, board, timing mode, number of cores."""

    # The platform configuration (configs/NAME.toml), read.
    config: PlatformConfig = field(default_factory=lambda: load_config(DEFAULT_CONFIG))
    # The board (boards/NAME.toml), read; its default is board.DEFAULT_BOARD.
    board: Board = field(default_factory=load_board)
    # How QEMU keeps time (mode and quantum), checked when made.
    timing: Timing = HOST_TIMING
    smp: int = 4
    # `exec` commands start this many µs after Linux is up: a controlled
    # phase against the RTOS's releases and Linux's ticks, so repetitions
    # differ in the deterministic timing modes (exp/common.rep_phase_us).
    phase_us: int = 0
    # Linux's seed: the device tree's rng-seed and kaslr-seed words
    # (dtb.pin_seeds), so boots differ in Linux's randomness only as asked
    # (issue 49; the scenario key `seeds`). 0: the words every run before
    # issue 49 booted with.
    linux_seed: int = 0
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
    # The run's inputs as its provenance recorded them (tandem.exp.run):
    # the boot refuses a firmware, Linux image or initramfs that differs
    # (platform/pinned.py); None: a boot on its own (`run`, `exec`).
    pinned: Pinned | None = None


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


def check(options: BootOptions) -> None:
    """What the options ask is possible on their board (no file is read or
    written): an error saying why not. A run checks every boot's options
    before its first boot (tandem.exp.run)."""
    board = options.board
    if not 1 <= options.smp <= board.max_cores:
        raise TandemError(f"--smp must be 1..{board.max_cores}, got {options.smp}")
    if not 0 <= options.phase_us <= 10_000_000:
        raise TandemError(f"phase must be 0..10 s, got {options.phase_us} µs")
    if options.linux_seed < 0:
        raise TandemError(f"Linux's seed must be 0 or more, got {options.linux_seed}")
    capacity.check(options.capacity)
    if options.linux_idle not in dtb.LINUX_IDLE:
        raise TandemError(
            f"Linux idle mode must be one of {', '.join(dtb.LINUX_IDLE)}, "
            f"got '{options.linux_idle}'"
        )
    options.config.check_on(board)
    for a in options.add:
        a.check()
    if not 0 <= options.disk_mib <= 65536:
        raise TandemError(f"disk size must be 0..65536 MiB, got {options.disk_mib}")
    if options.disk_bps < 0 or (options.disk_bps and not options.disk_mib):
        raise TandemError(f"a disk throughput needs a disk and >= 0, got {options.disk_bps}")


def check_built(options: BootOptions) -> None:
    """What the boot needs is built (its board's firmware, Linux, QEMU, the
    memory model's plugin if it has a model): an error naming what is not."""
    missing = missing_artifacts(options.board.name)
    if options.timing.memmodel is not None and not memmodel.PLUGIN.exists():
        missing.append(memmodel.PLUGIN)
    if missing:
        names = ", ".join(str(p.relative_to(BUILD.parent)) for p in missing)
        raise TandemError(f"not built yet: {names} (run `make build`)")
