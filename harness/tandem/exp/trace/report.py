"""The `trace` experiment's report.md: each core's share of the window per
world, how the dump was read, and with `linux_sched` how Linux's clock was
put on the counter's."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, read_summary, run_id
from tandem.exp.trace.spec import NAME, TASKS_CSV, TIMELINE, TRACE_FILE, WORLDS, WORLDS_CSV


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    share = summary["share"]
    written = summary["switches_written"]
    assert isinstance(share, dict) and isinstance(written, dict)
    read_us = summary["read_us"]
    lines = [
        "# Which world ran on each core",
        "",
        f"Run `{run_id(run_dir)}`: the last {num(summary, 'window_ms'):g} ms before "
        f"tandem-trace's dump of the monitor's world-switch rings, board `{summary['board']}`, "
        f"config `{summary['config']}`, {summary['smp']} cores, {summary['timing_described']}; "
        f"Linux's load: {summary['load']}. Reproduce: `{command}`.",
        "",
        "| core | " + " | ".join(WORLDS) + " | switches written since boot |",
        "|---|" + "---|" * len(WORLDS) + "---|",
    ]
    for core, mine in share.items():
        assert isinstance(mine, dict)
        cells = " | ".join(f"{100 * float(mine[w]):.1f} %" for w in WORLDS)
        lines.append(f"| {core} | {cells} | {written.get(core, '-')} |")
    lines += [
        "",
        "Cores that never switched have no row: before a core's first switch its world is "
        "unknown. The window ends at the dump's time, read before the first ring; "
        + (
            f"tandem-trace had read every ring {read_us} µs later."
            if read_us is not None
            else "the dump did not say when its reading ended."
        ),
    ]
    sched = summary.get("linux_sched")
    if isinstance(sched, dict):
        marker = sched.get("marker")
        lines += [
            "",
            "## Linux's tasks",
            "",
            f"Linux's tracer recorded {sched['sched_switches']} sched_switch events over the "
            f"window ({sched['lost_events']} lost); {sched['task_slices']} task slices lie "
            "inside Linux's stretches. Its raw clock is put on the counter's from "
            f"{sched['clock_samples']} paired samples, to within "
            f"{sched['clock_uncertainty_ns']} ns"
            + (
                ""
                if not isinstance(marker, dict)
                else f"; the clock marker's counter value {marker['counter']} came out at "
                f"{marker['tracer_stamp_ticks']} ticks on the tracer's stamp"
            )
            + ".",
        ]
    files = f"`{WORLDS_CSV}` (each core's worlds), `{TIMELINE}`, `{TRACE_FILE}` (Perfetto: "
    files += "ui.perfetto.dev, or `./tandem perfetto FILE`)"
    if isinstance(sched, dict):
        files += f", `{TASKS_CSV}` (Linux's tasks)"
    lines += [
        "",
        f"Files: {files}; the console with the rings' dump: `raw.tar.xz`.",
        "",
    ]
    return "\n".join(lines)
