"""The `linux-rt` report: our worst cases (median and range over
repetitions) beside the paper's, its orderings checked on our data, what
the worst samples coincide with, and what QEMU can and cannot show."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from pathlib import Path

from tandem.exp.common import fmt_us, num, read_summary, seeds_words, summary_list
from tandem.exp.linux_rt.analysis import TAIL_US
from tandem.exp.linux_rt.orderings import (
    Row,
    affinity_lowers,
    core_counts,
    find,
    grows_with_cores,
    io_raises,
    rep_max,
    spread,
)
from tandem.exp.linux_rt.spec import NAME, PAPER
from tandem.platform.timing import Timing

# Where the paper's kernel and ours differ in the path that sets the worst
# case here (mm/page_alloc.c; the trace is in results/linux-rt-trace/).
PCP_NOTE = (
    "Linux 6.1 keeps freed pages in per-CPU lists and, once a list holds its high "
    "mark, hands a batch back to the zone in `free_pcppages_bulk`, under the zone "
    "lock with interrupts off. Since 5.14 that batch grows while a CPU frees without "
    "allocating, up to the high mark minus one batch, and the high mark is the "
    "zone's low watermark divided among the online CPUs (at least four batches). "
    "Linux 2.6.34, the paper's kernel, always handed back one batch (a few dozen "
    "pages). An irqsoff-tracer kernel names the path: `results/linux-rt-trace/`."
)

QEMU_LIMITS = {
    "percore": (
        "- What QEMU shows here: Linux's own paths. The measuring core's timer "
        "interrupt arrives at its deadline (within a quantum) unless that core runs with "
        "interrupts off, and a core spinning on a lock another core holds waits, in its "
        "own instructions, until the holder lets go: interrupt-off sections, "
        "non-preemptible sections and lock waits are all counted, one instruction a "
        "nanosecond. The section above that sets the worst case is one of them, and so "
        "is any wait for the zone lock while another core hands its pages back.",
        "- What it does not show: the memory system. QEMU models no caches, no TLB cost "
        "and no memory bus, so loaded cores do not slow each other down, a cache line "
        "another core wrote costs nothing to fetch, and an interrupt-off section is "
        "as long as its instructions, not its cache misses. The paper names cache "
        "flushes as one cause of the growth with cores; that part cannot appear here.",
        "- The instruction count is not hardware time: at 1 ns per instruction a path "
        "takes several times longer than on a core that retires 2-4 instructions per "
        "nanosecond, so the microseconds compare across our cells, not with the "
        "paper's.",
        "- The disk: a virtio-blk device on a host file, served by QEMU's block layer "
        "when the host has done the write; its completion interrupt arrives at a "
        "virtual time that depends on the host, and a real disk's seek and rotation "
        "times are not modelled. The I/O counters above say how much of the I/O load "
        "reached the device at all; the rest is the page cache, Linux's own work.",
        "- With affinity on, the measuring core idles until its timer fires; in "
        "per-core timing an idle vCPU's clock jumps to its next timer, so the isolated "
        "core measures its own path, as on hardware.",
    ),
    "virtual": (
        "- In virtual timing, more vCPUs means longer round-robin turns before the "
        "measuring vCPU runs again, so the worst case grows with cores for a reason the "
        "paper's hardware did not have.",
        "- With affinity on, the measuring core idles until its timer fires; in virtual "
        "timing an idle vCPU then waits for the busy vCPUs' turns, which penalises "
        "affinity: the opposite of what the paper's hardware shows.",
    ),
    "host": (
        "- In host timing each vCPU is a host thread: with fewer host cores than vCPUs "
        "the host's scheduler preempts the measuring core for milliseconds, which shows "
        "up as latency.",
    ),
}


def _ints(row: Row, key: str) -> list[int]:
    v = row.get(key)
    return [int(x) for x in v] if isinstance(v, list) else []


def _floats(row: Row, key: str) -> list[float]:
    v = row.get(key)
    return [float(x) for x in v] if isinstance(v, list) else []


def _counter_sum(rows: Sequence[Row], key: str) -> float:
    """A counter summed over rows and their repetitions."""
    total = 0.0
    for r in rows:
        reps = r.get("rep_counters")
        for c in reps if isinstance(reps, list) else []:
            if isinstance(c, dict) and isinstance(c.get(key), int | float):
                total += float(c[key])
    return total


def _counter(row: Row, key: str) -> float | None:
    reps = row.get("rep_counters")
    if not isinstance(reps, list) or not reps:
        return None
    return statistics.median(float(r[key]) for r in reps if isinstance(r, dict) and key in r)


def _label(row: Row) -> str:
    """A grid row's first three table cells."""
    return (
        f"{row['cores']} | {'on' if row['affinity'] else 'off'} | "
        f"{'on' if row['io_load'] else 'off'}"
    )


def _grid(rows: Sequence[Row]) -> list[str]:
    out = [
        "| cores | affinity | I/O | samples | p99 µs | p99.9 µs, median (range) | "
        "worst µs, median (range) | each repetition's worst |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p999 = r.get("rep_p999_us")
        out.append(
            f"| {_label(r)} | {r['samples']} | {fmt_us(r.get('p99_median_us', r['p99_us']))} | "
            f"{spread([float(x) for x in p999]) if isinstance(p999, list) and p999 else '-'} | "
            f"{spread(rep_max(r))} | {', '.join(f'{x:.0f}' for x in rep_max(r))} |"
        )
    return out


def _paper(rows: Sequence[Row]) -> list[str]:
    def med(c: int, aff: bool, io: bool) -> str:
        r = find(rows, c, aff, io)
        return spread(rep_max(r)) if r else "-"

    out = [
        "| cores | ours | paper | ours, affinity | paper, affinity | ours, I/O | paper, I/O |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in core_counts(rows):
        out.append(
            f"| {c} | {med(c, False, False)} | {PAPER['worst_by_cores'].get(c, '-')} | "
            f"{med(c, True, False)} | {PAPER['affinity_worst_by_cores'].get(c, '-')} | "
            f"{med(c, False, True)} | {PAPER['io_worst_by_cores'].get(c, '-')} |"
        )
    return out


def _orderings(rows: Sequence[Row]) -> list[str]:
    out = []
    grows = grows_with_cores(rows)
    checks = ([grows] if grows else []) + affinity_lowers(rows) + io_raises(rows)
    for c in checks:
        out.append(f"- {c.what}: {'yes' if c.holds else 'NO'} ({c.detail})")
    return out


def _name(row: Row) -> str:
    return (
        f"{row['cores']} core(s), affinity {'on' if row['affinity'] else 'off'}, "
        f"I/O {'on' if row['io_load'] else 'off'}"
    )


def _tail(rows: Sequence[Row], cause: Sequence[Row]) -> list[str]:
    out = [
        f"Samples of {TAIL_US} µs or more, summed over repetitions, and how many were "
        "done while the memory timeline was freeing (MemFree grew over the 20 ms "
        "interval), beside the share of all loops done in freeing intervals (median "
        "over repetitions): were the tail unrelated to freeing, the two shares would "
        "match.",
        "",
        "| cell | tail samples | done while freeing | loops done while freeing |",
        "|---|---|---|---|",
    ]
    labelled = [(_name(r), r) for r in rows] + [
        (f"{r['cores']} core(s), high mark of {r['pcp_as_cores']} core(s)", r)
        for r in cause
        if not r.get("pcp_default")
    ]
    for label, r in labelled:
        tail, freeing = _ints(r, "rep_tail_samples"), _ints(r, "rep_tail_freeing")
        share = r.get("rep_freeing_share")
        if not tail or not isinstance(share, list):
            continue
        n, f = sum(tail), sum(freeing)
        done = f"{f} ({100 * f / n:.0f} %)" if n else "-"
        loops = 100 * statistics.median(float(x) for x in share)
        out.append(f"| {label} | {n} | {done} | {loops:.0f} % |")
    return out


def _pcp(rows: Sequence[Row], cause: Sequence[Row]) -> list[str]:
    if not cause:
        return []
    out = [
        "Each CPU's page-list high mark (pages; CPU 0 of the zone with the memory) and "
        "the worst case (affinity off, no I/O), median (range) over repetitions. "
        "`default`: as the kernel sets it for this core count; otherwise set through "
        "`vm.percpu_pagelist_high_fraction` to the kernel's default on another core "
        "count.",
        "",
        "| cores | high mark | as the default of | worst µs | p99.9 µs |",
        "|---|---|---|---|---|",
    ]
    for r in cause:
        high = _ints(r, "pcp_high")
        p999 = r.get("rep_p999_us")
        out.append(
            f"| {r['cores']} | {'/'.join(map(str, high))} | "
            f"{'default' if r.get('pcp_default') else str(r['pcp_as_cores']) + ' core(s)'} | "
            f"{spread(rep_max(r))} | "
            f"{spread([float(x) for x in p999]) if isinstance(p999, list) else '-'} |"
        )
    return out


def _io(rows: Sequence[Row]) -> list[str]:
    keys = (
        ("vda_sectors_written", "sectors written to vda"),
        ("vda_writes", "writes to vda"),
        ("virtio_irqs", "virtio interrupts"),
        ("nr_dirtied", "pages dirtied"),
        ("nr_written", "pages written back"),
        ("pgfree", "pages freed"),
    )
    if not any(_counter(r, "pgfree") is not None for r in rows):
        return []
    out = [
        "What the kernel did while cyclictest ran (affinity off), median over repetitions:",
        "",
        "| cores | I/O | " + " | ".join(k[1] for k in keys) + " |",
        "|---|---|" + "---|" * len(keys),
    ]
    for r in rows:
        if r["affinity"]:
            continue
        vals = [_counter(r, k) for k, _ in keys]
        out.append(
            f"| {r['cores']} | {'on' if r['io_load'] else 'off'} | "
            + " | ".join("-" if v is None else f"{v:.0f}" for v in vals)
            + " |"
        )
    return out


def _medians(rs: Sequence[Row]) -> str:
    return " / ".join(spread(rep_max(r)) for r in rs)


def _findings(rows: Sequence[Row], cause: Sequence[Row]) -> list[str]:
    """What the data says about the cause, each sentence computed from it."""
    out = []
    off = [r for r in rows if not r["affinity"]] + [r for r in cause if not r.get("pcp_default")]
    tail = sum(sum(_ints(r, "rep_tail_samples")) for r in off)
    freeing = sum(sum(_ints(r, "rep_tail_freeing")) for r in off)
    shares = [x for r in off for x in _floats(r, "rep_freeing_share")]
    if tail:
        out.append(
            f"- The tail is the page-freeing bursts: of the {tail} samples of {TAIL_US} µs or "
            f"more in the cells with affinity off, {freeing} ({100 * freeing / tail:.0f} %) "
            "were done in 20 ms intervals over which the zone's free memory grew, intervals "
            f"that hold {100 * statistics.median(shares):.0f} % of all loops (median). The "
            "bursts are the shm workers freeing their segments: each builds up its objects, "
            "then unmaps and removes them all at once (`memory.csv`, `timeline.png`)."
        )
    aff = [r for r in rows if r["affinity"]]
    if aff:
        late = sum(sum(_ints(r, "rep_tail_samples")) for r in aff)
        worst = max(max(rep_max(r)) for r in aff)
        out.append(
            f"- Affinity on: {late} samples of {TAIL_US} µs or more and a worst of "
            f"{worst:.0f} µs over every repetition: the isolated core runs cyclictest "
            "alone, so no other task's section with interrupts off runs there."
        )
    one = sorted(
        (r for r in cause if num(r, "cores") == 1 and not r.get("pcp_default")),
        key=lambda r: int(num(r, "pcp_as_cores")),
    )
    if one:
        counts = [int(num(r, "pcp_as_cores")) for r in one]
        grid = [g for c in counts if (g := find(rows, c, False, False)) is not None]
        base = find(rows, 1, False, False)
        highs = " / ".join("/".join(map(str, _ints(r, "pcp_high"))) for r in one)
        out.append(
            f"- One core, each CPU's page-list high mark set as Linux sets it on "
            f"{' / '.join(map(str, counts))} cores ({highs} pages): worst {_medians(one)} µs"
            + (f", against {spread(rep_max(base))} µs with its own" if base else "")
            + (
                f"; the grid with {' / '.join(map(str, counts))} cores and their own high "
                f"marks: {_medians(grid)} µs."
                if len(grid) == len(one)
                else "."
            )
        )
    same = sorted(
        (r for r in cause if num(r, "cores") > 1 and not r.get("pcp_default")),
        key=lambda r: int(num(r, "cores")),
    )
    base = find(rows, 1, False, False)
    if same and base is not None:
        counts = [1] + [int(num(r, "cores")) for r in same]
        series = [rep_max(base)] + [rep_max(r) for r in same]
        meds = [statistics.median(v) for v in series]
        grows = all(b >= a for a, b in itertools.pairwise(meds)) and min(series[-1]) > max(
            series[0]
        )
        out.append(
            f"- Every CPU with one core's high mark, on {' / '.join(map(str, counts))} cores: "
            f"worst {' / '.join(spread(v) for v in series)} µs: "
            + (
                "with the high mark held, it grows with cores beyond the spread."
                if grows
                else "with the high mark held, it does not grow with cores beyond the spread."
            )
        )
    io = [r for r in rows if r["io_load"] and not r["affinity"]]
    if io:
        sectors = _counter_sum(io, "vda_sectors_written")
        dirtied = _counter_sum(io, "nr_dirtied")
        out.append(
            f"- The disk I/O load dirtied {dirtied:.0f} pages and wrote {sectors:.0f} sectors "
            "to the disk while cyclictest ran, summed over its cells and repetitions"
            + (
                ": none of it reached the device. stress-ng's hdd workers write a file they "
                "have already unlinked, read it back and close it, so its dirty pages are "
                "dropped before writeback starts; the I/O cells measure page-cache work "
                "(allocating, copying and freeing pages), not disk I/O."
                if sectors == 0
                else "."
            )
        )
    return out


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    cause_raw = summary.get("cause")
    cause = [r for r in cause_raw if isinstance(r, dict)] if isinstance(cause_raw, list) else []
    timing = str(summary["timing"])
    mode = Timing.of_summary(summary).label()
    reps = int(num(summary, "reps"))
    out = [
        "# linux-rt: Linux's wake-up latency against cores, affinity and I/O (paper 001)",
        "",
        f"Run `{run_dir.name.removesuffix('.partial')}`, **{mode}** on QEMU (not hardware), "
        f"{reps} repetition(s){seeds_words(summary)}"
        f"{', quick settings' if summary['quick'] else ''}; each "
        "repetition boots every core count again with its commands started at another "
        "phase (0, 1.37, 2.74 ... ms), and a cell's worst case is the median (range) of "
        f"its repetitions' worst cases. Reproduce: `{command}`.",
        "",
        "cyclictest, one SCHED_FIFO 99 thread, 1 ms period, under kernel load "
        "(stress-ng shm, switch, timer and memrate, one each per core); config linux-only, "
        "kernel 6.1 PREEMPT, HZ=1000. Affinity off: the loads and cyclictest may run on "
        "every core; on: cyclictest alone on the last core (a cpuset partition).",
        "",
        *_grid(rows),
        "",
        "## Worst case beside the paper (µs; ours: median (range) over repetitions)",
        "",
        *_paper(rows),
        "",
        "## The paper's orderings, checked on our data",
        "",
        "An ordering holds when every repetition of one cell lies beyond every repetition "
        "of the other (`harness/tandem/exp/linux_rt/orderings.py`; the claims table "
        "uses the same tests).",
        "",
        *_orderings(rows),
    ]
    tail = _tail(rows, cause)
    if len(tail) > 5:
        out += ["", "## Where the worst cases come from", "", *_findings(rows, cause), "", *tail]
        pcp = _pcp(rows, cause)
        if pcp:
            out += ["", *pcp, "", PCP_NOTE]
        io = _io(rows)
        if io:
            out += ["", *io]
    out += [
        "",
        "## What QEMU can and cannot show here",
        "",
        Timing.of_summary(summary).caveats(),
        "",
        *QEMU_LIMITS.get(timing, QEMU_LIMITS["virtual"]),
        "- One core with affinity on is not measured: the only core cannot be set apart.",
        "",
        "Files: `summary.json`, `summary.csv`, `histograms.csv` (1 µs buckets, repetitions "
        "merged), `raw/` (each boot's script and console log, with every sample; "
        "`tail.csv`: the samples of 20 µs or more with their time and whether it was "
        "freeing; `memory.csv`: the memory timelines), `distributions.png`, "
        "`worst_vs_cores.png`, `timeline.png`.",
    ]
    return "\n".join(out) + "\n"
