"""Experiment `capacity` (paper 000 §4): Linux's load balance when the RTOS
takes part of one core, with Linux told nothing (`none`), told statically
through the device tree (`static`), dynamically through Arm PV stolen time
(`steal`), or both (modes of tandem/capacity.py).

The RTOS's periodic task runs on core `rtos_core` only, at each of
`loads_pct` % of its period, and at a load that changes during the run
(`changing_*`: the task's work alternates between two values). Every
repetition boots every (load, mode) cell back to back, so that the modes of
one repetition are paired in time; each boot runs each benchmark once.
Host timing: the effect is one of parallel throughput.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    QEMU_CAVEATS,
    Boot,
    Progress,
    boot_lines,
    boot_options,
    num,
    paired_gains,
    paired_words,
    read_summary,
    rep_phase_us,
    summary_list,
)
from tandem.exp.scenario import Key, Scenario
from tandem.platform import capacity
from tandem.platform.configs import Workload
from tandem.results import write_atomic

NAME = "capacity"
BENCHES = ("hackbench", "sysbench-cpu")
CHANGING = "changing"

SCHEMA = {
    "smp": Key(int, "cores (keep <= host cores in host timing)", minimum=2, maximum=8),
    "rtos_core": Key(int, "the one core the RTOS loads", minimum=0, maximum=7),
    "period_us": Key(int, "RTOS task period", minimum=100, maximum=1_000_000),
    "loads_pct": Key(list, "constant RTOS loads, % of the period", item=int, minimum=0, maximum=95),
    "changing": Key(bool, "also run the load that changes during the run"),
    "changing_low_pct": Key(int, "changing load: low phase, %", minimum=0, maximum=95),
    "changing_high_pct": Key(int, "changing load: high phase, %", minimum=0, maximum=95),
    "changing_every_ms": Key(int, "changing load: phase length", minimum=1, maximum=100_000),
    "modes": Key(list, "how Linux learns the RTOS's share", item=str, choices=capacity.MODES),
    "benches": Key(list, "benchmarks", item=str, choices=BENCHES),
    "hackbench_groups": Key(int, "hackbench -g", minimum=1, maximum=64),
    "hackbench_loops": Key(int, "hackbench -l", minimum=1, maximum=100_000),
    "sysbench_threads": Key(int, "sysbench cpu --threads", minimum=1, maximum=64),
    "sysbench_events": Key(int, "sysbench cpu --events", minimum=1, maximum=10_000_000),
}

HACKBENCH_TIME = re.compile(r"^Time: ([0-9.]+)$")
SYSBENCH_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s$")
CAPACITY_LINE = re.compile(r"^@@CAPACITY@@((?: \d+)+)$")
STAT_MARK = "@@STAT@@"
# Paper 000 (R-Car H1, hardware): hackbench gains from the capacity change at
# 50 % and 80 % RTOS load on core 1, more at 80 %.
PAPER_TREND = "the gain over equal capacities grows with the RTOS's load (50 % -> 80 %)"


def loads(s: Scenario) -> list[int | str]:
    """The load cells: each constant load in %, then `changing` if asked for."""
    out: list[int | str] = list(s.integers("loads_pct"))
    if s.values["changing"]:
        out.append(CHANGING)
    return out


def workload(s: Scenario, load: int | str) -> Workload:
    """The RTOS task for one load cell."""
    period = s.integer("period_us")
    if load == CHANGING:
        return Workload(
            core=s.integer("rtos_core"),
            period_us=period,
            work_us=period * s.integer("changing_high_pct") // 100,
            alt_work_us=period * s.integer("changing_low_pct") // 100,
            alt_every_ms=s.integer("changing_every_ms"),
        )
    assert isinstance(load, int)
    return Workload(core=s.integer("rtos_core"), period_us=period, work_us=period * load // 100)


def script(s: Scenario) -> str:
    """One boot: Linux's view of its capacities, the benchmarks, and /proc/stat
    around them (for the steal and irq time Linux saw)."""
    benches = s.texts("benches")
    lines = [
        "echo @@CAPACITY@@ $(cat /sys/devices/system/cpu/cpu[0-9]*/cpu_capacity)",
        "grep '^cpu[0-9]' /proc/stat > /tmp/stat.a",
    ]
    if "hackbench" in benches:
        lines.append(
            f"hackbench -g {s.integer('hackbench_groups')} "
            f"-l {s.integer('hackbench_loops')} || exit 1"
        )
    if "sysbench-cpu" in benches:
        lines.append(
            f"sysbench cpu --threads={s.integer('sysbench_threads')} "
            f"--events={s.integer('sysbench_events')} --time=0 run || exit 1"
        )
    lines += [
        "grep '^cpu[0-9]' /proc/stat > /tmp/stat.b",
        f"echo {STAT_MARK}; cat /tmp/stat.a; echo {STAT_MARK}; cat /tmp/stat.b",
    ]
    return "\n".join(lines) + "\n"


def bench_time(lines: list[str], bench: str, label: str) -> float:
    """The one time a benchmark printed."""
    pattern = HACKBENCH_TIME if bench == "hackbench" else SYSBENCH_TIME
    got = [float(m.group(1)) for line in lines if (m := pattern.match(line.strip()))]
    if len(got) != 1:
        raise TandemError(f"{label}: expected one {bench} time, found {len(got)}")
    return got[0]


def capacities(lines: list[str], label: str) -> list[int]:
    """Linux's cpu_capacity per core, as the boot saw it before the benchmarks."""
    for line in lines:
        if m := CAPACITY_LINE.match(line.strip()):
            return [int(x) for x in m.group(1).split()]
    raise TandemError(f"{label}: no cpu_capacity line")


def cpu_shares(lines: list[str], label: str) -> dict[str, list[float]]:
    """Per core, the fraction of the benchmarks' time /proc/stat counted as
    steal and as irq (Linux charges time the RTOS takes during an interrupt
    handler to irq when it does not know about steal)."""
    marks = [i for i, line in enumerate(lines) if line.strip() == STAT_MARK]
    if len(marks) != 2:
        raise TandemError(f"{label}: /proc/stat snapshots missing")

    def snap(start: int, end: int) -> list[list[int]]:
        rows = [line.split() for line in lines[start:end] if line.startswith("cpu")]
        try:
            return [[int(x) for x in row[1:9]] for row in rows]
        except ValueError:
            raise TandemError(f"{label}: bad /proc/stat line") from None

    before = snap(marks[0] + 1, marks[1])
    after = snap(marks[1] + 1, len(lines))
    if len(before) != len(after) or not before:
        raise TandemError(f"{label}: /proc/stat snapshots disagree")
    steal: list[float] = []
    irq: list[float] = []
    for a, b in zip(before, after, strict=True):
        delta = [y - x for x, y in zip(a, b, strict=True)]
        total = sum(delta) or 1
        # user nice system idle iowait irq softirq steal
        irq.append(round(delta[5] / total, 4))
        steal.append(round(delta[7] / total, 4))
    return {"steal": steal, "irq": irq}


def run(s: Scenario, out: Path) -> dict[str, object]:
    reps = s.integer("reps")
    cells = [(load, mode) for load in loads(s) for mode in s.texts("modes")]
    if s.integer("rtos_core") >= s.integer("smp"):
        raise TandemError(
            f"rtos_core {s.integer('rtos_core')} does not exist with smp {s.integer('smp')}"
        )
    progress = Progress(NAME, reps * len(cells))
    runs: dict[tuple[int | str, str, str], list[float]] = {}
    boots: list[dict[str, object]] = []
    for rep in range(1, reps + 1):
        for load, mode in cells:
            label = f"{load}-{mode}-rep{rep}"
            progress.next(f"RTOS load {load}{'' if load == CHANGING else ' %'}, {mode}, rep {rep}")
            host_load = os.getloadavg()[0]
            lines = boot_lines(
                Boot(
                    label,
                    boot_options(
                        s,
                        config="tandem",
                        timing=s.text("timing"),
                        smp=s.integer("smp"),
                        workload=workload(s, load),
                        capacity=mode,
                        phase_us=rep_phase_us(rep),
                    ),
                    script(s),
                    timeout_s=1800,
                ),
                out / "raw",
                progress,
            )[0]
            times = {b: bench_time(lines, b, label) for b in s.texts("benches")}
            for bench, t in times.items():
                runs.setdefault((load, mode, bench), []).append(t)
            shares = cpu_shares(lines, label)
            boots.append(
                {
                    "label": label,
                    "rtos_load": load,
                    "mode": mode,
                    "rep": rep,
                    "times_s": times,
                    "cpu_capacity": capacities(lines, label),
                    "steal_fraction": shares["steal"],
                    "irq_fraction": shares["irq"],
                    "host_loadavg_before": round(host_load, 2),
                }
            )
            progress.note(
                ", ".join(f"{b} {t:.2f} s" for b, t in times.items())
                + f"; capacity {boots[-1]['cpu_capacity']}, steal {shares['steal']}"
            )
    rows: list[dict[str, object]] = []
    for (load, mode, bench), values in runs.items():
        rows.append(
            {
                "rtos_load": load,
                "mode": mode,
                "bench": bench,
                "median_s": round(statistics.median(values), 4),
                "runs_s": values,
                "spread_s": round(max(values) - min(values), 4),
            }
        )
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "reps": reps,
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


def cell(summary: dict[str, object], load: object, mode: str, bench: str) -> dict[str, object]:
    """The summary row of one (load, mode, bench)."""
    for r in summary_list(summary):
        if r["rtos_load"] == load and r["mode"] == mode and r["bench"] == bench:
            return r
    raise TandemError(f"no row for load {load}, mode {mode}, bench {bench}")


def has(summary: dict[str, object], load: object, bench: str, *modes: str) -> bool:
    """Whether the run measured `bench` at `load` in all of `modes`."""
    keys = {(r["rtos_load"], r["mode"], r["bench"]) for r in summary_list(summary)}
    return {(load, mode, bench) for mode in modes} <= keys


def gain(summary: dict[str, object], load: object, mode: str, bench: str) -> tuple[float, float]:
    """(median time saved against `none`, the larger spread of the two), s."""
    base, other = cell(summary, load, "none", bench), cell(summary, load, mode, bench)
    spread = max(num(base, "spread_s"), num(other, "spread_s"))
    return num(base, "median_s") - num(other, "median_s"), spread


def paired(
    summary: dict[str, object], load: object, base: str, mode: str, bench: str
) -> list[float]:
    """Per repetition, `base`'s time minus `mode`'s (the two ran back to back
    in that repetition; runs_s lists them in repetition order)."""
    return paired_gains(cell(summary, load, base, bench), cell(summary, load, mode, bench))


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Like the paper's fig. 7: benchmark time per RTOS load, one bar per mode,
    whiskers from the fastest to the slowest run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    benches = sorted({str(r["bench"]) for r in rows})
    load_cells: list[object] = []
    modes: list[str] = []
    for r in rows:
        if r["rtos_load"] not in load_cells:
            load_cells.append(r["rtos_load"])
        if r["mode"] not in modes:
            modes.append(str(r["mode"]))
    fig, axes = plt.subplots(1, len(benches), figsize=(6 * len(benches), 4.2), squeeze=False)
    width = 0.8 / max(1, len(modes))
    for ax, bench in zip(axes[0], benches, strict=True):
        for i, mode in enumerate(modes):
            xs, ys, lo, hi = [], [], [], []
            for x, load in enumerate(load_cells):
                found = [
                    r
                    for r in rows
                    if (r["rtos_load"], r["mode"], r["bench"]) == (load, mode, bench)
                ]
                if not found:
                    continue
                r = found[0]
                values = [float(v) for v in r["runs_s"]]  # type: ignore[attr-defined]
                med = num(r, "median_s")
                xs.append(x + (i - (len(modes) - 1) / 2) * width)
                ys.append(med)
                lo.append(med - min(values))
                hi.append(max(values) - med)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=mode)
        ax.set_xticks(range(len(load_cells)))
        ax.set_xticklabels([f"{v} %" if isinstance(v, int) else "changing" for v in load_cells])
        ax.set_xlabel(f"RTOS load on core {summary['rtos_core']}")
        ax.set_ylabel("seconds (median; whiskers: min-max)")
        ax.set_title(bench)
        ax.legend()
    fig.suptitle(f"capacity: Linux benchmark time vs RTOS load ({summary['timing']} timing, QEMU)")
    fig.tight_layout()
    fig.savefig(run_dir / "capacity.png", dpi=110)
    plt.close(fig)


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    ch = summary["changing_load"]
    assert isinstance(ch, dict)
    out = [
        "# capacity: capacity-aware load balancing (paper 000 §4)",
        "",
        f"Run `{run_dir.name.removesuffix('.partial')}` on QEMU (not hardware), "
        f"**{summary['timing']} timing**, {summary['smp']} cores, RTOS task on core "
        f"{summary['rtos_core']} only (period {summary['period_us']} µs), "
        f"{summary['reps']} paired repetition(s){', quick settings' if summary['quick'] else ''}. "
        f"Changing load: {ch['high_pct']} % and {ch['low_pct']} % alternating every "
        f"{ch['every_ms']} ms (static mode sizes core capacity for the higher). "
        f"Reproduce: `{command}`.",
        "",
        "| RTOS load | mode | bench | median s | spread s | runs s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        runs = ", ".join(f"{float(x):.2f}" for x in r["runs_s"])  # type: ignore[attr-defined]
        load = r["rtos_load"]
        out.append(
            f"| {load}{' %' if isinstance(load, int) else ''} | {r['mode']} | {r['bench']} | "
            f"{num(r, 'median_s'):.2f} | {num(r, 'spread_s'):.2f} | {runs} |"
        )
    out += ["", "## Against the paper and the acceptance", ""]
    benches = sorted({str(r["bench"]) for r in rows})
    modes = sorted({str(r["mode"]) for r in rows})
    for bench in benches:
        for mode in (m for m in ("static", "steal", "both") if m in modes and "none" in modes):
            parts = []
            for load in (50, 80):
                if has(summary, load, bench, "none", mode):
                    g, spread = gain(summary, load, mode, bench)
                    verdict = "beyond" if g > spread else "within"
                    parts.append(
                        f"at {load} % {g:+.2f} s ({verdict} the spread {spread:.2f} s; "
                        f"{paired_words(paired(summary, load, 'none', mode, bench))})"
                    )
            if parts:
                out.append(f"- {bench}, {mode} vs none: " + "; ".join(parts))
            if has(summary, 50, bench, "none", mode) and has(summary, 80, bench, "none", mode):
                g50, _ = gain(summary, 50, mode, bench)
                g80, _ = gain(summary, 80, mode, bench)
                trend = "holds" if g80 > g50 else "does NOT hold"
                out.append(f"  - the paper's trend, {PAPER_TREND}: {trend}")
        if has(summary, CHANGING, bench, "static", "steal"):
            st = cell(summary, CHANGING, "static", bench)
            sl = cell(summary, CHANGING, "steal", bench)
            d = num(st, "median_s") - num(sl, "median_s")
            spread = max(num(st, "spread_s"), num(sl, "spread_s"))
            who = "steal beats static" if d > 0 else "steal does NOT beat static"
            out.append(
                f"- {bench}, changing load: static {num(st, 'median_s'):.2f} s, steal "
                f"{num(sl, 'median_s'):.2f} s: {who} by {d:+.2f} s (spread {spread:.2f} s); "
                f"steal {paired_words(paired(summary, CHANGING, 'static', 'steal', bench))}"
            )
    out += [
        "",
        "The spread is the range (slowest minus fastest) of the five runs of a cell, the "
        "strictest reading of run-to-run spread; the paired count compares the two modes "
        "within each repetition, where they ran back to back on the same host.",
        "",
        "`sysbench cpu` runs a fixed amount of CPU-bound work in more threads than Linux "
        "has cores, so both cores stay busy until the last thread ends however the threads "
        "are placed: its time is the work over the capacity the RTOS leaves, whatever "
        "Linux knows. hackbench's senders and receivers wait for each other, so a group "
        "left on the RTOS's core holds its partners up: that is where placement shows.",
        "",
        "## What Linux saw",
        "",
        "Per boot (`summary.json` `boots`): `cpu_capacity` before the benchmarks, and the "
        "share of the benchmarks' time /proc/stat counted as steal and as irq on each core. "
        "Without PV time Linux cannot tell the RTOS's time from its own and charges it to "
        "whatever it was doing when the RTOS took the core; the irq column shows how much "
        "landed on interrupt time, which lowers the scheduler's capacity for that core too "
        "(IRQ_TIME_ACCOUNTING), so `none` is not entirely blind.",
        "",
        "| RTOS load | mode | capacity (first rep) | median steal % core "
        f"{summary['rtos_core']} | median irq % core {summary['rtos_core']} |",
        "|---|---|---|---|---|",
    ]
    boots = summary["boots"]
    assert isinstance(boots, list)
    core = int(num(summary, "rtos_core"))
    seen: list[tuple[object, object]] = []
    for b in boots:
        key = (b["rtos_load"], b["mode"])
        if key in seen:
            continue
        seen.append(key)
        same = [x for x in boots if (x["rtos_load"], x["mode"]) == key]
        steal = statistics.median(float(x["steal_fraction"][core]) for x in same) * 100
        irq = statistics.median(float(x["irq_fraction"][core]) for x in same) * 100
        out.append(
            f"| {key[0]} | {key[1]} | {' '.join(str(c) for c in b['cpu_capacity'])} | "
            f"{steal:.1f} | {irq:.1f} |"
        )
    loads_before = [float(b["host_loadavg_before"]) for b in boots]
    out += [
        "",
        "## What QEMU can and cannot show here",
        "",
        QEMU_CAVEATS[str(summary["timing"])],
        "",
        f"Host load average before each boot: {min(loads_before):.2f} to "
        f"{max(loads_before):.2f} (a busy host widens the spread).",
        "",
        "Files: `summary.json` (rows and every boot), `summary.csv`, `raw/` (every boot's "
        "script and console log), `capacity.png`.",
    ]
    return "\n".join(out) + "\n"
