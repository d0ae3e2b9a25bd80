"""Experiment `restart` (`tandem bench restart`): restarts Linux again and
again under load, in turn with `reboot -f`, the `b` (reboot) and the `c`
(crash: a panic) sysrq, while the RTOS's cyclic jobs run on every core;
measures how long each restart takes, in two phases (parse.py), and what
the RTOS lost meanwhile (docs/monitor.md, "Restarting Linux").

One boot, per-core timing by default, restarting `count` times. The phases
are the host's wall time: the harness reads its clock at the lines of the
console that begin and end them (Boot.host_lines, as the bench read it
live), and keeps each time with its line in the unit's record, so the
summary is made, and remade, from raw data like every experiment's. The
boot asks to run alone (Boot.host_time): boots beside it would lengthen
its phases.

Results: results/restart/<run-id>/ (summary.json, restarts.csv, report.md,
restart.png, raw.tar.xz with the console, the secure console's log, the
script and the unit's record). The runs made before `bench restart` was an
experiment have the secure log beside them, no raw archive, and are
redrawn as they were written.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, boot_options, one_seed, summary_head
from tandem.exp.restart.parse import clock, monitor_gaps_ms, phase_stats, restarts
from tandem.exp.restart.plot import plot
from tandem.exp.restart.report import report
from tandem.exp.restart.script import script
from tandem.exp.restart.spec import (
    CLOCK,
    LABEL,
    NAME,
    SCHEMA,
    TARGET_HOST_S,
    TIMED,
    load_s,
    timeout_s,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.platform import rtos_status
from tandem.pool import HostTime

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """Restarting Linux alone is Tandem's own question, no paper's."""
    return []


def units(s: Scenario) -> list[Boot]:
    """The one boot: Linux restarted `count` times, a panic among them."""
    if s.integer("reps") != 1:
        raise TandemError(
            f"{NAME} restarts Linux `count` times in one boot; reps must be 1 (more "
            "restarts: a larger count)"
        )
    count = s.integer("count")
    return [
        Boot(
            LABEL,
            boot_options(
                s,
                s.text("timing"),
                config=s.text("config"),
                smp=s.integer("smp"),
                linux_idle=s.text("linux_idle"),
                linux_seed=one_seed(s, "one boot restarts Linux `count` times"),
            ),
            script(count, load_s(s.integer("load_ms"))),
            timeout_s=timeout_s(count),
            about=f"{count} restarts of Linux in one boot",
            keep_secure_log=True,
            host_time=HostTime.ALL,
            host_lines=TIMED,
            panics=True,
        )
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The summary (the bench's keys, and the experiment's), and
    restarts.csv: one row per restart."""
    (boot,) = units(s)
    count = s.integer("count")
    where = measured.where(LABEL)
    secure = measured.text(LABEL, "secure.log")
    rows = restarts(clock(measured.host_lines(LABEL), count, where), count, monitor_gaps_ms(secure))
    status = rtos_status.last(secure)
    seconds, cores = status.seconds, status.cores
    host = [float(str(r["host_s"])) for r in rows]
    options = boot.options
    summary: dict[str, object] = summary_head(s, options, benchmark=True) | {
        "smp": options.smp,
        "config": options.config.name,
        "linux_idle": options.linux_idle,
        "count": count,
        "load": f"hackbench -g 2, from {load_s(s.integer('load_ms'))} s before each request",
        "clock": CLOCK,
        "target_host_s": TARGET_HOST_S,
        "restart_median_s": round(statistics.median(host), 3),
        "restart_max_s": max(host),
        "phases": phase_stats(rows),
        "rtos_seconds": seconds,
        "rtos_jobs_expected_per_core": 1000 * seconds,
        "rtos_jobs": {str(c): j for c, (j, _) in cores.items()},
        "rtos_missed": {str(c): x for c, (_, x) in cores.items()},
        "rtos_missed_total": status.missed,
        "restarts": rows,
    }
    tmp = out / "restarts.csv.tmp"
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    tmp.replace(out / "restarts.csv")
    return summary
