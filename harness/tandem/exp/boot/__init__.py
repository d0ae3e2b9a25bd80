"""Experiment `boot` (`tandem bench boot`): how long this host takes to
boot Tandem, in the host's wall time: from QEMU's start to the first
command running in Linux's shell (rcS done, the tandem driver loaded), and
from the commands' end to QEMU's exit (Linux's power-off).

A benchmark of the host as much as of Tandem: the figures are the
harness's monotonic clock, not the guest's, so they change with the host,
its load and the timing mode (host timing by default, the mode `make run`
picks on a host with a core per vCPU). `reps` boots, one after another:
boots side by side would share the host's cores and lengthen each other,
so a run refuses `--jobs` above 1 whatever its timing (pool.choose_jobs).
Shards (`--shard`) on several machines each time their own host; the
report names each boot's host.

Results: results/boot/<run-id>/ (summary.json, summary.csv, report.md,
raw.tar.xz with each boot's console log and record). Runs made before
`bench boot` was an experiment are kept per configuration, under
results/boot/CONFIG/<run-id>/ (summary.json, samples.json).
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from tandem.claims import Claim
from tandem.exp.boot.parse import BootSample, sample, times
from tandem.exp.boot.report import report
from tandem.exp.boot.script import SCRIPT
from tandem.exp.boot.spec import CLOCK, NAME, SCHEMA, TIMEOUT_S
from tandem.exp.common import (
    Boot,
    boot_options,
    run_tag,
    run_words,
    runs,
    summary_head,
    write_summary,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.pool import HostTime

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]

# summary.csv: one row per boot.
COLUMNS = tuple(f.name for f in fields(BootSample))


def claims(root: Path) -> list[Claim]:
    """The host's boot time is no paper's claim."""
    return []


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Nothing to draw: a handful of boots, listed in the report."""


def units(s: Scenario) -> list[Boot]:
    """`reps` boots of the scenario's configuration per Linux seed, each
    timed."""
    reps = s.integer("reps")
    return [
        Boot(
            # run1, run2 ... (seed5-run1 ... with other seeds than 0 alone).
            run_tag(s, run, "run"),
            boot_options(
                s,
                s.text("timing"),
                config=s.text("config"),
                smp=s.integer("smp"),
                linux_idle=s.text("linux_idle"),
                linux_seed=run.seed,
            ),
            SCRIPT,
            timeout_s=TIMEOUT_S,
            about=f"boot {run_words(s, run, reps)}, timed",
            host_time=HostTime.ALL,
        )
        for run in runs(s, reps)
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    boots = units(s)
    samples = [
        sample(run, measured.record(b.label), measured.where(b.label))
        for run, b in enumerate(boots, start=1)
    ]
    options = boots[0].options
    summary: dict[str, object] = summary_head(s, options, benchmark=True) | {
        "clock": CLOCK,
        "smp": options.smp,
        "config": options.config.name,
        "linux_idle": options.linux_idle,
        "runs": len(samples),
        **times(samples),
        "hosts": sorted({x.host for x in samples}),
        "rows": [asdict(x) for x in samples],
        # Each boot's Linux seed, beside the rows (one per boot).
        "run_seeds": [b.options.linux_seed for b in boots],
    }
    write_summary(out, summary, COLUMNS)
    return summary
