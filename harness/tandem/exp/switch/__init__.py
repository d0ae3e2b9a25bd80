"""Experiment `switch` (`tandem bench switch`): the world switch's cost in
instructions, each way, and where they go, from QEMU's own execution log of
the monitor's and the RTOS's code (instruments/switchcost.py).

One boot (virtual timing and 1 core by default: one instruction is one
nanosecond, and no other vCPU's instructions fall inside a switch) in which
Linux idles with WFI for `idle_ms` while the RTOS's timer interrupts switch
worlds on every tick. Linux -> RTOS runs from the monitor's lower-EL FIQ
vector to the RTOS's IRQ vector, RTOS -> Linux from the RTOS's YIELD `smc`
to the monitor's `eret` into Linux. The log, hundreds of MB, is counted on
the host that booted and dropped (Boot.reduce): raw/ keeps the console log
and the counts.

`tandem exp run rpc` reads the latest run's round trip
(exp/rpc/__init__.py, `switch_round_trip_ns`): the summary keeps
`linux_to_rtos` and `rtos_to_linux` at its top level, as the bench always
wrote them.

Results: results/switch/<run-id>/ (summary.json, report.md, raw.tar.xz).
Runs made before `bench switch` was an experiment keep summary.json only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, boot_options, one_seed, summary_head
from tandem.exp.scenario import Scenario
from tandem.exp.switch.parse import count_switches, directions, elves
from tandem.exp.switch.report import report
from tandem.exp.switch.script import logged_code, script
from tandem.exp.switch.spec import (
    DIRECTIONS,
    EXEC_LOG,
    LABEL,
    LINUX_IDLE,
    NAME,
    SCHEMA,
    TIMEOUT_S,
    UNIT,
)
from tandem.exp.units import Measured
from tandem.platform import qemu_command
from tandem.platform.board import Board

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """The switch's cost is Tandem's own figure, no paper's claim."""
    return []


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Nothing to draw: two counts and where they go, in the report."""


def _execution_log(board: Board) -> Callable[[], tuple[str, ...]]:
    """QEMU's options for the execution log, given when the boot starts:
    the ELFs that count it must be there before a boot that needs them
    (listing the run's boots, a shard's plan or a merge must not)."""

    def options() -> tuple[str, ...]:
        elves(board.name)
        return qemu_command.exec_log_args(logged_code(board), "{run_dir}/" + EXEC_LOG)

    return options


def units(s: Scenario) -> list[Boot]:
    """The one boot, logged."""
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME}: one boot counts every switch; reps must be 1")
    return [
        Boot(
            LABEL,
            boot_options(
                s,
                s.text("timing"),
                config=s.text("config"),
                smp=s.integer("smp"),
                linux_idle=LINUX_IDLE,
                linux_seed=one_seed(s, "one boot counts every switch"),
            ),
            script(s.integer("idle_ms")),
            timeout_s=TIMEOUT_S,
            about=f"Linux idles {s.integer('idle_ms')} ms under QEMU's execution log",
            instrument=_execution_log(s.board),
            reduce=lambda log_dir: count_switches(log_dir, s.board.name),
        )
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    (boot,) = units(s)
    counted = directions(measured.reduced(LABEL), measured.where(LABEL))
    options = boot.options
    return summary_head(s, options, benchmark=True) | {
        "linux_idle": options.linux_idle,
        "unit": UNIT,
        "measured": DIRECTIONS,
        "smp": options.smp,
        "config": options.config.name,
        "idle_ms": s.integer("idle_ms"),
        **counted,
    }
