"""Experiment `linux-rt` (paper 001): Linux's wake-up latency for a periodic
SCHED_FIFO thread (cyclictest) under kernel load, against the number of cores,
CPU affinity and disk I/O load. Linux alone (config linux-only).

Kernel load, always on: per core one stress-ng worker each of shm, switch
(context switches), timer and memrate, as the paper's shared-memory,
scheduler, timer and memory loads. Affinity off: the loads and cyclictest on
every core. Affinity on: cyclictest alone in a cpuset partition on the last
core, the loads pinned to the others (not possible on one core, so that cell
is skipped). I/O load on: stress-ng hdd workers, one per core, writing files
on ext2 on a virtio-blk disk backed by a host file.

Each repetition boots once per core count, at its own start phase
(`rep_phase_us`), and measures every cell of that count in that boot; the
cause part (`script.py`) adds cells with another page-list high mark. Every
cell keeps cyclictest's per-sample series, a 20 ms memory timeline and
kernel counters (`analysis.py` reads them).
"""

from __future__ import annotations

import csv
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    Boot,
    Progress,
    boot_options,
    phase_latencies,
    rep_phase_us,
    run_tag,
    run_words,
    runs,
    seeds,
    write_histograms,
    write_summary,
)
from tandem.exp.linux_rt.analysis import Measured, cause_rows, grid_rows
from tandem.exp.linux_rt.claims import claims
from tandem.exp.linux_rt.plot import plot
from tandem.exp.linux_rt.report import report
from tandem.exp.linux_rt.script import boot_cells, guest_script
from tandem.exp.linux_rt.spec import NAME, PERIOD_US, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured as MeasuredBoots
from tandem.instruments.measure import marked_json, parse_results

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]

COLUMNS = (
    "cores",
    "affinity",
    "io_load",
    "samples",
    "min_us",
    "avg_us",
    "p99_us",
    "max_us",
    "max_median_us",
    "max_low_us",
    "max_high_us",
    "p999_median_us",
)


def _series(value: object, where: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    ):
        raise TandemError(f"{where}: cyclictest's series is not a list of integers")
    return list(value)


def _memory(value: object, where: str) -> list[tuple[float, int, int, int]]:
    if not isinstance(value, list):
        raise TandemError(f"{where}: the memory timeline is not a list")
    out = []
    for item in value:
        if (
            not isinstance(item, list)
            or len(item) != 4
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in item)
        ):
            raise TandemError(f"{where}: bad memory timeline entry {item!r}")
        out.append((float(item[0]), int(item[1]), int(item[2]), int(item[3])))
    return out


def _counters(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict) or "pcp_high" not in value or "start_s" not in value:
        raise TandemError(f"{where}: bad counters {value!r}")
    return value


def units(s: Scenario) -> list[Boot]:
    """One boot per core count, Linux seed and repetition, at the
    repetition's phase: the core counts of one seed and repetition (the
    boots a claim pairs) back to back."""
    reps = s.integer("reps")
    timing = s.text("timing")
    return [
        Boot(
            label=f"cores{cores}-{run_tag(s, run)}",
            options=boot_options(
                s,
                config="linux-only",
                timing=timing,
                smp=cores,
                disk_mib=s.integer("disk_mib"),
                phase_us=rep_phase_us(run.rep),
                linux_seed=run.seed,
            ),
            script=guest_script(s, cores),
            about=f"{cores} core(s), {run_words(s, run, reps)}, {timing} timing",
        )
        for run in runs(s, reps)
        for cores in s.integers("cores")
    ]


def summarize(s: Scenario, out: Path, boots: MeasuredBoots) -> dict[str, object]:
    progress = Progress(NAME)
    measured: list[Measured] = []
    for run in runs(s, s.integer("reps")):
        for cores in s.integers("cores"):
            label = f"cores{cores}-{run_tag(s, run)}"
            lines, where = boots.lines(label), boots.where(label)
            results = parse_results(lines, where)
            counters = marked_json(lines, "COUNTERS", where)
            series = marked_json(lines, "SERIES", where)
            memory = marked_json(lines, "MEMORY", where)
            todo = boot_cells(s, cores)
            lats = phase_latencies(results, label, [c.pid for c in todo], progress)
            for cell, lat in zip(todo, lats, strict=True):
                here = f"{where}: phase {cell.pid}"
                for name, got in (("counters", counters), ("series", series), ("memory", memory)):
                    if cell.pid not in got:
                        raise TandemError(f"{here}: no {name}")
                m = Measured(
                    cores=cores,
                    rep=run.rep,
                    seed=run.seed,
                    cell=cell,
                    latency=lat,
                    series=_series(series[cell.pid], here),
                    memory=_memory(memory[cell.pid], here),
                    counters=_counters(counters[cell.pid], here),
                )
                if len(m.series) != lat.samples:
                    raise TandemError(
                        f"{here}: {len(m.series)} samples in the series, {lat.samples} counted"
                    )
                measured.append(m)
    _write_raw(out / "raw", measured)
    grid = [m for m in measured if m.cell.part == "cells"]
    rows, merged_cells = grid_rows(grid)
    write_histograms(
        out / "histograms.csv",
        ["cores", "affinity", "io_load"],
        [([c, a, i], lat) for (c, a, i), lat in merged_cells],
    )
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "reps": s.integer("reps"),
        "seeds": seeds(s),
        "period_us": PERIOD_US,
        "scenario": s.values,
        "rows": rows,
        "cause": cause_rows([m for m in measured if m.cell.part == "cause"], grid),
    }
    write_summary(out, summary, COLUMNS)
    return summary


def _write_raw(raw: Path, measured: list[Measured]) -> None:
    """The tail samples (every sample is in the console logs) and the
    memory timelines, as CSV beside the boots' logs."""
    raw.mkdir(parents=True, exist_ok=True)
    with (raw / "tail.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cores", "seed", "rep", "cell", "loop", "latency_us", "time_s", "freeing"])
        for m in measured:
            for i, us, t, freeing in m.tail_samples():
                w.writerow([m.cores, m.seed, m.rep, m.cell.pid, i, us, round(t, 3), int(freeing)])
    with (raw / "memory.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cores", "seed", "rep", "cell", "time_s", "memfree_kib", "shmem_kib", "loops"])
        for m in measured:
            for t, free, shmem, loops in m.memory:
                w.writerow(
                    [
                        m.cores,
                        m.seed,
                        m.rep,
                        m.cell.pid,
                        round(t - m.load_start_s, 3),
                        free,
                        shmem,
                        loops,
                    ]
                )
