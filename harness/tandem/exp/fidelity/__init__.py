"""Experiment `fidelity` (`tandem bench fidelity`): what each timing mode
does between cores.

Guest-side probes, each run in stock virtual timing and in per-core timing
at several quanta (docs/harness.md, "Timing modes"):

a. overlap: CPU b times a loop of N instructions between two counter reads
   while CPU a spins (`tandem-probe overlap`): its clock should advance N ns;
b. cross-core interrupt: Linux stamps the counter and rings the RPC
   doorbell, an SGI to the RTOS's server core, whose first stamp ends the
   sample (`tandem-rpc bench`, the driver's `notify_ns`), with Linux idle
   and with Linux running hackbench on every core;
c. flag hand-off: CPU a stores a counter stamp that CPU b spins on
   (`tandem-probe handoff`);
d. determinism: the first per-core cell is booted twice (three times with
   a model); every sample of every run must agree;
e. cost: host wall time and QEMU's user CPU time (read from /proc while it
   runs, at the script's marks: instruments/hostmarks.py) of the boot and
   of `hackbench -g 4 -l 100` (and hackbench's own time, in guest time).
   With a model, its cost is the median ratio of the CPU times of three
   alternated pairs of boots with and without it.

Per-core cells use the scenario's counter rule (`causal`, `lamport` by default)
and memory model (`memmodel`); with a rule, the first quantum is also
booted with the counter free (`causal=off`, what the rule costs) and, with
a model, without the model (what the model costs, side by side in one run).

The checks: (a) within 1 % + Q; (b) with a busy receiver within the idle
receiver's path + Q (the idle one is the path alone: a halted core wakes at
the sender's clock); (d) identical; (e) at most 3x virtual timing's host
wall time at Q = 1 µs, judged only for boots run one at a time on one host
(`--jobs 1`, its default: Boot.host_time), and with a model at most 3.5x in
CPU time.

Results: results/fidelity/<run-id>/ (summary.json, samples.csv, report.md,
fidelity.png, raw.tar.xz).
"""

from __future__ import annotations

import csv
from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, one_seed, run_id, seeds
from tandem.exp.fidelity.parse import HostCost, Samples, parse, row
from tandem.exp.fidelity.plot import plot
from tandem.exp.fidelity.report import report
from tandem.exp.fidelity.rows import checks
from tandem.exp.fidelity.script import gap_ns, script
from tandem.exp.fidelity.spec import CPU_B, MARK, NAME, SCHEMA, Cell, cells
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import load_config
from tandem.platform.memmodel import provenance as memmodel_provenance
from tandem.platform.timing import PERCORE
from tandem.pool import HostTime

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """Per-core timing's fidelity is Tandem's own question, no paper's."""
    return []


def _memmodel(s: Scenario) -> str | None:
    model = s.text("memmodel")
    return None if model == "none" else model


def _cells(s: Scenario) -> list[tuple[Cell, str | None]]:
    """The run's boots, refused with why if the scenario cannot be run."""
    if s.text("timing") != PERCORE:
        raise TandemError(
            f"{NAME} boots virtual timing once and per-core timing at each of `quanta`: "
            f"`timing` must be percore, not {s.text('timing')}"
        )
    if "quantum_ns" in s.overrides:
        raise TandemError(f"{NAME} boots per-core timing at each of `quanta`: set quanta")
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME} repeats the first quantum's boot itself (d); reps must be 1")
    return cells(s.integers("quanta"), s.text("causal"), _memmodel(s))


def _options(s: Scenario, cell: Cell) -> BootOptions:
    return BootOptions(
        config=load_config(s.text("config")),
        board=s.board,
        timing=cell.timing_of(),
        smp=s.integer("smp"),
        linux_seed=one_seed(
            s, "its cells are quanta booted once each, the first again to show determinism"
        ),
    )


def units(s: Scenario) -> list[Boot]:
    """Every boot, in the order `spec.cells` gives."""
    out = []
    for cell, _ in _cells(s):
        options = _options(s, cell)
        config, smp = options.config, options.smp
        if not config.default_rpc_cores(smp):
            raise TandemError(f"configuration '{config.name}' runs no RPC server (no RTOS core)")
        if CPU_B not in config.linux_cores(smp):
            raise TandemError(
                f"the probes need Linux on CPUs 0-{CPU_B}: configuration '{config.name}' "
                f"on {smp} cores does not have it"
            )
        out.append(
            Boot(
                cell.label,
                options,
                script(
                    s.integer("rounds"),
                    s.integer("iterations"),
                    gap=gap_ns(options.timing.quantum),
                ),
                timeout_s=3600,
                about=cell.words(),
                host_marks=MARK,
                # Its cost (e) is the host's wall time: judged one at a time.
                host_time=HostTime.SOME,
            )
        )
    return out


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The summary: a row per boot, (d)'s verdict, the checks; and
    samples.csv, every sample."""
    quanta = s.integers("quanta")
    memmodel = _memmodel(s)
    boots: list[tuple[Cell, Samples]] = []
    rows: list[dict[str, object]] = []
    hosts: set[object] = set()
    jobs = 1
    for cell, comparison in _cells(s):
        label = cell.label
        samples = parse(measured.lines(label), measured.where(label))
        cost = HostCost.of(measured.boot_s(label), measured.host_marks(label))
        boots.append((cell, samples))
        rows.append(row(cell, samples, cost, comparison))
        host = measured.host(label)
        hosts.add(host.get("name"))
        parallel = host.get("parallel_boots")
        jobs = max(jobs, parallel if isinstance(parallel, int) else 1)
    # (d): every boot of the first quantum that is judged (not a comparison).
    first = [
        samples
        for (cell, samples), r in zip(boots, rows, strict=True)
        if cell.timing == PERCORE and cell.quantum_ns == quanta[0] and "comparison" not in r
    ]
    identical = all(x.probes == first[0].probes for x in first[1:])
    summary: dict[str, object] = {
        "experiment": NAME,
        "quick": s.quick,
        "scenario": s.values,
        # Linux's seed (the scenario's one).
        "seeds": seeds(s),
        "run": run_id(out),
        "config": s.text("config"),
        "smp": s.integer("smp"),
        "rounds": s.integer("rounds"),
        "overlap_iterations": s.integer("iterations"),
        "causal": s.text("causal"),
        "memmodel": memmodel or "none",
        "memmodel_profile": memmodel_provenance(memmodel),
        "rows": rows,
        "deterministic": identical,
        # Boots side by side, or on several hosts (shards): the host times
        # (e) are not comparable between them.
        "jobs": jobs,
        "hosts": len(hosts),
    }
    summary["checks"] = checks(
        rows, identical, judge_cost=jobs == 1 and len(hosts) == 1, judge_cpu=len(hosts) == 1
    )
    _write_samples(out / "samples.csv", boots)
    return summary


def _write_samples(path: Path, boots: list[tuple[Cell, Samples]]) -> None:
    """Every sample: one line per boot, probe and round."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timing", "quantum_ns", "causal", "memmodel", "rep", "probe", "round", "ns"])
        for cell, s in boots:
            for probe, values in s.probes.items():
                for i, v in enumerate(values):
                    w.writerow(
                        [
                            cell.timing,
                            cell.quantum_ns or "",
                            cell.causal if cell.timing == PERCORE else "",
                            cell.memmodel or "",
                            cell.rep,
                            probe,
                            i,
                            v,
                        ]
                    )
    tmp.replace(path)
