"""The `restart` experiment's report.md: the phases, per method, against
the target. Runs of `tandem bench restart` from before it was an
experiment (issue 48; their summary names a "benchmark" only) are redrawn
as they were written, reproduced by the bench's command."""

from __future__ import annotations

import statistics
from pathlib import Path

from tandem.exp.common import read_summary, run_id, summary_list
from tandem.exp.restart.spec import METHODS, NAME


def _bench_command(summary: dict[str, object]) -> str:
    """The command a run of the bench before issue 48 named."""
    timing = "" if summary["timing"] == "percore" else f" --timing {summary['timing']}"
    return f"./tandem bench restart --count {summary['count']}{timing}"


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary, "restarts")
    stats = summary["phases"]
    assert isinstance(stats, dict)
    count = summary["count"]
    target = summary["target_host_s"]
    median = float(str(summary["restart_median_s"]))
    if "experiment" in summary:
        what = (
            f"Run `{run_id(run_dir)}`: {count} restarts of Linux in one boot "
            f"({summary['timing_described']}), board `{summary['board']}`, config "
        )
        raw = (
            "Per restart: `restarts.csv`; plot: `restart.png`; the console, the secure "
            "console and the host's time at each line timed: `raw.tar.xz`."
        )
    else:
        what = f"{count} restarts of Linux in one boot ({summary['timing_described']}), config "
        command = _bench_command(summary)
        raw = "Per restart: `restarts.csv`; plot: `restart.png`."
    lines = [
        "# Restarting Linux while the RTOS runs on",
        "",
        f"{what}`{summary['config']}`, {summary['smp']} cores; load: {summary['load']}. "
        f"Reproduce: `{command}`.",
        "",
        f"- Linux reached a shell after **{count} of {count}** restarts.",
        f"- The RTOS: {summary['rtos_missed_total']} releases missed; jobs per core "
        f"{summary['rtos_jobs']} in {summary['rtos_seconds']} s of its uptime (expected "
        f"{summary['rtos_jobs_expected_per_core']} each, period 1 ms).",
        f"- Restart, host wall time: median **{median} s**, max {summary['restart_max_s']} s; "
        f"target < {target} s: **{'met' if median < float(str(target)) else 'not met'}**.",
        "",
        "## Phases",
        "",
        "| phase | host wall time, median (max) | guest time, median (max) |",
        "|---|---|---|",
    ]

    def cell(key: str, unit: str) -> str:
        st = stats.get(key)
        return "n/a" if st is None else f"{st['median']} {unit} ({st['max']} {unit})"

    lines += [
        "| stop: request to the new Linux's first line (Linux shuts down, the monitor stops "
        "it on every core and copies its images) | "
        f"{cell('host_stop_s', 's')} | monitor: {cell('monitor_ms', 'ms')} |",
        "| boot: first line to first command | "
        f"{cell('host_boot_s', 's')} | Linux's uptime: {cell('linux_uptime_s', 's')} |",
        f"| whole restart | {cell('host_s', 's')} | |",
        "",
        "## By method",
        "",
        "| method | restarts | host median (s) | stop median (s) | boot median (s) |",
        "|---|---|---|---|---|",
    ]
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue

        def med(key: str, mine: list[dict[str, object]] = mine) -> float:
            return round(statistics.median(float(str(r[key])) for r in mine), 3)

        lines.append(
            f"| `{method}` | {len(mine)} | {med('host_s')} | {med('host_stop_s')} | "
            f"{med('host_boot_s')} |"
        )
    lines += [
        "",
        "## Reading it",
        "",
        "Host wall time is what QEMU takes to emulate each phase, not what the machine "
        "would take: in the deterministic timing modes every core's instructions run on one "
        "host thread, and Linux's boot runs its code once, so most of it is QEMU translating "
        f"it. Guest time is the machine's own. {raw}",
        "",
    ]
    return "\n".join(lines)
