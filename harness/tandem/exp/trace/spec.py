"""The `trace` experiment's name, scenario keys, the worlds and the loads."""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.exp.scenario import Key
from tandem.platform.configs import Workload, available
from tandem.platform.dtb import LINUX_IDLE

NAME = "trace"

# Trace event values (abi/src/shm.rs TRACE_TO_*) and the world each enters.
EVENTS = {1: "rtos", 2: "linux", 3: "idle"}
WORLDS = ("rtos", "linux", "idle")
LOADS = ("none", "hackbench")

# `reps` must be 1: one boot, one dump (another window: another run).
SCHEMA = {
    # Microseconds, not ms: scenario keys are whole numbers (`tandem trace
    # --window-ms 2.5` sets 2500).
    "window_us": Key(int, "the last this many µs before the dump", minimum=1, maximum=10_000_000),
    "load": Key(str, "what Linux runs meanwhile", choices=LOADS),
    "linux_sched": Key(
        bool, "also Linux's own sched_switch events (its tracer), on the counter's clock"
    ),
    "config": Key(str, "platform configuration (configs/NAME.toml)", choices=tuple(available())),
    "smp": Key(int, "cores", minimum=1, maximum=8),
    "linux_idle": Key(str, "how Linux idles (docs/linux.md)", choices=LINUX_IDLE),
    "workload": Key(
        list,
        "the RTOS's one periodic task instead of its demo: [core, period_us, work_us], "
        "or [] for the demo",
        item=int,
        minimum=0,
        non_empty=False,
    ),
}

# The one boot's label in raw/.
LABEL = "trace"

# The files every run writes beside its summary.
TRACE_FILE = "trace.perfetto-trace"
WORLDS_CSV = "trace.csv"
TASKS_CSV = "tasks.csv"
TIMELINE = "timeline.png"

# Linux's load starts, runs this long before the dump (plus the window), so
# the window shows it in full swing, and is stopped after the dump.
SETTLE_MS = 300
# With linux_sched: events kept from this long before the window and after
# its end (µs), and the tracer's buffer per CPU.
SCHED_MARGIN_US = 1000
SCHED_BUFFER_KB = 8192


def workload(values: list[int]) -> Workload | None:
    """The scenario's `workload` as the RTOS's periodic task, or None."""
    if not values:
        return None
    if len(values) != 3:
        raise TandemError(
            f"{NAME}: workload must be [core, period_us, work_us] or [], got {values}"
        )
    core, period_us, work_us = values
    return Workload(core=core, period_us=period_us, work_us=work_us)


def window_ms(window_us: int) -> float:
    """The window in ms, as the summary and the title write it."""
    return window_us / 1000


def timeout_s(window_us: int) -> float:
    """Host seconds before the boot is given up (as `tandem trace` allowed)."""
    return 900 + window_us / 1000
