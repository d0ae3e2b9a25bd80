"""Experiment `domains` (paper 003): how well each way of splitting a 4-core
chip into a control and an information domain keeps interrupt response.

Environments (the measured core is always core 3, as PE3 in the paper):
- smp: one Linux on all cores, no separation; cyclictest and load anywhere.
- affinity: one Linux; cyclictest alone in a cpuset partition on core 3, the
  load pinned to cores 0-2.
- heteroos: the RTOS alone on core 3 (config heteroos), Linux on cores 0-2
  with the load; the RTOS's own timer-interrupt latency.
- tandem: the RTOS on every core, Linux in the gaps (config tandem); load on
  cores 0-2; the RTOS's latency on core 3.
- dualunix: two Linux instances under Tandem's EL2 layer (config dualunix):
  cyclictest in Linux B, alone on core 3; the loads in Linux A on cores
  0-2, started and stopped as B asks over the shared region's mailbox.
Loads: none, memory (one stress-ng memrate worker per loaded core, buffer far
larger than the L1), scheduling (stress-ng mutex, 50 threads handing one mutex
round). The worst case is also measured against 0-3 memory-loaded cores.
"""

from __future__ import annotations

import json
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
from tandem.exp.domains.claims import claims
from tandem.exp.domains.plot import plot
from tandem.exp.domains.report import report
from tandem.exp.domains.rows import COLUMNS, summary_row
from tandem.exp.domains.script import (
    guest_script,
    load_agent_script,
    phase_id,
    phases,
    windowed,
)
from tandem.exp.domains.spec import ENVS, MEASURED_CORE, NAME, PERIOD_US, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.instruments.measure import Latency, merged, parse_results
from tandem.platform import memmodel

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def units(s: Scenario) -> list[Boot]:
    """Every environment once per Linux seed and repetition, at the
    repetition's phase: the environments of one seed and repetition (the
    boots a claim pairs) back to back."""
    reps = s.integer("reps")
    timing = s.text("timing")
    out = []
    for run in runs(s, reps):
        for env in (ENVS[e] for e in s.texts("envs")):
            others = ((env.load_in, load_agent_script(s)),) if env.load_in is not None else ()
            out.append(
                Boot(
                    label=f"{env.name}-{run_tag(s, run)}",
                    options=boot_options(
                        s,
                        config=env.config,
                        timing=timing,
                        smp=4,
                        phase_us=rep_phase_us(run.rep),
                        linux_seed=run.seed,
                        partition=env.measure_in,
                        partition_scripts=others,
                    ),
                    script=guest_script(env, s),
                    about=f"env {env.name} ({env.about}), {run_words(s, run, reps)}, "
                    f"{timing} timing",
                    keep=(MEMMODEL_JSON,) if windowed(env, s) else (),
                )
            )
    return out


MEMMODEL_JSON = "memmodel.json"


def phase_windows(
    s: Scenario, measured: Measured, env_name: str, label: str
) -> list[dict[str, object]]:
    """What the memory model counted over each phase of one boot (the
    phases' windows, in order): per core, the lines read for it, its wait
    for the bus, and its lane's busy time and turn area."""
    data = json.loads(measured.data(label, MEMMODEL_JSON))
    windows = data.get("windows") if isinstance(data, dict) else None
    if not isinstance(windows, list):
        raise TandemError(f"{measured.where(label)}: {MEMMODEL_JSON} has no windows")
    by_core: dict[int, list[dict[str, int]]] = {}
    for w in windows:
        by_core.setdefault(int(w["core"]), []).append(w)
    expected = phases(s)
    for core, found in sorted(by_core.items()):
        if len(found) != len(expected):
            raise TandemError(
                f"{measured.where(label)}: core {core} has {len(found)} windows, "
                f"the script has {len(expected)} phases"
            )
    out: list[dict[str, object]] = []
    for i, (load, k) in enumerate(expected):
        cores = []
        for core in sorted(by_core):
            w = by_core[core][i]
            cores.append(
                {
                    "core": core,
                    "length_ns": int(w["to_ns"]) - int(w["from_ns"]),
                    **{key: int(w[key]) for key in WINDOW_KEYS},
                }
            )
        out.append(
            {"env": env_name, "label": label, "load": load, "loaded_cores": k, "cores": cores}
        )
    return out


# The window counters a phase's record keeps (docs/harness.md, "Windows a
# program marks").
WINDOW_KEYS = (
    "fills",
    "write_backs",
    "walk_reads",
    "read_wait_ns",
    "lane_busy_ns",
    "lane_turn_area_ns2",
)


def board_clock_mhz(s: Scenario) -> int | None:
    """The modelled board's core clock (its profile's), None without a
    model or a clock: the model counts one of its cycles as 1 ns, so the
    board's time is ours x 1000 / MHz (the report and plot set it beside
    the paper's figures)."""
    spec = s.text("memmodel")
    if spec == "none":
        return None
    clock = memmodel.profile(spec).get("core_clock_mhz")
    return clock if isinstance(clock, int) and not isinstance(clock, bool) and clock > 0 else None


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The worst cases per environment, load and loaded cores."""
    progress = Progress(NAME)
    cells: dict[tuple[str, str, int], list[Latency]] = {}
    cell_seeds: dict[tuple[str, str, int], list[int]] = {}
    cell_keys = phases(s)
    pids = [phase_id(load, k) for load, k in cell_keys]
    windows: list[dict[str, object]] = []
    for run in runs(s, s.integer("reps")):
        for env in (ENVS[e] for e in s.texts("envs")):
            label = f"{env.name}-{run_tag(s, run)}"
            if windowed(env, s):
                windows += phase_windows(s, measured, env.name, label)
            results = parse_results(measured.lines(label), measured.where(label))
            for (load, k), lat in zip(
                cell_keys, phase_latencies(results, label, pids, progress), strict=True
            ):
                cells.setdefault((env.name, load, k), []).append(lat)
                cell_seeds.setdefault((env.name, load, k), []).append(run.seed)
    rows: list[dict[str, object]] = []
    hist_rows: list[tuple[list[object], Latency]] = []
    for (env_name, load, k), lats in cells.items():
        cell = merged(lats)
        rows.append(summary_row(env_name, load, k, cell, lats, cell_seeds[(env_name, load, k)]))
        hist_rows.append(([env_name, load, k], cell))
    write_histograms(out / "histograms.csv", ["env", "load", "loaded_cores"], hist_rows)
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "reps": s.integer("reps"),
        "seeds": seeds(s),
        "measured_core": MEASURED_CORE,
        "period_us": PERIOD_US,
        "scenario": s.values,
        "rows": rows,
    }
    if windows:
        summary["windows"] = windows
    clock = board_clock_mhz(s)
    if clock is not None:
        summary["board_clock_mhz"] = clock
    write_summary(out, summary, COLUMNS)
    return summary
