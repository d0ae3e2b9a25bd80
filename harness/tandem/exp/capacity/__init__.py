"""Experiment `capacity` (paper 000 §4): Linux's load balance when the RTOS
takes part of one core, with Linux told nothing (`none`), told statically
through the device tree (`static`), dynamically through Arm PV stolen time
(`steal`), or both (modes of tandem/platform/capacity.py).

The RTOS's periodic task runs on core `rtos_core` only, at each of
`loads_pct` % of its period, and at a load that changes during the run
(`changing_*`: the task's work alternates between two values); the
`baseline_modes` also boot with no RTOS load. Every repetition boots every
cell back to back with the same start phase (exp/common.rep_phase_us), so
that the modes of one repetition are paired; each boot runs each benchmark
once, between two /proc/stat snapshots (what Linux counted per core).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.capacity.claims import claims
from tandem.exp.capacity.parse import bench_time, capacities, cpu_ticks, rtos_counts
from tandem.exp.capacity.plot import plot
from tandem.exp.capacity.report import report
from tandem.exp.capacity.script import cells, guest_script, workload
from tandem.exp.capacity.spec import CHANGING, NAME, SCHEMA
from tandem.exp.common import (
    Boot,
    Progress,
    boot_options,
    rep_phase_us,
    run_tag,
    run_words,
    runs,
    seeds,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.results import write_atomic

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def units(s: Scenario) -> list[Boot]:
    """Every cell once per Linux seed and repetition; the cells of one seed
    and repetition (the boots a claim pairs) back to back, at its phase."""
    if s.integer("rtos_core") >= s.integer("smp"):
        raise TandemError(
            f"rtos_core {s.integer('rtos_core')} does not exist with smp {s.integer('smp')}"
        )
    reps = s.integer("reps")
    return [
        Boot(
            f"{load}-{mode}-{run_tag(s, run)}",
            boot_options(
                s,
                config="tandem",
                timing=s.text("timing"),
                smp=s.integer("smp"),
                workload=workload(s, load),
                capacity=mode,
                phase_us=rep_phase_us(run.rep),
                linux_seed=run.seed,
            ),
            guest_script(s),
            timeout_s=1800,
            about=f"RTOS load {load}{'' if load == CHANGING else ' %'}, {mode}, "
            f"{run_words(s, run, reps)}",
        )
        for run in runs(s, reps)
        for load, mode in cells(s)
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    reps = s.integer("reps")
    progress = Progress(NAME)
    times_of: dict[tuple[int | str, str, str], list[float]] = {}
    seeds_of: dict[tuple[int | str, str, str], list[int]] = {}
    boots: list[dict[str, object]] = []
    for run in runs(s, reps):
        for load, mode in cells(s):
            label = f"{load}-{mode}-{run_tag(s, run)}"
            lines = measured.lines(label)
            host = measured.host(label)
            times = {b: bench_time(lines, b, label) for b in s.texts("benches")}
            for bench, t in times.items():
                times_of.setdefault((load, mode, bench), []).append(t)
                seeds_of.setdefault((load, mode, bench), []).append(run.seed)
            ticks = {b: cpu_ticks(lines, b, label) for b in s.texts("benches")}
            rtos = rtos_counts(lines, s.integer("smp"), label)
            boots.append(
                {
                    "label": label,
                    "rtos_load": load,
                    "mode": mode,
                    "seed": run.seed,
                    "rep": run.rep,
                    "times_s": times,
                    "cpu_capacity": capacities(lines, label),
                    "cpu_ticks": ticks,
                    "rtos": rtos,
                    "host_loadavg_before": host.get("loadavg_before"),
                    # Boots run side by side with this one (--jobs): the
                    # host's load above was partly theirs.
                    "parallel_boots": host.get("parallel_boots", 1),
                }
            )
            core = s.integer("rtos_core")
            progress.note(
                f"{label}: "
                + ", ".join(f"{b} {t * 1000:.1f} ms" for b, t in times.items())
                + f"; capacity {boots[-1]['cpu_capacity']}; core {core} steal ticks "
                + ", ".join(f"{b} {v[core]['steal']}" for b, v in ticks.items())
                + f"; RTOS deadline misses {sum(r['deadline_misses'] for r in rtos)}"
            )
    rows: list[dict[str, object]] = []
    for (load, mode, bench), values in times_of.items():
        rows.append(
            {
                "rtos_load": load,
                "mode": mode,
                "bench": bench,
                "median_s": round(statistics.median(values), 4),
                "runs_s": values,
                # Each boot's Linux seed, beside runs_s.
                "run_seeds": seeds_of[(load, mode, bench)],
                "spread_s": round(max(values) - min(values), 4),
            }
        )
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "reps": reps,
        "seeds": seeds(s),
        "smp": s.integer("smp"),
        "rtos_core": s.integer("rtos_core"),
        "period_us": s.integer("period_us"),
        "changing_load": {
            "low_pct": s.integer("changing_low_pct"),
            "high_pct": s.integer("changing_high_pct"),
            "every_ms": s.integer("changing_every_ms"),
        },
        "scenario": s.values,
        "rows": rows,
        "boots": boots,
    }
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    tmp = out / "summary.csv.tmp"
    with tmp.open("w") as f:
        f.write("rtos_load,mode,bench,median_s,spread_s,runs_s\n")
        for r in rows:
            runs_text = " ".join(str(x) for x in r["runs_s"])  # type: ignore[attr-defined]
            f.write(
                f"{r['rtos_load']},{r['mode']},{r['bench']},{r['median_s']},"
                f"{r['spread_s']},{runs_text}\n"
            )
    tmp.replace(out / "summary.csv")
    return summary
