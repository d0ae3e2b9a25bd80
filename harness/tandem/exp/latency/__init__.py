"""Experiment `latency` (`tandem bench latency`): the RTOS's timer-interrupt
latency, from the secure timer's compare value to the third instruction of
the RTOS's IRQ handler, measured by the RTOS on each of its cores into
histograms in the shared region.

One boot (per-core timing by default: in virtual timing a busy core's
interrupt waits for QEMU's round robin to reach its vCPU, so the worst case
under hackbench would be QEMU's, not Tandem's) with two phases: Linux idle
for `idle_seconds`, then hackbench on every core (`hackbench_loops`). Each
phase's histograms are read with `tandem-lat` before and after it, and the
monitor's world switches and Linux's standby entries are counted around
it. A phase with fewer than `min_samples` samples fails the run.

Results: results/latency/<run-id>/ (summary.json, histograms.csv,
latency.png, report.md, raw.tar.xz with the console log). Runs made before
`bench latency` was an experiment keep summary.json and histograms.csv
only.
"""

from __future__ import annotations

from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, boot_options, one_seed, summary_head
from tandem.exp.latency.parse import (
    check_samples,
    histogram_rows,
    phases,
    read_counts,
    reports,
)
from tandem.exp.latency.plot import HISTOGRAMS, plot
from tandem.exp.latency.report import report
from tandem.exp.latency.script import script
from tandem.exp.latency.spec import (
    HISTOGRAM_BUCKETS,
    LABEL,
    MEASURED,
    NAME,
    PHASES,
    SCHEMA,
    TIMEOUT_S,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.results import write_atomic

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """The RTOS's own latency is Tandem's figure, no paper's claim."""
    return []


def units(s: Scenario) -> list[Boot]:
    """The one boot: both phases."""
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME}: one boot measures both phases; reps must be 1")
    return [
        Boot(
            LABEL,
            boot_options(
                s,
                s.text("timing"),
                config=s.text("config"),
                smp=s.integer("smp"),
                linux_idle=s.text("linux_idle"),
                linux_seed=one_seed(s, "one boot measures both phases"),
            ),
            script(s.integer("idle_seconds"), s.integer("hackbench_loops")),
            timeout_s=TIMEOUT_S,
            about=f"{s.integer('idle_seconds')} s idle, then hackbench -l "
            f"{s.integer('hackbench_loops')}",
        )
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    (boot,) = units(s)
    lines = measured.lines(LABEL)
    where = measured.where(LABEL)
    raw_reports = reports(lines, where)
    measured_phases = phases(raw_reports, read_counts(lines))
    check_samples(measured_phases, s.integer("min_samples"))
    tick_ns = raw_reports[0]["tick_ns"]
    if isinstance(tick_ns, bool) or not isinstance(tick_ns, int | float):
        raise TandemError(f"{where}: the idle phase's report has no tick_ns")
    options = boot.options
    summary: dict[str, object] = summary_head(s, options, benchmark=True) | {
        "measured": MEASURED,
        "resolution_ns": tick_ns,
        "histogram_limit_us": round(float(tick_ns) * HISTOGRAM_BUCKETS / 1000, 1),
        "smp": options.smp,
        "config": options.config.name,
        "linux_idle": options.linux_idle,
        "phases": measured_phases,
    }
    rows = histogram_rows(list(zip(PHASES, raw_reports, strict=True)))
    write_atomic(out / HISTOGRAMS, "\n".join(rows) + "\n")
    return summary
