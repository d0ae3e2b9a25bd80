"""The `memory` experiment's report.md: each check against its profile,
with what the model counted."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tandem.exp.common import read_summary, run_id
from tandem.exp.memory.spec import KIB, NAME, STREAMS
from tandem.platform import memmodel
from tandem.platform.timing import Timing


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    profiles = summary["profiles"]
    assert isinstance(profiles, dict)
    timing = Timing.of_summary(summary)
    lines = [
        "# The memory model against its own profiles",
        "",
        f"Run `{run_id(run_dir)}`, QEMU (not hardware), {timing.words()}, configuration "
        "`linux-only` on 4 cores for the microbenchmarks, `tandem` on 1 core for ctxsw. "
        f"Reproduce: `{command}`. Each check was fixed before the run "
        "(`harness/tandem/exp/memory/spec.py`).",
        "",
        "## Pointer chase: plateaus",
        "",
        "Stall per load: the chase's ns per load with the model minus the same chase "
        "without it (the loop's own instructions).",
        "",
        "| profile | level | size | profile's latency ns | measured ns | tolerance ns | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        for pl in p["plateaus"]:
            lines.append(
                f"| {name} | {pl['level']} | {pl['size'] // KIB} KiB | {pl['expected_ns']:g} | "
                f"{pl['measured_ns']:g} | ±{pl['tolerance_ns']:g} | "
                f"{'met' if pl['ok'] else 'NOT met'} |"
            )
    lines += [
        "",
        "## Contention on the shared bus",
        "",
        "Core 0 chases through 8 MiB (every load a DRAM read) while k other cores stream "
        "through 8 MiB each.",
        "",
        "| profile | bus service ns | k = 0 | k = 1 | k = 2 | k = 3 | growth per core ns | check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    baseline = summary["baseline"]
    assert isinstance(baseline, dict)
    for name, p in [*profiles.items(), ("no model", {"contention": baseline["contention"]})]:
        c = p["contention"]
        lat = c["latency_ns"]
        growth = ", ".join(f"{v:g}" for v in c["growth_per_stream_ns"].values())
        if "per_stream_ok" in c:
            service = c["bus_service_ns"]
            verdict = "met" if c["per_stream_ok"] else "NOT met"
        else:
            service, verdict = "-", "flat: " + ("met" if c["flat"] else "NOT met")
        lines.append(
            f"| {name} | {service} | "
            + " | ".join(f"{lat.get(str(k), '-')}" for k in STREAMS)
            + f" | {growth} | {verdict} |"
        )
    lines += [
        "",
        "The model makes a DRAM read wait one service time for every other core that has "
        "a request at the bus at that moment (round robin: each waiting core gets a turn "
        "first), so a streaming core adds a whole service time only if it is always at the "
        "bus. `arm11-003` holds the bus for the whole 56 ns access: one streaming core keeps "
        "it busy. On `a53` the bus is busy 10 ns of a 100 ns read, and a stream keeps it "
        "busy through its prefetcher (up to 5 lines in flight, the Cortex-A53's reset "
        "value): alone, about half its time; the streams share the bus as they add up "
        "(harness/memmodel, docs/harness.md).",
        "",
        "## TLB reach",
        "",
        "One load per page over P pages that are one physical page (every load an L1 hit), "
        "so only the TLBs see P pages. Stall per load: ns per load with the model minus the "
        "same sweep without it at the same P. " + _knee_rule(profiles),
        "",
        "| profile | micro TLB entries | knee | main TLB entries | knee | check |",
        "|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        k = p["tlb_knees"]
        ok = k["micro_ok"] and k["main_ok"]
        lines.append(
            f"| {name} | {k['micro_entries']} | {k['micro_knee']} | {k['main_entries']} | "
            f"{k['main_knee']} | {'met' if ok else 'NOT met'} |"
        )
    lines += [
        "",
        "## ctxsw: ASID against a TLB flush",
        "",
        f"The RTOS's two protected tasks hand off {summary['ctxsw_switches']} times, each "
        f"writing {summary['ctxsw_pages']} pages of its own between hand-offs (paper 004). "
        "Refills: the translation stall the model charged the core, flush minus asid, per "
        "hand-off.",
        "",
        "| model | asid ns | flush ns | gap ns | refills ns | main TLB misses per hand-off "
        "(asid / flush) | check |",
        "|---|---|---|---|---|---|---|",
    ]
    ctxsw = summary["ctxsw"]
    assert isinstance(ctxsw, dict)
    for name, r in ctxsw.items():
        misses = r.get("main_tlb_misses_per_switch")
        lines.append(
            f"| {name} | {r['asid_ns']} | {r['flush_ns']} | {r['gap_ns']} | "
            f"{r.get('refills_ns', '-')} | "
            + (f"{misses['asid']} / {misses['flush']}" if misses else "-")
            + " | "
            + ("-" if "ok" not in r else "met" if r["ok"] else "NOT met")
            + " |"
        )
    lines += [
        "",
        "## What the model counted",
        "",
        "| profile | loads | stores | L1D misses | L2 misses | DRAM reads | bus wait ms | "
        "micro / main TLB misses | stall ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        stats = p.get("model")
        if not isinstance(stats, dict):
            continue
        t = memmodel.totals(stats)
        lines.append(
            f"| {name} | {t.get('loads', 0)} | {t.get('stores', 0)} | {t.get('l1d_misses', 0)} | "
            f"{t.get('l2_misses', 0)} | {t.get('memory_reads', 0)} | "
            f"{t.get('bus_wait_ns', 0) / 1e6:.1f} | {t.get('micro_tlb_misses', 0)} / "
            f"{t.get('main_tlb_misses', 0)} | {t.get('stall_ns', 0) / 1e6:.1f} |"
        )
    lines += [
        "",
        timing.caveats(),
        "With a profile the plugin adds each access's stall to its core's clock "
        '(docs/harness.md, "The memory model"): what the paragraph above says of caches, TLBs '
        "and the bus holds for the boots without a model.",
        "",
        "Files: `summary.json`, `plateaus.png`, `contention.png`, `tlb.png`, `raw.tar.xz` "
        "(every boot's script, console and model counters).",
        "",
    ]
    return "\n".join(lines)


def _knee_rule(profiles: Mapping[str, Any]) -> str:
    """How the run read its knees, in words: runs since 30 Nov read the main
    TLB's from the sweep over its set overflow (parse.main_crossing)."""
    if any(p["tlb_knees"].get("main_rule") == "change point" for p in profiles.values()):
        return (
            "Micro knee: the largest P whose stall is below half a micro TLB miss. Main knee: "
            "where the main TLB's set overflow begins, read from the sweep around it (P from "
            "half the main TLB's size to a set more per set): a cyclic sweep over P > K pages "
            "overflows P - K of its sets, each missing on all its ways + 1 pages, so the stall "
            "is a plateau up to K and rises as (P - K) / P above it; the K whose least-squares "
            "fit of that shape leaves the least residual is the knee, met within 2 entries or "
            "1/64 of the main TLB's (fixed before the first run with that sweep)."
        )
    return (
        "Knee: the largest P before the stall steps up "
        "(micro: below half a micro TLB miss; main: within 0.1 ns of the plateau between the "
        "knees)."
    )
