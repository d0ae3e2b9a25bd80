"""Experiment `linux-rt-trace` (`tandem exp kernel-trace`): which kernel
path is long under `linux-rt`'s kernel load, on the latency-tracing kernel
(`make trace-kernel`).

Per core count, one boot (per-core timing, Q = 1 µs, Linux alone) runs the
experiment's kernel load (and optionally its disk I/O load) with cyclictest,
as a cell of `linux-rt` does, under Linux's `preemptirqsoff` tracer without
function tracing: the tracer keeps the longest section with interrupts or
preemption off, its start and end, the task and the stack where it ended.
Every 200 ms the script prints that section and MemFree, then restarts the
tracer's maximum: a timeline of the longest section per window. The tracer
adds code to every change of the interrupt mask and of the preemption
count, so its sections and cyclictest's latencies here are longer than on
Tandem's kernel; what it shows is which path is long, and when.

Results: results/linux-rt-trace/<run-id>/ (summary.json, report.md,
sections.png, raw.tar.xz with each boot's console and script).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tandem.claims import Claim
from tandem.exp.common import Boot, boot_options, run_tag, run_words, runs, summary_head
from tandem.exp.linux_rt_trace.plot import plot
from tandem.exp.linux_rt_trace.report import report
from tandem.exp.linux_rt_trace.script import script
from tandem.exp.linux_rt_trace.sections import parse
from tandem.exp.linux_rt_trace.spec import (
    DISK_MIB,
    NAME,
    SCHEMA,
    TRACE_KERNEL,
    WINDOW_US,
    label,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """It names paths; `linux-rt` tests paper 001's claims."""
    return []


def units(s: Scenario) -> list[Boot]:
    """One boot per core count, each `reps` times per Linux seed."""
    io = s.flag("io_load")
    reps = s.integer("reps")
    return [
        Boot(
            f"{label(n)}-{run_tag(s, run)}",
            boot_options(
                s,
                s.text("timing"),
                config="linux-only",
                smp=n,
                kernel=TRACE_KERNEL,
                disk_mib=DISK_MIB if io else 0,
                linux_seed=run.seed,
            ),
            script(n, s.integer("samples"), io, s.integer("settle_ms")),
            timeout_s=4 * 3600,
            about=f"{n} core(s){', disk I/O' if io else ''}, {run_words(s, run, reps)}",
        )
        for n in s.integers("cores")
        for run in runs(s, reps)
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The summary: per boot, cyclictest's min/avg/max and every window's
    longest section."""
    options = units(s)[0].options
    boots = []
    for unit in units(s):
        sections, ct = parse(measured.lines(unit.label), measured.where(unit.label))
        boots.append(
            {
                "label": unit.label,
                "cores": unit.options.smp,
                "seed": unit.options.linux_seed,
                "cyclictest_us": ct,
                "windows": [dataclasses.asdict(w) for w in sections],
            }
        )
    return summary_head(s, options) | {
        "samples": s.integer("samples"),
        "io_load": s.flag("io_load"),
        "window_us": WINDOW_US,
        "boots": boots,
    }
