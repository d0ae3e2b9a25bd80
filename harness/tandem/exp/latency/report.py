"""The `latency` experiment's report.md: the RTOS's timer-interrupt
latency with Linux idle and with Linux busy, per phase and per core, with
the world switches and standby entries in each phase."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tandem.exp.common import read_summary, run_id, summary_list
from tandem.exp.latency.spec import NAME
from tandem.platform.timing import Timing


def _totals(phase: Mapping[str, object]) -> tuple[int, int]:
    """A phase's switches into the RTOS on every core, and Linux's standby
    entries on every CPU."""
    counts = phase.get("counts")
    cores = counts.get("cores") if isinstance(counts, Mapping) else None
    cpus = counts.get("cpus") if isinstance(counts, Mapping) else None
    to_rtos = sum(c["to_rtos"] for c in cores.values()) if isinstance(cores, Mapping) else 0
    standby = sum(c["standby_entries"] for c in cpus.values()) if isinstance(cpus, Mapping) else 0
    return to_rtos, standby


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    timing = Timing.of_summary(summary)
    phases = summary_list(summary, "phases")
    lines = [
        "# RTOS timer-interrupt latency, Linux idle and busy",
        "",
        f"Run `{run_id(run_dir)}`: configuration `{summary['config']}`, {summary['smp']} cores, "
        f"{timing.words()}, board `{summary['board']}`, Linux idling with "
        f"`{summary['linux_idle']}`. Reproduce: `{command}`.",
        "",
        f"Measured: {summary['measured']}, by the RTOS on every core it runs on, into "
        f"histograms of {summary['resolution_ns']} ns buckets up to "
        f"{summary['histogram_limit_us']} µs (`tandem-lat`, read before and after each "
        "phase); first Linux idle, then Linux running hackbench on every core.",
        "",
        "| Linux | samples | min µs | avg µs | max µs | beyond the histogram | switches to "
        "the RTOS | standby entries (CPU_SUSPEND) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        to_rtos, standby = _totals(p)
        lines.append(
            f"| {p['load']} | {p['samples']} | {p['min_us']} | {p['avg_us']} | {p['max_us']} | "
            f"{p['beyond_histogram']} | {to_rtos} | {standby} |"
        )
    lines += [
        "",
        "Per core (ns):",
        "",
        "| Linux | core | samples | avg | max |",
        "|---|---|---|---|---|",
    ]
    for p in phases:
        per_core = p.get("per_core")
        for c in per_core if isinstance(per_core, list) else []:
            lines.append(
                f"| {p['load']} | {c['core']} | {c['samples']} | {c['avg_ns']} | {c['max_ns']} |"
            )
    lines += [
        "",
        "Histograms: `histograms.csv` (load, bucket in ns, samples), `latency.png`.",
        "",
        "What QEMU can show: " + timing.caveats(),
        "",
    ]
    return "\n".join(lines)
