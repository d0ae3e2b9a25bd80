"""`tandem`: boot Tandem on QEMU, run commands in it, benchmark it."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from tandem.errors import TandemError
from tandem.platform import apps, capacity, cpio, gdb
from tandem.platform.board import DEFAULT_BOARD, boards, load_board
from tandem.platform.boot import run_exec, run_interactive
from tandem.platform.boot_options import BootOptions, choose_timing
from tandem.platform.configs import LINUX_OFF, Workload, available, load_config
from tandem.platform.dtb import LINUX_IDLE
from tandem.platform.memmodel import BUILTIN as MEMORY_PROFILES
from tandem.platform.timing import (
    CAUSAL_MODES,
    DEFAULT_CAUSAL,
    DEFAULT_QUANTUM_NS,
    MODES,
    PERCORE,
    Timing,
)

if TYPE_CHECKING:
    from tandem.exp.shards import Shard


def _boot_options(
    parser: argparse.ArgumentParser, timing: str = "host", smp: int = 4, auto: bool = False
) -> None:
    parser.add_argument(
        "--config",
        default="tandem",
        help=f"platform configuration (configs/NAME.toml; available: {', '.join(available())})",
    )
    parser.add_argument(
        "--board",
        default=DEFAULT_BOARD,
        choices=boards(),
        help=f"the machine (boards/NAME.toml; default {DEFAULT_BOARD})",
    )
    choices = (*MODES, "auto") if auto else MODES
    auto_help = (
        "; auto: host if this machine has a host core per emulated core, else percore"
        if auto
        else ""
    )
    parser.add_argument(
        "--timing",
        default=timing,
        choices=choices,
        help="host: real time, a host thread per core; virtual: one clock for all cores, "
        "1 instruction = 1 ns; percore: a clock per core, kept within a quantum of each "
        f"other{auto_help} (default: {timing}; docs/harness.md)",
    )
    parser.add_argument(
        "--quantum-ns",
        type=int,
        default=DEFAULT_QUANTUM_NS,
        metavar="NS",
        help="percore timing: how far one core's clock may run ahead of another's "
        f"(default {DEFAULT_QUANTUM_NS})",
    )
    parser.add_argument(
        "--memmodel",
        default=None,
        metavar="PROFILE",
        help="percore timing: charge each memory access's stall from Tandem's memory model "
        f"(caches, shared bus, TLBs) into its core's clock; PROFILE: {', '.join(MEMORY_PROFILES)} "
        "or a profile TOML (default: no model; docs/harness.md)"
        + ("; with --timing auto it selects percore" if auto else ""),
    )
    parser.add_argument(
        "--causal",
        default=DEFAULT_CAUSAL,
        choices=CAUSAL_MODES,
        help="percore timing's counter: lamport: a core reads no earlier time than a core "
        "whose release it acquired (a lock, an atomic); max: no core reads an earlier time "
        "than any read before, it reads that value; stall: its clock moves on to it; off: "
        f"the counter may go backwards between cores (default {DEFAULT_CAUSAL}; "
        "docs/harness.md)",
    )
    parser.add_argument(
        "--smp",
        type=int,
        default=smp,
        help=f"number of cores (1..{load_board().max_cores}, default {smp})",
    )
    parser.add_argument(
        "--workload",
        type=_workload,
        default=None,
        metavar="CORE:PERIOD_US:WORK_US",
        help="the RTOS runs one periodic busy task instead of its demo",
    )
    parser.add_argument(
        "--rtos",
        action="append",
        default=[],
        metavar="APP[.PARAM=VALUE]",
        help="select an RTOS application, with a parameter (repeat for more), e.g. "
        f"--rtos ctxsw.mode=flush; applications: {', '.join(apps.available())} "
        "(rtos/apps/APP/app.toml lists each one's parameters)",
    )
    parser.add_argument(
        "--capacity",
        default="none",
        choices=capacity.MODES,
        help="how Linux learns what the RTOS takes of each core: static (device-tree "
        "capacities), steal (PV stolen time), both, or none (default)",
    )
    parser.add_argument(
        "--rpc-cores",
        type=_core_list,
        default=None,
        metavar="LIST",
        help="cores running an RPC server, e.g. 1,2 ('none': no RPC; default: the highest "
        "RTOS core)",
    )
    parser.add_argument(
        "--bootargs",
        default="",
        help="appended to Linux's command line (e.g. tandem_lockstate=on)",
    )
    parser.add_argument(
        "--partition",
        default=None,
        metavar="NAME",
        help="with a configuration that has partitions (e.g. dualunix): the Linux whose "
        "console is here and that runs the commands (default: the first, A)",
    )
    parser.add_argument(
        "--linux-idle",
        choices=LINUX_IDLE,
        default="psci",
        help="how Linux idles: psci, cpuidle with the board's idle state (the core's standby, "
        "PSCI CPU_SUSPEND) beside WFI (default); wfi, WFI alone (no idle states in the "
        "device tree)",
    )
    parser.add_argument(
        "--linux-off",
        choices=LINUX_OFF,
        default=None,
        help="what Linux's power-off does: its cores idle and the RTOS runs on, or the "
        "machine powers off (default: the configuration's; exec: machine-off, so that it "
        "ends with the commands)",
    )


def _run_options(parser: argparse.ArgumentParser) -> None:
    """What `run` and `exec` take beyond the boot options: files for the
    guest, and gdb."""
    parser.add_argument(
        "--add",
        type=_added,
        action="append",
        default=[],
        metavar="HOST_PATH[:GUEST_PATH]",
        help="put a host file or directory into the guest's file system for this boot "
        f"(appended to the initramfs; default GUEST_PATH {cpio.DEFAULT_DIR}/NAME, where "
        "exec's commands start; repeatable)",
    )
    parser.add_argument(
        "--gdb",
        action="store_true",
        help="QEMU waits for gdb before the first instruction, its stub on a unix socket "
        f"in the boot's private log directory ({gdb.SOCKET}; no TCP port: only you can "
        "connect); `./tandem gdb` then starts gdb-multiarch with the monitor's, the RTOS's "
        "and Linux's symbols",
    )


def _added(text: str) -> cpio.Added:
    try:
        added = cpio.Added.parse(text)
        added.check()
    except TandemError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--add: ")) from None
    return added


def _workload(text: str) -> Workload:
    try:
        core, period, work = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}': expected CORE:PERIOD_US:WORK_US, e.g. 1:1000:500"
        ) from None
    return Workload(core=core, period_us=period, work_us=work)


def _core_list(text: str) -> tuple[int, ...]:
    if text == "none":
        return ()
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}': expected core numbers separated by commas, e.g. 1,2, or none"
        ) from None


def _quanta(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}': expected quanta in ns separated by commas, e.g. 1000,5000"
        ) from None
    return values


def _sizes(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}': expected message sizes in bytes separated by commas, e.g. 1,64,496"
        ) from None
    return values


def _jobs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="boots run side by side (default: one per host core; host timing: 1, and more "
        "is refused: its figures are the host's real time; 1 where figures are the host's "
        "wall time in any timing: boot and restart refuse more, fidelity's cost (e) is then "
        "not judged). Per-core and virtual timing give the same numbers whatever N",
    )


def _shard(text: str) -> Shard:
    # Imported here: the experiments' package is not loaded for `run` and `exec`.
    from tandem.exp.shards import Shard

    try:
        return Shard.parse(text)
    except TandemError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _options(args: argparse.Namespace) -> BootOptions:
    """The boot options of `run`, `exec`, `bench` and `trace`: the board and
    configuration named read here, once."""
    return BootOptions(
        config=load_config(args.config),
        board=load_board(args.board),
        timing=Timing.parse(args.timing, args.quantum_ns, args.memmodel, args.causal),
        smp=args.smp,
        extra_bootargs=args.bootargs,
        capacity=args.capacity,
        workload=args.workload,
        rpc_cores=args.rpc_cores,
        apps=apps.runs(args.rtos),
        linux_off=args.linux_off,
        partition=args.partition,
        linux_idle=args.linux_idle,
        add=tuple(getattr(args, "add", [])),
        gdb=getattr(args, "gdb", False),
    )


def _exp_run_options(parser: argparse.ArgumentParser) -> None:
    """What `exp run` takes beyond the experiment's name (and a bench that
    is an experiment, BENCH_ALIASES)."""
    parser.add_argument("--quick", action="store_true", help="the file's [quick] settings")
    parser.add_argument("--timing", choices=MODES, help="override the file's timing mode")
    parser.add_argument("--reps", type=int, help="override the file's repetitions")
    parser.add_argument(
        "--board",
        choices=boards(),
        help="the machine the boots run on (boards/NAME.toml; default: the file's, else "
        f"{DEFAULT_BOARD}); a run whose boots cannot be made there is refused before the "
        "first boot, saying why",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='override any key of the file (VALUE in TOML: 64, true, [1, 2], "x")',
    )
    _jobs_option(parser)
    parser.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/N",
        help="measure only shard I of N of the run's boots (sorted by label, round robin) "
        "into a partial directory of its own; `tandem exp merge` makes the run from all N "
        "(docs/harness.md, 'Experiments across machines')",
    )


@dataclass(frozen=True)
class BenchFlag:
    """A bench's own option: it sets key `key` of its experiment's scenario."""

    flag: str
    key: str
    type: Callable[[str], object]
    help: str
    # The value's name in --help, where it is not the key's (a unit converted).
    metavar: str | None = None
    # A switch without a value, setting the key to true.
    switch: bool = False


def _milliseconds(seconds: str) -> int:
    try:
        return int(seconds) * 1000
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{seconds}': expected whole seconds") from None


def _window_us(ms: str) -> int:
    try:
        us = round(float(ms) * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{ms}': expected milliseconds, e.g. 2.5") from None
    if us <= 0:
        raise argparse.ArgumentTypeError(f"'{ms}': the window must be positive")
    return us


def _workload_key(text: str) -> list[int]:
    w = _workload(text)
    return [w.core, w.period_us, w.work_us]


def _core_counts(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}': expected core counts separated by commas, e.g. 1,2,4,8"
        ) from None


def _names(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


# What `bench boot`, `latency`, `switch` and `restart` took of the boot
# options before they were experiments, now scenario keys (`--timing` and
# `--board` are exp run's).
_BOOT_FLAGS = (
    BenchFlag("--config", "config", str, "platform configuration (configs/NAME.toml)"),
    BenchFlag("--smp", "smp", int, "cores"),
    BenchFlag("--quantum-ns", "quantum_ns", int, "per-core timing's quantum"),
    BenchFlag("--memmodel", "memmodel", str, "per-core timing's memory profile, or none"),
    BenchFlag("--causal", "causal", str, "per-core timing's counter rule"),
)


# Benches that are registered experiments (tandem.exp.REGISTRY): `tandem
# bench NAME [FLAGS]` is `tandem exp run NAME` (its scenario file
# experiments/NAME.toml, provenance, --jobs, --shard, `exp merge`), each
# flag a `--set KEY=VALUE`. The run's report names the `exp run` command.
BENCH_ALIASES: dict[str, tuple[str, tuple[BenchFlag, ...]]] = {
    "boot": (
        "host wall time from QEMU's start to a Linux shell, one boot at a time",
        (
            BenchFlag("--runs", "reps", int, "boots to time"),
            *_BOOT_FLAGS,
            BenchFlag("--linux-idle", "linux_idle", str, "how Linux idles: psci or wfi"),
        ),
    ),
    "latency": (
        "RTOS timer-interrupt latency, Linux idle and running hackbench",
        (
            BenchFlag("--idle-seconds", "idle_seconds", int, "the idle phase's seconds"),
            BenchFlag("--hackbench-loops", "hackbench_loops", int, "hackbench -l"),
            BenchFlag("--min-samples", "min_samples", int, "samples each phase must have"),
            *_BOOT_FLAGS,
            BenchFlag("--linux-idle", "linux_idle", str, "how Linux idles: psci or wfi"),
        ),
    ),
    "switch": (
        "world-switch cost in instructions each way, and where they go",
        (
            BenchFlag(
                "--seconds", "idle_ms", _milliseconds, "whole seconds Linux idles", metavar="S"
            ),
            *_BOOT_FLAGS,
        ),
    ),
    "memory": (
        "the memory model against its own profiles: pointer-chase plateaus, bus contention, "
        "TLB reach, ctxsw's ASID/flush gap",
        (
            BenchFlag("--profiles", "profiles", _names, "memory profiles to check, e.g. a53"),
            BenchFlag("--loads", "loads", int, "chase loads per size"),
            BenchFlag("--tlb-loads", "tlb_loads", int, "loads per TLB sweep point"),
            BenchFlag("--switches", "switches", int, "ctxsw hand-offs per boot"),
            BenchFlag("--quantum-ns", "quantum_ns", int, "per-core timing's quantum"),
            BenchFlag("--causal", "causal", str, "per-core timing's counter rule"),
        ),
    ),
    "rpmsg": (
        "RPMsg round trips by message size, beside /dev/tandem-rpc's block mode",
        (
            BenchFlag("--calls", "calls", int, "calls per size and kind"),
            BenchFlag("--sizes", "sizes", _sizes, "message bytes, e.g. 1,64,496"),
            BenchFlag("--smp", "smp", int, "cores (the RTOS serves on the lowest RPC core)"),
            BenchFlag("--quantum-ns", "quantum_ns", int, "per-core timing's quantum"),
        ),
    ),
    "restart": (
        "restart Linux again and again under load while the RTOS runs on: reboot -f, sysrq b "
        "and sysrq c (a panic) in turn, in one boot, one boot at a time",
        (
            BenchFlag("--count", "count", int, "restarts"),
            *_BOOT_FLAGS,
            BenchFlag("--linux-idle", "linux_idle", str, "how Linux idles: psci or wfi"),
        ),
    ),
    "fidelity": (
        "what each timing mode does between cores: guest probes in virtual timing and in "
        "per-core timing at several quanta",
        (
            BenchFlag("--quanta", "quanta", _quanta, "per-core quanta in ns, e.g. 1000,2000"),
            BenchFlag("--rounds", "rounds", int, "samples per probe"),
            BenchFlag(
                "--iterations",
                "iterations",
                int,
                "overlap: loop iterations timed (2 instructions each)",
            ),
            BenchFlag("--memmodel", "memmodel", str, "the per-core boots' memory model, e.g. a53"),
            BenchFlag("--causal", "causal", str, "the per-core boots' counter rule"),
            BenchFlag("--config", "config", str, "platform configuration (configs/NAME.toml)"),
            BenchFlag("--smp", "smp", int, "cores (the probes use CPUs 0-2)"),
        ),
    ),
}

# `tandem trace` is `tandem exp run trace`, as a bench is.
TRACE_ALIAS: tuple[str, tuple[BenchFlag, ...]] = (
    "which world ran on each core over a window (PNG timeline and Perfetto trace); "
    "per-core timing by default: in virtual timing QEMU's round robin holds a core's vCPU "
    "for whole turns, which the timeline would show as the RTOS or Linux running",
    (
        BenchFlag(
            "--window-ms",
            "window_us",
            _window_us,
            "the last this many ms before the dump",
            metavar="MS",
        ),
        BenchFlag("--load", "load", str, "what Linux runs meanwhile: none or hackbench"),
        BenchFlag(
            "--linux-sched",
            "linux_sched",
            bool,
            "also Linux's own sched_switch events (its tracer), on the counter's clock: "
            "Linux's tasks on each core's track, in the PNG and the Perfetto trace",
            switch=True,
        ),
        BenchFlag(
            "--workload",
            "workload",
            _workload_key,
            "the RTOS runs one periodic busy task instead of its demo",
            metavar="CORE:PERIOD_US:WORK_US",
        ),
        *_BOOT_FLAGS,
        BenchFlag("--linux-idle", "linux_idle", str, "how Linux idles: psci or wfi"),
    ),
)

# `tandem exp kernel-trace` is `tandem exp run linux-rt-trace`.
KERNEL_TRACE_ALIAS: tuple[str, tuple[BenchFlag, ...]] = (
    "linux-rt's load on the latency-tracing kernel (make trace-kernel): the longest "
    "interrupt- or preemption-off sections; results in results/linux-rt-trace/<run-id>/",
    (
        BenchFlag("--cores", "cores", _core_counts, "core counts, e.g. 1,2,4,8"),
        BenchFlag("--samples", "samples", int, "cyclictest loops"),
        BenchFlag("--io", "io_load", bool, "with linux-rt's disk I/O load", switch=True),
    ),
)


def _bench_alias(
    bsub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    about: str,
    flags: tuple[BenchFlag, ...],
    experiment: str | None = None,
) -> None:
    """`name` as an alias of `exp run EXPERIMENT` (default: of the same name)."""
    experiment = experiment or name
    b = bsub.add_parser(
        name,
        help=about,
        description=f"`tandem exp run {experiment}`: experiments/{experiment}.toml, each "
        f"option below setting one of its keys; writes results/{experiment}/<run-id>/.",
    )
    _exp_run_options(b)
    for f in flags:
        if f.switch:
            b.add_argument(
                f.flag,
                dest=f"bench_{f.key}",
                action="store_const",
                const=True,
                default=None,
                help=f"{f.help} (--set {f.key}=true; default: the scenario file's)",
            )
            continue
        b.add_argument(
            f.flag,
            dest=f"bench_{f.key}",
            type=f.type,
            default=None,
            metavar=f.metavar or f.key.upper(),
            help=f"{f.help} (--set {f.key}=...; default: the scenario file's)",
        )


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="tandem",
        description="Tandem: an RTOS and Linux side by side under one EL3 monitor, on QEMU.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="boot with the Linux console on this terminal")
    _boot_options(run, timing="auto", auto=True)
    _run_options(run)

    ex = sub.add_parser(
        "exec",
        help="boot, run shell commands as root in Linux, print their output, power off",
        description="Exits with the commands' exit status.",
    )
    _boot_options(ex, timing="auto", auto=True)
    _run_options(ex)
    ex.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds (default 600; with --gdb, the time you spend in gdb counts)",
    )
    ex.add_argument(
        "--kernel",
        type=Path,
        default=None,
        help="another Linux image than Tandem's, e.g. `make trace-kernel`'s "
        "build/linux-trace/arch/arm64/boot/Image (docs/linux.md)",
    )
    ex.add_argument("commands", nargs=argparse.REMAINDER, help="-- 'SHELL COMMANDS'")

    b = sub.add_parser("bench", help="benchmarks")
    bsub = b.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name, (about, flags) in BENCH_ALIASES.items():
        _bench_alias(bsub, name, about, flags)
    _bench_alias(sub, "trace", *TRACE_ALIAS)

    pf = sub.add_parser(
        "perfetto",
        help="a Perfetto trace's slices per track (tandem trace's trace.perfetto-trace)",
        description="Reads the file back with Perfetto's own protobuf classes and prints, per "
        "track, depth and name, the slices' count and time in µs (the columns of "
        "perfetto.WORLDS_QUERY). --sql runs a query in trace_processor instead, which needs "
        "a trace_processor_shell binary in $TANDEM_TRACE_PROCESSOR.",
    )
    pf.add_argument("file", type=Path, help="the trace (e.g. results/trace/latest/...)")
    pf.add_argument("--sql", default=None, help="a trace_processor query")

    g = sub.add_parser(
        "gdb",
        help="gdb-multiarch on the boot waiting for it (run --gdb / exec --gdb), with the "
        "monitor's, the RTOS's and Linux's symbols",
        description="Runs gdb-multiarch with the gdb script of the newest boot that still runs "
        "and was started with --gdb (build/logs/<boot>/gdbinit): aarch64, the symbols of "
        "build/firmware/tandem-monitor.elf, tandem-rtos.elf (and tandem-hyp.elf with "
        "partitions) and the kernel's vmlinux at their load addresses, connected to QEMU. "
        "Arguments after -- go to gdb (e.g. -- -batch -ex 'break start_kernel').",
    )
    g.add_argument(
        "--script",
        type=Path,
        default=None,
        help="a boot's gdb script (default: the newest waiting boot's)",
    )
    g.add_argument("gdb_args", nargs=argparse.REMAINDER, help="-- GDB ARGUMENTS")

    sub.add_parser(
        "check-setup",
        help="check that this machine's QEMU can boot Tandem (make setup runs it)",
        description="QEMU's version, that it builds Tandem's exact machine from a boot's "
        "command line (no missing ROM or data file), and that it loads TCG plugins. "
        "Exits 1 with what is missing.",
    )

    cdt = sub.add_parser(
        "check-dt",
        help="validate every generated device tree against the bindings of what Tandem adds "
        "(dt-validate; make lint runs it)",
        description="Checks linux/Documentation/devicetree/bindings/firmware/tandem,tandem.yaml "
        "with dt-doc-validate, then generates each configuration's device trees (Linux idling "
        "through PSCI and with WFI alone; partitions each theirs; static capacities) and "
        "validates them with dt-validate against it, Linux's PSCI and idle-state bindings and "
        "dt-schema's core schemas. Exits 1 with what was found.",
    )
    cdt.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="write the trees to DIR"
    )

    e = sub.add_parser("exp", help="experiments of the papers (experiments/NAME.toml)")
    esub = e.add_subparsers(dest="exp", required=True, metavar="ACTION")
    esub.add_parser("list", help="the experiments and what they measure")
    er = esub.add_parser(
        "run",
        help="run one; results in results/NAME/<run-id>/",
        description="Runs experiments/NAME.toml and writes results/NAME/<run-id>/ "
        "(raw data, summary.json/.csv, PNG plots, report.md) and results/NAME/latest.",
    )
    er.add_argument("name", help="experiment (see `tandem exp list`)")
    _exp_run_options(er)
    em = esub.add_parser(
        "merge",
        help="make one run from the shards of `exp run --shard` (results/NAME/<run-id>/)",
        description="Refuses unless the directories are shards of one run (the same "
        "experiment, scenario, commit, QEMU, kernel, firmware, timing and quantum; the host "
        "may differ) holding every boot exactly once; then writes the summary, plots and "
        "report as a run on one machine would.",
    )
    em.add_argument("name", help="experiment")
    em.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="the shards' directories, or archives of kept shards (results/NAME/pending.tar.xz)",
    )
    ek = esub.add_parser(
        "keep",
        help="add finished shards to results/NAME/pending.tar.xz, to merge in a later sitting",
        description="For a run longer than one sitting: adds the finished shards' directories "
        "to results/NAME/pending.tar.xz (created if missing), which is committed until the last "
        "shard is in; then `tandem exp merge NAME results/NAME/pending.tar.xz`. Refused, and the "
        "archive left as it was, for a shard that did not finish, is kept already, or is not of "
        "the run the kept shards are of (scenario, commit, build: as merge checks).",
    )
    ek.add_argument("name", help="experiment")
    ek.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="the shards' directories")
    ecmp = esub.add_parser(
        "compare",
        help="two runs' worst cases side by side (exit 1 if any differs by more than --tolerance)",
    )
    ecmp.add_argument("name", help="experiment")
    ecmp.add_argument("runs", nargs=2, metavar="RUN", help="run ids (results/NAME/RUN)")
    ecmp.add_argument("--tolerance", type=float, default=10.0, help="%% (default 10)")
    esub.add_parser(
        "claims",
        help="every claim of the papers beside our latest runs: results/CLAIMS.md and the "
        "README's table",
        description="Evaluates each claim on the latest full run that measures it "
        "(harness/tandem/exp/NAME/claims.py) and writes results/CLAIMS.md and the README's "
        "table.",
    )
    _bench_alias(esub, "kernel-trace", *KERNEL_TRACE_ALIAS, experiment="linux-rt-trace")
    erep = esub.add_parser("report", help="redraw a run's plots and report, print the report")
    erep.add_argument("name", help="experiment")
    erep.add_argument("--run", help="run id (default: the latest)")
    return p


def _exp(args: argparse.Namespace) -> int:
    from tandem import exp

    if args.exp == "list":
        for name, about in exp.listing():
            print(f"{name:10} {about}")
        return 0
    if args.exp == "compare":
        table, worst = exp.compare(args.name, args.runs[0], args.runs[1])
        print(table, end="")
        return 0 if worst <= args.tolerance else 1
    if args.exp == "claims":
        from tandem import claims

        out = claims.write(exp.claim_tests())
        print(out.read_text(), end="")
        print(f"(claims: {out}; README table updated)", file=sys.stderr)
        return 0
    if args.exp == "kernel-trace":
        return _exp_run(args, "linux-rt-trace", _alias_keys(args, KERNEL_TRACE_ALIAS[1]))
    if args.exp == "merge":
        out = exp.merge(args.name, args.dirs)
        print((out / "report.md").read_text(), end="")
        print(f"results: {out}")
        return 0
    if args.exp == "keep":
        from tandem.exp import pending

        archive, held = pending.keep(args.name, args.dirs)
        print(f"{archive}: shards {', '.join(held)} of {held[0].split('/')[1]}")
        return 0
    if args.exp == "report":
        run_dir, text = exp.report(args.name, args.run)
        print(text, end="")
        print(f"(report: {run_dir / 'report.md'})", file=sys.stderr)
        return 0
    return _exp_run(args, args.name)


def _alias_keys(args: argparse.Namespace, flags: tuple[BenchFlag, ...]) -> dict[str, object]:
    """The scenario keys an alias's flags set (those given)."""
    return {
        f.key: getattr(args, f"bench_{f.key}")
        for f in flags
        if getattr(args, f"bench_{f.key}") is not None
    }


def _exp_run(args: argparse.Namespace, name: str, extra: dict[str, object] | None = None) -> int:
    """`exp run NAME` (and a bench that is an experiment: `extra`, its flags'
    scenario keys)."""
    from tandem import exp
    from tandem.exp import scenario

    overrides: dict[str, object] = dict(scenario.parse_override(o) for o in args.set)
    if args.timing is not None:
        overrides["timing"] = args.timing
    if args.reps is not None:
        overrides["reps"] = args.reps
    if args.board is not None:
        overrides["board"] = args.board
    overrides |= extra or {}
    out = exp.run(name, args.quick, overrides, jobs=args.jobs, shard=args.shard)
    if args.shard is not None:
        print(f"shard {args.shard.index}/{args.shard.count}: {out}")
        return 0
    print((out / "report.md").read_text(), end="")
    print(f"results: {out}")
    return 0


def _check_setup() -> int:
    from tandem.platform.setup_check import check_qemu

    checks = check_qemu()
    for c in checks:
        print(f"{'ok' if c.ok else 'MISSING'}: {c.what}: {c.detail}")
    return 0 if all(c.ok for c in checks) else 1


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C: the cleanup paths (QEMU killed, a run left as
    .partial) run instead of the process vanishing with QEMU still up."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        if args.command in ("run", "exec"):
            if args.timing == "auto" and args.memmodel is not None:
                timing, why = PERCORE, "auto: the memory model needs per-core timing"
            else:
                timing, why = choose_timing(args.timing, args.smp, os.cpu_count() or 1)
            if args.command == "run" or args.timing == "auto":
                print(f"tandem: {timing} timing ({why})", file=sys.stderr)
            args.timing = timing
        if args.command == "run":
            return run_interactive(_options(args))
        if args.command == "exec":
            commands = args.commands
            if commands and commands[0] == "--":
                commands = commands[1:]
            if not commands:
                raise TandemError("exec: give the commands after --, e.g. tandem exec -- 'nproc'")
            result = run_exec(
                dataclasses.replace(_options(args), kernel=args.kernel),
                " ".join(commands) + "\n",
                timeout_s=args.timeout,
                echo=lambda line: print(line, flush=True),
            )
            if result.reboots:
                print(
                    f"tandem: the commands restarted Linux {result.reboots} time(s) (the monitor "
                    "restarted it alone; the RTOS ran on) and ran again each time",
                    file=sys.stderr,
                )
            return result.status
        if args.command == "bench":
            return _exp_run(args, args.bench, _alias_keys(args, BENCH_ALIASES[args.bench][1]))
        if args.command == "trace":
            return _exp_run(args, "trace", _alias_keys(args, TRACE_ALIAS[1]))
        if args.command == "exp":
            return _exp(args)
        if args.command == "check-setup":
            return _check_setup()
        if args.command == "perfetto":
            from tandem.instruments import perfetto

            return perfetto.main(args.file, args.sql)
        if args.command == "gdb":
            extra = args.gdb_args[1:] if args.gdb_args[:1] == ["--"] else args.gdb_args
            return gdb.main(args.script, extra)
        if args.command == "check-dt":
            from tandem.platform import dtcheck

            return dtcheck.main(args.keep)
    except TandemError as e:
        print(f"tandem: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
