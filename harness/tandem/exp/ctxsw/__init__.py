"""Experiment `ctxsw` (paper 004 on Armv8): the cost of a directed hand-off
between two protected tasks, with ASID-tagged address spaces against a TLB
flush on every switch.

The RTOS's `ctxsw` workload (boot-configured) runs two tasks at S-EL0, each
in its own address space, on one core: they hand a value back and forth with
`sys_chg(task, value)` (the paper's call) `switches` times, each writing
`pages` pages of its own memory between hand-offs. The RTOS times the
hand-offs with the generic counter and leaves a record in the shared region
(abi `CtxswRecord` at 0x108000), which Linux reads once it is complete.

Per cell (mode x pages x timing) one boot; in virtual timing one instruction
is one nanosecond, so the per-switch time of the best batch (no interrupt in
it) is the instruction count of the hand-off path.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    Boot,
    Progress,
    Run,
    boot_options,
    runs,
    seeded,
    seeds,
    write_summary,
)
from tandem.exp.ctxsw.claims import claims
from tandem.exp.ctxsw.parse import hand_off_cycles
from tandem.exp.ctxsw.plot import plot
from tandem.exp.ctxsw.report import report
from tandem.exp.ctxsw.spec import NAME, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.instruments import switchcost
from tandem.instruments.handoffs import guest_script, parse_record, per_switch
from tandem.platform import qemu_command
from tandem.platform.board import Board
from tandem.platform.configs import TLB_MODES, Ctxsw
from tandem.platform.paths import BUILD
from tandem.platform.timing import Timing

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]

# The RTOS's ELF beside its binary in build/ (the Makefile copies it there):
# a machine measuring a shard of a run has build/, not cargo's target/.
RTOS_ELF = BUILD / "firmware" / "tandem-rtos.elf"
# The RTOS's code (and the protected tasks' code) lies in the first MiB of
# its RAM (boards/qemu-virt.toml): what QEMU logs.
RTOS_CODE_BYTES = 0x10_0000


def rtos_code(board: Board) -> str:
    """QEMU's address filter for the RTOS's code on `board`."""
    base = board.rtos_ram.base
    return f"{base:#x}..{base + RTOS_CODE_BYTES - 1:#x}"


COLUMNS = (
    "mode",
    "timing",
    "pages",
    "switches",
    "per_switch_ns",
    "best_per_switch_ns",
    "min_per_switch_ns",
    "max_per_switch_ns",
    "boots",
)


# QEMU's execution log of a path boot, in its log directory.
EXEC_LOG = "exec.log"


def _path_counter(switches: int) -> Callable[[Path], object]:
    return lambda log_dir: count_cycles(log_dir / EXEC_LOG, switches)


def count_cycles(log_path: Path, switches: int) -> dict[str, object]:
    """The hand-off path in instructions from QEMU's execution log (as
    `tandem bench switch` counts): the median cycle, and where it goes. The
    log (hundreds of MB) is removed once counted."""
    if not RTOS_ELF.exists():
        raise TandemError(f"{RTOS_ELF} missing (run `make build`)")
    with log_path.open() as f:
        log = switchcost.parse(f)
    log_path.unlink()
    symbols = switchcost.Symbols.load([RTOS_ELF])
    cycles = hand_off_cycles(log, symbols, symbols.address("vectors"))
    if len(cycles) < switches // 2:
        raise TandemError(f"{log_path}: only {len(cycles)} hand-off cycles in QEMU's log")
    totals = sorted(sum(c.values()) for c in cycles)
    median = statistics.median_low(totals)
    typical = next(c for c in cycles if sum(c.values()) == median)
    return {
        "samples": len(cycles),
        "median_instructions": median,
        "min_instructions": totals[0],
        "max_instructions": totals[-1],
        "by_function": dict(typical.most_common()),
    }


def _cells(s: Scenario) -> list[tuple[str, str, int]]:
    return [
        (timing, mode, pages)
        for timing in s.texts("timings")
        for pages in s.integers("pages")
        for mode in s.texts("modes")
    ]


def _reps(s: Scenario, timing: str) -> int:
    """Boots per cell: one where a boot repeats exactly, else `host_reps`."""
    return 1 if Timing(timing).deterministic else s.integer("host_reps")


def _path_timing(s: Scenario) -> str | None:
    """The timing the hand-off path is counted in (a deterministic one), or
    None if the scenario has none."""
    return next((t for t in s.texts("timings") if Timing(t).deterministic), None)


def _label(s: Scenario, timing: str, mode: str, pages: int, run: Run) -> str:
    """A cell's boot: its repetition counted from 0 (as before issue 49),
    after its Linux seed where the scenario has other seeds than 0 alone."""
    seed = f"seed{run.seed}-" if seeded(s) else ""
    return f"{timing}-{mode}-{pages}p-{seed}{run.rep - 1}"


def units(s: Scenario) -> list[Boot]:
    """A boot per cell, Linux seed and repetition (host_reps in host
    timing), the modes of one pages, seed and repetition (the boots a claim
    pairs) back to back; then per mode one that logs the hand-off path's
    instructions (with the first seed: the tasks run before Linux)."""
    smp = s.integer("smp")
    out = [
        Boot(
            _label(s, timing, mode, pages, run),
            boot_options(
                s,
                timing=timing,
                smp=smp,
                ctxsw=Ctxsw(core=smp - 1, mode=mode, pages=pages, switches=s.integer("switches")),
                linux_seed=run.seed,
            ),
            guest_script(),
            timeout_s=1800,
            about=_label(s, timing, mode, pages, run),
        )
        for timing in s.texts("timings")
        for pages in s.integers("pages")
        for run in runs(s, _reps(s, timing))
        for mode in s.texts("modes")
    ]
    timing = _path_timing(s)
    if timing is not None:
        pages = min(s.integers("pages"))
        for mode in s.texts("modes"):
            out.append(
                Boot(
                    f"path-{mode}-{pages}p",
                    boot_options(
                        s,
                        timing=timing,
                        smp=1,
                        linux_seed=seeds(s)[0],
                        ctxsw=Ctxsw(
                            core=0, mode=mode, pages=pages, switches=s.integer("path_switches")
                        ),
                        extra_qemu_args=qemu_command.exec_log_args(
                            rtos_code(s.board), "{run_dir}/" + EXEC_LOG
                        ),
                    ),
                    guest_script(),
                    timeout_s=1800,
                    about=f"the hand-off path, {mode}, {pages} pages, from QEMU's execution log",
                    reduce=_path_counter(s.integer("path_switches")),
                )
            )
    return out


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    counter_hz = s.board.counter_hz
    smp = s.integer("smp")
    progress = Progress(NAME)
    rows: list[dict[str, object]] = []
    for timing, mode, pages in _cells(s):
        reps = _reps(s, timing)
        means, bests = [], []
        cell_runs = runs(s, reps)
        for run in cell_runs:
            label = _label(s, timing, mode, pages, run)
            where = measured.where(label)
            record = parse_record(measured.lines(label), where)
            if record["mode"] != TLB_MODES.index(mode) or record["pages"] != pages:
                raise TandemError(f"{where}: the RTOS ran another cell: {record}")
            mean, best = per_switch(record, counter_hz)
            progress.note(f"{label}: {mean:.1f} ns per hand-off (best batch {best:.1f})")
            means.append(mean)
            bests.append(best)
        rows.append(
            {
                "mode": mode,
                "timing": timing,
                "pages": pages,
                "switches": s.integer("switches"),
                "per_switch_ns": round(statistics.median(means), 2),
                "best_per_switch_ns": round(min(bests), 2),
                "min_per_switch_ns": round(min(means), 2),
                "max_per_switch_ns": round(max(means), 2),
                "boots": len(cell_runs),
                # Each boot's ns per hand-off, with its Linux seed.
                "runs_ns": [round(m, 2) for m in means],
                "run_seeds": [run.seed for run in cell_runs],
            }
        )
    paths: list[dict[str, object]] = []
    if _path_timing(s) is not None:
        pages = min(s.integers("pages"))
        for mode in s.texts("modes"):
            label = f"path-{mode}-{pages}p"
            parse_record(measured.lines(label), measured.where(label))
            counted = measured.reduced(label)
            if not isinstance(counted, dict):
                raise TandemError(f"{measured.where(label)}: no hand-off path counted")
            progress.note(f"{label}: {counted['median_instructions']} instructions per hand-off")
            paths.append({"mode": mode, "pages": pages, **counted})
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "smp": smp,
        "seeds": seeds(s),
        "scenario": s.values,
        "rows": rows,
        # Counted from QEMU's execution log: one hand-off, svc to svc.
        "handoff_path": paths,
    }
    write_summary(out, summary, COLUMNS)
    return summary
