"""Experiment `linux-rt` (paper 001): Linux's wake-up latency for a periodic
SCHED_FIFO thread (cyclictest) under kernel load, against the number of cores,
CPU affinity and disk I/O load. Linux alone (config linux-only).

Kernel load, always on: per core one stress-ng worker each of shm, switch
(context switches), timer and memrate, as the paper's shared-memory,
scheduler, timer and memory loads. Affinity on: cyclictest alone in a cpuset
partition on the last core, the loads pinned to the others (not possible on
one core, so that cell is skipped). I/O load on: stress-ng hdd workers, one per
core, writing files on ext2 on a virtio-blk disk backed by a host file.
"""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import (
    Boot,
    Progress,
    boot_options,
    latency_columns,
    phase_latencies,
    rep_phase_us,
    run_boot,
    write_histograms,
    write_summary,
)
from tandem.exp.linux_rt.plot import plot
from tandem.exp.linux_rt.report import report
from tandem.exp.linux_rt.script import cells, guest_script, phase_id
from tandem.exp.linux_rt.spec import NAME, PERIOD_US, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import Latency, merged

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "plot", "report", "run"]

COLUMNS = ("cores", "affinity", "io_load", "samples", "min_us", "avg_us", "p99_us", "max_us")


def run(s: Scenario, out: Path) -> dict[str, object]:
    reps = s.integer("reps")
    timing = s.text("timing")
    core_counts = s.integers("cores")
    progress = Progress(NAME, len(core_counts) * reps)
    measured: dict[tuple[int, bool, bool], list[Latency]] = {}
    for rep in range(1, reps + 1):
        for cores in core_counts:
            progress.next(f"{cores} core(s), rep {rep}/{reps}, {timing} timing")
            boot = Boot(
                label=f"cores{cores}-rep{rep}",
                options=boot_options(
                    s,
                    config="linux-only",
                    timing=timing,
                    smp=cores,
                    disk_mib=s.integer("disk_mib"),
                    phase_us=rep_phase_us(rep),
                ),
                script=guest_script(s, cores),
            )
            results = run_boot(boot, out / "raw", progress)
            cell_keys = cells(s, cores)
            pids = [phase_id(aff, io) for aff, io in cell_keys]
            for (aff, io), lat in zip(
                cell_keys, phase_latencies(results, boot.label, pids, progress), strict=True
            ):
                measured.setdefault((cores, aff, io), []).append(lat)
    rows: list[dict[str, object]] = []
    hist_rows: list[tuple[list[object], Latency]] = []
    for (cores, aff, io), lats in sorted(measured.items()):
        cell = merged(lats)
        rows.append({"cores": cores, "affinity": aff, "io_load": io, **latency_columns(cell, lats)})
        hist_rows.append(([cores, aff, io], cell))
    write_histograms(out / "histograms.csv", ["cores", "affinity", "io_load"], hist_rows)
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": timing,
        "quick": s.quick,
        "reps": reps,
        "period_us": PERIOD_US,
        "scenario": s.values,
        "rows": rows,
    }
    write_summary(out, summary, COLUMNS)
    return summary
