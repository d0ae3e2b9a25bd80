"""The `capacity` report: every cell, the gains against `none` beside the
paper's trend, what Linux saw, and what QEMU can and cannot show."""

from __future__ import annotations

import statistics
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.capacity.spec import CHANGING, NAME, PAPER_TREND
from tandem.exp.common import (
    QEMU_CAVEATS,
    num,
    paired_gains,
    paired_words,
    read_summary,
    summary_list,
)
from tandem.platform.boot import DETERMINISTIC


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


# What each timing mode lets this experiment show, beyond QEMU_CAVEATS.
QEMU_LIMITS = {
    "percore": (
        "In per-core timing the RTOS's load takes exactly its share of its core's clock "
        "and Linux's tasks on the other cores run beside it within the quantum, so the "
        "differences between modes are the scheduler's placement decisions, repeated "
        "exactly for the same inputs; repetitions differ by the start phase of the RTOS's "
        "period. What QEMU leaves out weighs against moving tasks: a migrated task finds "
        "no cold cache on its new core, so on hardware every move the capacity-aware modes "
        "make costs more than here.",
        "",
    ),
}


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
        *QEMU_LIMITS.get(str(summary["timing"]), ()),
        f"Host load average before each boot: {min(loads_before):.2f} to "
        f"{max(loads_before):.2f}"
        + (
            " (guest time does not depend on it)."
            if summary["timing"] in DETERMINISTIC
            else " (a busy host widens the spread)."
        ),
        "",
        "Files: `summary.json` (rows and every boot), `summary.csv`, `raw/` (every boot's "
        "script and console log), `capacity.png`.",
    ]
    return "\n".join(out) + "\n"
