"""Experiment `ctxsw` (paper 004 on Armv8): the cost of a directed hand-off
between two protected tasks, with ASID-tagged address spaces against a TLB
flush on every switch.

The RTOS's `ctxsw` workload (boot-configured) runs two tasks at S-EL0, each
in its own address space, on one core: they hand a value back and forth with
`sys_chg(task, value)` (the paper's call) `switches` times, each writing
`pages` pages of its own memory between hand-offs. The RTOS times the
hand-offs with the generic counter and leaves a record in the shared region
(abi `CtxswRecord` at 0x108000), which Linux reads once it is complete.

Per cell (mode x pages x timing, and in per-core timing x memory profile)
one boot per Linux seed (the tasks run before Linux, so a seed should move
nothing); in virtual timing one instruction is one nanosecond, so the
per-switch time of the best batch (no interrupt in it) is the instruction
count of the hand-off path. With a memory profile (`profiles`, issue 49:
`a53`, whose ASID-tagged TLBs are the Armv8 form of the paper's FCSE) the
model charges the tasks' TLB refills, cache misses and page walks into the
core's clock, and its counters give the refill cost beside the measured
time (`model_refill_ns`).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from tandem.exp.ctxsw.spec import NAME, NO_MODEL, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.instruments import switchcost
from tandem.instruments.handoffs import guest_script, parse_record, per_switch
from tandem.platform import memmodel, qemu_command
from tandem.platform.board import Board
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import TLB_MODES, Ctxsw
from tandem.platform.paths import BUILD
from tandem.platform.timing import PERCORE, Timing

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
# And in a run with a memory model.
MODEL_COLUMNS = ("profile", "model_refill_ns")


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


def _profiles(s: Scenario, timing: str) -> list[str]:
    """The memory profiles a timing's cells boot with: the scenario's in
    per-core timing (the model needs it), none in the others."""
    if s.text("memmodel") != NO_MODEL:
        raise TandemError(
            f"{NAME} sets each boot's memory model itself: name them in `profiles` "
            f'(e.g. --set \'profiles=["none", "a53"]\'), not memmodel'
        )
    profiles = s.texts("profiles")
    for spec in profiles:
        if spec != NO_MODEL:
            memmodel.check_profile(spec)
    return profiles if timing == PERCORE else [NO_MODEL]


def _cells(s: Scenario) -> list[tuple[str, str, str, int]]:
    return [
        (timing, profile, mode, pages)
        for timing in s.texts("timings")
        for profile in _profiles(s, timing)
        for pages in s.integers("pages")
        for mode in s.texts("modes")
    ]


def _options(s: Scenario, timing: str, profile: str, **options: Any) -> BootOptions:  # noqa: ANN401
    """A cell's boot options, with its memory profile."""
    base = boot_options(s, timing=timing, **options)
    if profile == NO_MODEL:
        return base
    return dataclasses.replace(base, timing=dataclasses.replace(base.timing, memmodel=profile))


def _reps(s: Scenario, timing: str) -> int:
    """Boots per cell: one where a boot repeats exactly, else `host_reps`."""
    return 1 if Timing(timing).deterministic else s.integer("host_reps")


def _path_timing(s: Scenario) -> str | None:
    """The timing the hand-off path is counted in (a deterministic one), or
    None if the scenario has none."""
    return next((t for t in s.texts("timings") if Timing(t).deterministic), None)


def _label(s: Scenario, timing: str, profile: str, mode: str, pages: int, run: Run) -> str:
    """A cell's boot: its repetition counted from 0 (as before issue 49),
    after its Linux seed where the scenario has other seeds than 0 alone;
    its memory profile after the timing where it has one."""
    seed = f"seed{run.seed}-" if seeded(s) else ""
    model = "" if profile == NO_MODEL else f"{profile}-"
    return f"{timing}-{model}{mode}-{pages}p-{seed}{run.rep - 1}"


def units(s: Scenario) -> list[Boot]:
    """A boot per cell, Linux seed and repetition (host_reps in host
    timing), the modes of one pages, seed and repetition (the boots a claim
    pairs) back to back; then per mode one that logs the hand-off path's
    instructions (with the first seed: the tasks run before Linux)."""
    smp = s.integer("smp")
    out = [
        Boot(
            _label(s, timing, profile, mode, pages, run),
            _options(
                s,
                timing,
                profile,
                smp=smp,
                ctxsw=Ctxsw(core=smp - 1, mode=mode, pages=pages, switches=s.integer("switches")),
                linux_seed=run.seed,
            ),
            guest_script(),
            timeout_s=1800,
            about=_label(s, timing, profile, mode, pages, run),
            keep=() if profile == NO_MODEL else (memmodel.STATS_FILE,),
        )
        for timing in s.texts("timings")
        for profile in _profiles(s, timing)
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


def translation_stall_ns(text: str, cores: int, where: str) -> int:
    """What the memory model charged the tasks' core (the last of `cores`)
    for translation over a boot (its memmodel.json)."""
    stats = memmodel.parse_stats(text, where)
    found = stats.get("cores")
    if not isinstance(found, list) or len(found) != cores:
        raise TandemError(f"{where}: {memmodel.STATS_FILE} has no counters for {cores} core(s)")
    return memmodel.core_counter(stats, cores - 1, "translation_stall_ns", where)


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    counter_hz = s.board.counter_hz
    smp = s.integer("smp")
    progress = Progress(NAME)
    rows: list[dict[str, object]] = []
    for timing, profile, mode, pages in _cells(s):
        reps = _reps(s, timing)
        means, bests, refills = [], [], []
        cell_runs = runs(s, reps)
        for run in cell_runs:
            label = _label(s, timing, profile, mode, pages, run)
            where = measured.where(label)
            record = parse_record(measured.lines(label), where)
            if record["mode"] != TLB_MODES.index(mode) or record["pages"] != pages:
                raise TandemError(f"{where}: the RTOS ran another cell: {record}")
            mean, best = per_switch(record, counter_hz)
            progress.note(f"{label}: {mean:.1f} ns per hand-off (best batch {best:.1f})")
            means.append(mean)
            bests.append(best)
            if profile != NO_MODEL:
                stall = translation_stall_ns(measured.text(label, memmodel.STATS_FILE), smp, where)
                refills.append(stall / int(record["switches"]))
        model: dict[str, object] = {}
        if refills:
            model = {
                # The model's translation stalls on the tasks' core over the
                # boot, per hand-off: the TLB refills (and their walks) the
                # model charged; the boot's other stalls there (Linux's, on
                # one core) are the same in both modes, so the modes'
                # difference is the refills a flush costs.
                "model_refill_ns": round(statistics.median(refills), 2),
                "model_refill_runs_ns": [round(r, 2) for r in refills],
            }
        rows.append(
            {
                "mode": mode,
                "timing": timing,
                "profile": profile,
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
                **model,
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
        "memmodel_profiles": {
            p: memmodel.provenance(p)
            for t in s.texts("timings")
            for p in _profiles(s, t)
            if p != NO_MODEL
        },
        # Counted from QEMU's execution log: one hand-off, svc to svc.
        "handoff_path": paths,
    }
    modelled = any(r.get("model_refill_ns") is not None for r in rows)
    write_summary(out, summary, COLUMNS + MODEL_COLUMNS if modelled else COLUMNS)
    return summary
