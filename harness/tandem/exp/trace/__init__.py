"""Experiment `trace` (`tandem trace`): which world (the RTOS, Linux, idle)
ran on each core over the last few ms while Linux runs a load, from the
monitor's per-core world-switch trace rings, dumped in Linux by
tandem-trace (rings.py); with `linux_sched`, Linux's own sched_switch
events put its tasks on the same tracks, on the counter's clock
(instruments/linuxsched.py).

One boot, per-core timing by default: virtual timing's round robin would
draw QEMU's turns as the worlds' time.

Results: results/trace/<run-id>/ (summary.json, trace.csv, tasks.csv with
`linux_sched`, timeline.png, the Perfetto trace trace.perfetto-trace,
report.md, raw.tar.xz with the console). The runs made before `tandem
trace` was an experiment keep the rings' dump as rings.txt and have no
report.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, boot_options, one_seed, summary_head
from tandem.exp.scenario import Scenario
from tandem.exp.trace.plot import plot
from tandem.exp.trace.report import report
from tandem.exp.trace.rings import (
    dump,
    intervals,
    linux_sched,
    parse,
    perfetto_slices,
    shares,
    us_since,
    window,
)
from tandem.exp.trace.script import script
from tandem.exp.trace.spec import (
    LABEL,
    NAME,
    SCHEMA,
    TASKS_CSV,
    TRACE_FILE,
    WORLDS_CSV,
    timeout_s,
    window_ms,
    workload,
)
from tandem.exp.units import Measured
from tandem.instruments import perfetto
from tandem.results import write_atomic

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """A timeline is Tandem's own view, no paper's claim."""
    return []


def units(s: Scenario) -> list[Boot]:
    """The one boot: the load, then the dump."""
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME} dumps the rings once in one boot; reps must be 1")
    window_us = s.integer("window_us")
    return [
        Boot(
            LABEL,
            boot_options(
                s,
                s.text("timing"),
                config=s.text("config"),
                smp=s.integer("smp"),
                linux_idle=s.text("linux_idle"),
                workload=workload(s.integers("workload")),
                linux_seed=one_seed(s, "it dumps the rings once in one boot"),
            ),
            script(window_us, s.text("load"), s.flag("linux_sched")),
            timeout_s=timeout_s(window_us),
            about=f"the last {window_ms(window_us):g} ms under load {s.text('load')}",
        )
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The summary (`tandem trace`'s keys, and the experiment's), and the
    window's files: trace.csv, tasks.csv, the Perfetto trace."""
    (boot,) = units(s)
    options = boot.options
    lines = measured.lines(LABEL)
    rings = dump(lines, measured.where(LABEL))
    trace = parse(rings)
    win = window(trace, window_ms(s.integer("window_us")))
    spans = intervals(trace, win)
    linux = linux_sched(lines, trace, win) if s.flag("linux_sched") else None
    summary: dict[str, object] = summary_head(s, options) | {
        "config": options.config.name,
        "smp": options.smp,
        "load": s.text("load"),
        "linux_idle": options.linux_idle,
        "workload": s.integers("workload"),
        "window_ms": window_ms(s.integer("window_us")),
        "window_ticks": [win.start, win.end],
        "counter_hz": trace.counter_hz,
        "cores_traced": list(win.cores),
        "switches_written": {str(c): n for c, n in trace.written.items()},
        # How long tandem-trace took to read the rings after the dump's time.
        "read_us": None
        if trace.read is None
        else round((trace.read - trace.now) * 1e6 / trace.counter_hz, 1),
        "share": shares(spans, win),
        "linux_sched": None,
    }
    rows = ["core,start_us,end_us,world"]
    rows += [f"{i.core},{i.start_us:.3f},{i.end_us:.3f},{i.world}" for i in spans]
    write_atomic(out / WORLDS_CSV, "\n".join(rows) + "\n")
    if linux is not None:
        summary["linux_sched"] = {
            "sched_switches": linux.switches,
            "lost_events": linux.lost,
            "clock_origin_ns": round(linux.clock.origin_ns, 1),
            "clock_uncertainty_ns": round(linux.clock.uncertainty_ns, 1),
            "clock_samples": linux.clock.samples,
            "marker": None
            if linux.marker is None
            else {"counter": linux.marker[0], "tracer_stamp_ticks": round(linux.marker[1], 1)},
            "task_slices": len(linux.tasks),
        }
        # A task's name may hold a comma: written by the csv module.
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(["core", "start_us", "end_us", "comm", "pid"])
        for t in linux.tasks:
            a, b = us_since(win, t.start), us_since(win, t.end)
            w.writerow([t.core, f"{a:.3f}", f"{b:.3f}", t.comm, t.pid])
        write_atomic(out / TASKS_CSV, text.getvalue())
    slices = perfetto_slices(trace, win, linux.tasks if linux else None)
    tmp = out / (TRACE_FILE + ".tmp")
    tmp.write_bytes(perfetto.build(slices, win.cores))
    tmp.replace(out / TRACE_FILE)
    return summary
