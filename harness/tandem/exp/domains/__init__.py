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
Loads: none, memory (one stress-ng memrate worker per loaded core, buffer far
larger than the L1), scheduling (stress-ng mutex, 50 threads handing one mutex
round). The worst case is also measured against 0-3 memory-loaded cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    QEMU_CAVEATS,
    Boot,
    Progress,
    boot_options,
    fmt_us,
    num,
    read_summary,
    rep_phase_us,
    run_boot,
    summary_list,
    write_histograms,
    write_summary,
)
from tandem.exp.scenario import Key, Scenario
from tandem.instruments.measure import Latency, merged, script_header

NAME = "domains"
MEASURED_CORE = 3
INFO_CORES = 3  # cores 0-2 carry the information domain's load
PERIOD_US = 1000  # the RTOS demo's cyclic period; cyclictest uses the same
LOADS = ("none", "memory", "scheduling")


@dataclass(frozen=True)
class Env:
    """One way of sharing the chip."""

    name: str
    config: str  # platform configuration (configs/)
    instrument: str  # "rtos" or "cyclictest"
    isolate: bool  # cyclictest in a cpuset partition of its own
    pin_load: bool  # load on cores 0..k-1 (else wherever Linux puts it)
    about: str


ENVS = {
    "smp": Env("smp", "linux-only", "cyclictest", False, False, "one Linux, no separation"),
    "affinity": Env(
        "affinity", "linux-only", "cyclictest", True, True, "one Linux, core 3 in its own cpuset"
    ),
    "heteroos": Env("heteroos", "heteroos", "rtos", False, True, "RTOS on core 3, Linux on 0-2"),
    "tandem": Env(
        "tandem", "tandem", "rtos", False, True, "RTOS first on every core, Linux in the gaps"
    ),
}

SCHEMA = {
    "settle_ms": Key(int, "ms a load runs before measuring starts", minimum=0, maximum=10_000),
    "samples": Key(
        int, "timer interrupts measured per phase (1 ms period)", minimum=16, maximum=100_000
    ),
    "envs": Key(list, "environments to run", item=str, choices=tuple(ENVS)),
    "loads": Key(list, "information-domain loads", item=str, choices=LOADS),
    "loaded_cores": Key(
        list, "memory-loaded core counts for the worst-case sweep", item=int, minimum=0, maximum=3
    ),
    "memory_bytes": Key(
        str,
        "memrate buffer per worker (stress-ng size; far above the 32 KiB L1)",
        choices=("256K", "1M", "4M", "16M"),
    ),
    "scheduling_threads": Key(int, "threads handing the mutex round", minimum=2, maximum=64),
    "rtos_task_set": Key(
        str, "what the RTOS runs: the demo's 1 ms job on each RTOS core", choices=("demo",)
    ),
}

# Paper 003's worst cases (µs) against memory-loaded cores 0..3 (ARM11 MPCore
# at 210 MHz, real hardware), and its 50 µs target.
PAPER_WORST_VS_LOADED = {"smp": [54, 120, 165, 202], "heteroos": [6, 11, 15, 19]}
PAPER_TARGET_US = 50


def phases(s: Scenario) -> list[tuple[str, int]]:
    """(load, loaded cores) measured in each boot, in order."""
    loads = s.texts("loads")
    sweep = set(s.integers("loaded_cores"))
    out: list[tuple[str, int]] = []
    if "none" in loads or 0 in sweep:
        out.append(("none", 0))
    memory = {k for k in sweep if k > 0} | ({INFO_CORES} if "memory" in loads else set())
    out += [("memory", k) for k in sorted(memory)]
    if "scheduling" in loads:
        out.append(("scheduling", INFO_CORES))
    return out


def phase_id(load: str, k: int) -> str:
    return f"{load}-{k}"


def script(env: Env, s: Scenario) -> str:
    """The guest script for one environment: every phase in one boot."""
    lines = [
        script_header(
            PERIOD_US,
            s.text("memory_bytes"),
            s.integer("scheduling_threads"),
            "0",
            s.integer("settle_ms"),
        )
    ]
    if env.isolate:
        lines.append(f"isolate_core {MEASURED_CORE}")
    samples = s.integer("samples")
    for load, k in phases(s):
        if load == "memory":
            if env.pin_load:
                lines += [f"load_start memory 1 {core}" for core in range(k)]
            else:
                lines.append(f"load_start memory {k} any")
        elif load == "scheduling":
            cpus = f"0-{INFO_CORES - 1}" if env.pin_load else "any"
            lines.append(f"load_start scheduling 1 {cpus}")
        pid = phase_id(load, k)
        if env.instrument == "rtos":
            lines.append(f"measure_rtos {pid} {samples} {MEASURED_CORE}")
        else:
            where = str(MEASURED_CORE) if env.isolate else "any"
            isolated = "yes" if env.isolate else "no"
            lines.append(f"measure_cyclictest {pid} {samples} {where} {isolated}")
    return "\n".join(lines) + "\n"


def _row(env: str, load: str, k: int, lat: Latency, rep_max: list[float]) -> dict[str, object]:
    return {
        "env": env,
        "load": load,
        "loaded_cores": k,
        "samples": lat.samples,
        "min_us": round(lat.min_us, 3),
        "avg_us": round(lat.avg_us, 3),
        "max_us": round(lat.max_us, 3),
        "p99_us": round(lat.percentile(99), 3),
        "instrument": lat.instrument,
        "resolution_us": lat.resolution_us,
        "beyond_histogram": lat.overflow,
        "rep_max_us": [round(x, 3) for x in rep_max],
    }


COLUMNS = (
    "env",
    "load",
    "loaded_cores",
    "samples",
    "min_us",
    "avg_us",
    "max_us",
    "p99_us",
    "instrument",
)


def run(s: Scenario, out: Path) -> dict[str, object]:
    """Runs every environment `reps` times; writes raw data and the summary."""
    envs = [ENVS[e] for e in s.texts("envs")]
    reps = s.integer("reps")
    timing = s.text("timing")
    progress = Progress(NAME, len(envs) * reps)
    cells: dict[tuple[str, str, int], list[Latency]] = {}
    for rep in range(1, reps + 1):
        for env in envs:
            progress.next(f"env {env.name} ({env.about}), rep {rep}/{reps}, {timing} timing")
            boot = Boot(
                label=f"{env.name}-rep{rep}",
                options=boot_options(
                    s, config=env.config, timing=timing, smp=4, phase_us=rep_phase_us(rep)
                ),
                script=script(env, s),
            )
            results = run_boot(boot, out / "raw", progress)
            for load, k in phases(s):
                pid = phase_id(load, k)
                if pid not in results:
                    raise TandemError(f"{boot.label}: no result for phase {pid}")
                lat = results[pid]
                progress.note(
                    f"{pid}: {lat.samples} samples, min {fmt_us(lat.min_us)} avg "
                    f"{fmt_us(lat.avg_us)} max {fmt_us(lat.max_us)} µs"
                )
                cells.setdefault((env.name, load, k), []).append(lat)
    rows: list[dict[str, object]] = []
    hist_rows: list[tuple[list[object], Latency]] = []
    for (env_name, load, k), lats in cells.items():
        cell = merged(lats)
        rows.append(_row(env_name, load, k, cell, [x.max_us for x in lats]))
        hist_rows.append(([env_name, load, k], cell))
    write_histograms(out / "histograms.csv", ["env", "load", "loaded_cores"], hist_rows)
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": timing,
        "quick": s.quick,
        "reps": reps,
        "measured_core": MEASURED_CORE,
        "period_us": PERIOD_US,
        "scenario": s.values,
        "rows": rows,
    }
    write_summary(out, summary, COLUMNS)
    return summary


def _find(rows: list[dict[str, object]], env: str, load: str, k: int) -> dict[str, object] | None:
    for r in rows:
        if r["env"] == env and r["load"] == load and r["loaded_cores"] == k:
            return r
    return None


def plot(run_dir: Path, summary: dict[str, object]) -> list[Path]:
    """Fig. 5-8 of the paper, from our data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    timing = summary["timing"]
    envs = [e for e in ENVS if any(r["env"] == e for r in rows)]
    written: list[Path] = []

    main = [(load, 0 if load == "none" else INFO_CORES) for load in LOADS]
    main = [
        (ld, k) for ld, k in main if any(r["load"] == ld and r["loaded_cores"] == k for r in rows)
    ]
    fig, axes = plt.subplots(1, len(main), figsize=(4.2 * len(main), 4), squeeze=False)
    for ax, (load, k) in zip(axes[0], main, strict=True):
        xs, mins, avgs, maxs = [], [], [], []
        for i, env in enumerate(envs):
            r = _find(rows, env, load, k)
            if r is None:
                continue
            xs.append(i)
            mins.append(num(r, "min_us"))
            avgs.append(num(r, "avg_us"))
            maxs.append(num(r, "max_us"))
        w = 0.27
        ax.bar([x - w for x in xs], mins, w, label="min")
        ax.bar(xs, avgs, w, label="avg")
        ax.bar([x + w for x in xs], maxs, w, label="max")
        ax.axhline(PAPER_TARGET_US, color="grey", ls="--", lw=1, label="paper's 50 µs target")
        ax.set_xticks(range(len(envs)), envs)
        ax.set_yscale("log")
        ax.set_title(f"load: {load}" + (f" ({k} cores)" if k else ""))
        ax.set_ylabel("interrupt response (µs)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"domains: response by environment and load ({timing} timing, QEMU)")
    fig.tight_layout()
    path = run_dir / "response_by_load.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for env in envs:
        pts = sorted(
            (int(num(r, "loaded_cores")), num(r, "max_us"))
            for r in rows
            if r["env"] == env and r["load"] in ("none", "memory")
        )
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{env} (ours)")
    for env, worst in PAPER_WORST_VS_LOADED.items():
        ax.plot(range(4), worst, ls="--", marker="x", alpha=0.6, label=f"{env} (paper, ARM11 hw)")
    ax.set_xlabel("memory-loaded cores")
    ax.set_ylabel("worst-case response (µs)")
    ax.set_xticks(range(4))
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title(f"worst case vs loaded cores ({timing} timing, QEMU)")
    fig.tight_layout()
    path = run_dir / "worst_vs_loaded_cores.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


# What each timing mode lets this experiment show, beyond QEMU_CAVEATS.
QEMU_LIMITS = {
    "percore": (
        "- Per-core clocks: a load on cores 0-2 reaches core 3 only through what the "
        "model shares (the GIC and memory, both without contention). Where the RTOS "
        "answers (heteroos, tandem) its response is its own path, an almost fixed number of "
        "instructions (tandem's is longer by the monitor's world switch out of Linux); "
        "where Linux answers (smp, affinity) it is Linux's wake-up path, which the loads "
        "move only by what they run on core 3 itself. The orderings above are "
        "therefore path lengths, which QEMU measures exactly; the absolute microseconds "
        "are instructions at 1 ns each, not the paper's ARM11 cycles.",
    ),
    "virtual": (
        "- In virtual timing the gap between the RTOS's response on an idle machine "
        "(about 0.2 µs: a fixed path of about 200 instructions, see `./tandem bench "
        "latency --smp 1`) and under load is QEMU's round robin of vCPUs, not Tandem's: "
        "the interrupted core waits for the other vCPUs' slices.",
    ),
    "host": (
        "- In host timing each vCPU is a host thread: with fewer host cores than vCPUs "
        "the host's scheduler preempts the measuring core for milliseconds, which shows "
        "up as latency of every environment.",
    ),
}


def report(run_dir: Path, command: str) -> str:
    """report.md: our numbers beside the paper's, and what QEMU can't show."""
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    timing = str(summary["timing"])
    envs = [e for e in ENVS if any(r["env"] == e for r in rows)]
    out = [
        "# domains: interrupt response by way of sharing the chip (paper 003)",
        "",
        f"Run `{run_dir.name.removesuffix('.partial')}`, **{timing} timing** on QEMU "
        "(not hardware), "
        f"{summary['reps']} repetition(s){', quick settings' if summary['quick'] else ''}. "
        f"Reproduce: `{command}`.",
        "",
        f"Measured on core {summary['measured_core']}, timer period {summary['period_us']} µs: "
        "where the RTOS runs (heteroos, tandem), the RTOS's timer-interrupt latency from the "
        "compare value to its handler (16 ns resolution); where only Linux runs (smp, "
        "affinity), cyclictest's wake-up latency of a SCHED_FIFO 99 thread (1 µs resolution). "
        "Loads are on cores 0-2 (anywhere in smp).",
        "",
        "| env | load | loaded cores | samples | min µs | avg µs | p99 µs | max µs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        rows,
        key=lambda r: (envs.index(str(r["env"])), LOADS.index(str(r["load"])), r["loaded_cores"]),
    ):
        out.append(
            f"| {r['env']} | {r['load']} | {r['loaded_cores']} | {r['samples']} | "
            f"{fmt_us(r['min_us'])} | {fmt_us(r['avg_us'])} | {fmt_us(r['p99_us'])} | "
            f"{fmt_us(r['max_us'])}{' (beyond histogram)' if r.get('beyond_histogram') else ''} |"
        )
    out += ["", "## Worst case against memory-loaded cores, beside the paper", ""]
    out += ["| env | 0 | 1 | 2 | 3 |", "|---|---|---|---|---|"]
    for env in envs:
        cells = []
        for k in range(4):
            found = _find(rows, env, "none" if k == 0 else "memory", k)
            cells.append(fmt_us(found["max_us"]) if found else "-")
        out.append(f"| {env} (ours) | " + " | ".join(cells) + " |")
    for env, worst in PAPER_WORST_VS_LOADED.items():
        out.append(
            f"| {env} (paper, ARM11 MPCore hardware) | " + " | ".join(map(str, worst)) + " |"
        )
    out += ["", "## The paper's orderings, checked on our data", ""]
    for load in LOADS:
        k = 0 if load == "none" else INFO_CORES
        h = _find(rows, "heteroos", load, k)
        others = [(e, _find(rows, e, load, k)) for e in ("smp", "affinity")]
        if h is None or any(o is None for _, o in others):
            continue
        hmax = num(h, "max_us")
        verdicts = []
        for e, o in others:
            assert o is not None
            omax = num(o, "max_us")
            verdicts.append(f"{e} {fmt_us(omax)} µs: {'yes' if hmax < omax else 'NO'}")
        out.append(f"- load {load}: heteroos worst {fmt_us(hmax)} µs below " + "; ".join(verdicts))
        # Not the paper's criterion, but it separates QEMU's rare long turns
        # (worst case) from what happens to almost every interrupt.
        hp99 = num(h, "p99_us")
        p99s = [(e, num(o, "p99_us")) for e, o in others if o is not None]
        out.append(
            f"  - by the 99th percentile: heteroos {fmt_us(hp99)} µs; "
            + "; ".join(
                f"{e} {fmt_us(v)} µs: {'below' if hp99 < v else 'NOT below'}" for e, v in p99s
            )
        )
    met = [
        str(r["env"])
        for r in rows
        if r["env"] in envs
        and all(num(x, "max_us") <= PAPER_TARGET_US for x in rows if x["env"] == r["env"])
    ]
    out.append(
        f"- within the paper's {PAPER_TARGET_US} µs target under every load: "
        + (", ".join(sorted(set(met))) or "none")
    )
    out += [
        "",
        "## What QEMU can and cannot show here",
        "",
        QEMU_CAVEATS[timing],
        "",
        "- The paper's memory-load effect (bus round robin among cores, 6 → 19 µs for "
        "HeteroOS, 54 → 202 µs for SMP) needs caches and a shared bus; QEMU has neither, "
        "so here memory load acts like any other CPU-bound load: that the worst cases do "
        "not grow with memory-loaded cores is not modelled, not disproved.",
        *QEMU_LIMITS.get(timing, ()),
        "- DualUnix (two Linux instances on separate cores) is not run. It would need a "
        "second normal-world kernel with its own memory, device tree and console, the "
        "monitor starting it on its cores, and a policy per core naming the instance; "
        "interrupts for the second instance routed to its cores only.",
        "",
        "Files: `summary.json`, `summary.csv`, `histograms.csv` (every distribution at the "
        "instrument's resolution), `raw/` (each boot's script and console log), "
        "`response_by_load.png`, `worst_vs_loaded_cores.png`.",
    ]
    return "\n".join(out) + "\n"
