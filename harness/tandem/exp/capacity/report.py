"""The `capacity` report: every cell in ms with its spread, the gains
against `none` beside the paper's trend, how much there was to gain, what
Linux counted on each core while the benchmarks ran, and what QEMU can and
cannot show."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.capacity.spec import CHANGING, NAME, PAPER_TREND
from tandem.exp.common import num, read_summary, seeds_words, summary_list
from tandem.platform import capacity
from tandem.platform.timing import Timing

AWARE = ("static", "steal", "both")
# /proc/stat columns that are Linux running something (its tasks, the
# kernel, interrupts) as Linux counts it.
BUSY = ("user", "nice", "system", "irq", "softirq")
TICK_S = 0.01  # USER_HZ = 100


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


def runs_ms(row: dict[str, object]) -> list[float]:
    """A row's runs in repetition order, in ms."""
    values = row.get("runs_s")
    if not isinstance(values, list):
        raise TandemError(f"summary row {row!r} without runs_s")
    return [float(v) * 1000 for v in values]


def spread_ms(row: dict[str, object]) -> float:
    """The range of a row's runs (slowest minus fastest), ms."""
    r = runs_ms(row)
    return max(r) - min(r)


def median_ms(row: dict[str, object]) -> float:
    return statistics.median(runs_ms(row))


def comparison(
    summary: dict[str, object], load: object, base: str, mode: str, bench: str
) -> tuple[float, float, float, list[float]]:
    """`mode` against `base` at one load: (median time saved in ms, the same
    as a fraction of base's median, the larger of the two spreads in ms, and
    the time saved in each repetition in ms: the two ran with the same start
    phase, so each repetition is a pair)."""
    a, b = cell(summary, load, base, bench), cell(summary, load, mode, bench)
    saved = median_ms(a) - median_ms(b)
    pairs = [x - y for x, y in zip(runs_ms(a), runs_ms(b), strict=False)]
    return saved, saved / median_ms(a), max(spread_ms(a), spread_ms(b)), pairs


def comparison_words(saved: float, frac: float, spread: float, pairs: list[float]) -> str:
    verdict = (
        f"beyond the spread {spread:.1f} ms"
        if saved > spread
        else f"within the spread {spread:.1f} ms, {spread - saved:.1f} ms short of it"
    )
    wins = sum(p > 0 for p in pairs)
    return (
        f"{saved:+.1f} ms ({frac:+.1%}; {verdict}; faster in {wins} of {len(pairs)} pairs, "
        f"per pair {', '.join(f'{p:+.0f}' for p in pairs)} ms)"
    )


def boots_of(summary: dict[str, object], load: object, mode: object) -> list[dict[str, object]]:
    """The boots of one (load, mode) cell, in repetition order."""
    return [
        b for b in summary_list(summary, "boots") if (b["rtos_load"], b["mode"]) == (load, mode)
    ]


def core_ticks(boot: dict[str, object], bench: str) -> list[dict[str, int]]:
    """Per core, what /proc/stat counted while `bench` ran in this boot."""
    ticks = boot.get("cpu_ticks")
    if not isinstance(ticks, dict) or bench not in ticks:
        raise TandemError(
            f"boot {boot.get('label')}: no per-benchmark /proc/stat counts (a run from "
            "before they were recorded: its report.md stands as written)"
        )
    value = ticks[bench]
    assert isinstance(value, list)
    return value


def shares(t: dict[str, int]) -> dict[str, float]:
    """One core's window: the busy, idle, steal and irq shares of it as
    Linux counted them, and its length in s."""
    total = sum(t.values()) or 1
    return {
        "busy": sum(t[k] for k in BUSY) / total,
        "idle": (t["idle"] + t["iowait"]) / total,
        "steal": t["steal"] / total,
        "irq": (t["irq"] + t["softirq"]) / total,
        "window_s": total * TICK_S,
        "busy_s": sum(t[k] for k in BUSY) * TICK_S,
    }


def own_run(sh: dict[str, float], load: float | None, pv_time: bool) -> tuple[float, float] | None:
    """The share of the window Linux really ran on the RTOS's core, as a
    range. With PV time, busy excludes the stolen time: exact. Without it,
    the RTOS's share `load` landed in busy (Linux was running) or in idle
    (Linux was idle), in a split /proc/stat cannot tell: a range. None when
    the RTOS's share in the window is not known (the changing load)."""
    if pv_time:
        return sh["busy"], sh["busy"]
    if load is None:
        return None
    busy, idle = sh["busy"], sh["idle"]
    return max(0.0, busy - min(load, busy)), max(0.0, busy - max(0.0, load - idle))


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def linux_view(summary: dict[str, object], bench: str) -> list[str]:
    """The table of what Linux counted on the RTOS's core and the others
    while `bench` ran, per (load, mode), medians over the repetitions."""
    core = int(num(summary, "rtos_core"))
    out = [
        f"| RTOS load | mode | `cpu_capacity` core {core} | core {core} as Linux counted it: "
        "busy / idle / steal / irq % | stolen, % of the RTOS's time | "
        f"Linux's own run on core {core}, % | capacity the balancer sees ≈ | "
        "other cores busy % | Linux CPU s on other cores |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    seen: list[tuple[object, object]] = []
    for b in summary_list(summary, "boots"):
        key = (b["rtos_load"], b["mode"])
        if key in seen:
            continue
        seen.append(key)
        load = key[0]
        u = float(load) / 100 if isinstance(load, int) else None
        pv = capacity.uses_steal(str(key[1]))
        same = boots_of(summary, *key)
        views = [[shares(t) for t in core_ticks(x, bench)] for x in same]
        mine = [v[core] for v in views]
        others = [statistics.mean(s["busy"] for i, s in enumerate(v) if i != core) for v in views]
        other_s = [sum(s["busy_s"] for i, s in enumerate(v) if i != core) for v in views]
        cap = b["cpu_capacity"]
        assert isinstance(cap, list)
        c = {k: med([s[k] for s in mine]) for k in ("busy", "idle", "steal", "irq")}
        stolen = f"{c['steal'] / u:.0%}" if pv and u else "-"
        runs = [own_run(s, u, pv) for s in mine]
        if any(r is None for r in runs):
            own = "-"
        else:
            lo = med([r[0] for r in runs if r])
            hi = med([r[1] for r in runs if r])
            own = f"{lo:.0%}" if abs(hi - lo) < 0.005 else f"{lo:.0%} to {hi:.0%}"
        balancer = round(int(cap[core]) * max(0.0, 1 - c["steal"] - c["irq"]))
        out.append(
            f"| {load}{' %' if isinstance(load, int) else ''} | {key[1]} | {cap[core]} | "
            f"{c['busy']:.0%} / {c['idle']:.0%} / {c['steal']:.0%} / {c['irq']:.0%} | {stolen} | "
            f"{own} | {balancer} | {med(others):.0%} | {med(other_s):.2f} |"
        )
    return out


def cpu_time_words(summary: dict[str, object], bench: str) -> str:
    """Linux's CPU time on the cores without the RTOS while `bench` ran, per
    load and mode (medians; exact in every mode: nothing else runs there),
    against what the benchmark took on all cores at 0 %."""
    core = int(num(summary, "rtos_core"))

    def other_s(load: object, mode: str) -> float | None:
        same = boots_of(summary, load, mode)
        if not same:
            return None
        return med(
            [
                sum(shares(t)["busy_s"] for i, t in enumerate(core_ticks(b, bench)) if i != core)
                for b in same
            ]
        )

    parts = []
    if base := boots_of(summary, 0, "none"):
        total = med([sum(shares(t)["busy_s"] for t in core_ticks(b, bench)) for b in base])
        parts.append(f"at 0 % {other_s(0, 'none'):.2f} s (all cores: {total:.2f} s)")
    for load in sorted(
        {r["rtos_load"] for r in summary_list(summary) if r["rtos_load"] != 0}, key=str
    ):
        got = [(m, other_s(load, m)) for m in ("none", *AWARE)]
        have = [f"{m} {v:.2f}" for m, v in got if v is not None]
        if have:
            parts.append(f"at {load}{' %' if isinstance(load, int) else ''}: {', '.join(have)} s")
    if not parts:
        return ""
    return (
        f"Linux's CPU time for {bench} on the cores without the RTOS (exact in every mode), "
        f"medians: {'; '.join(parts)}."
    )


def headroom(summary: dict[str, object], bench: str) -> list[str]:
    """Each constant load against the 0 % baseline scaled by the capacity
    the RTOS leaves: T0 x n / (n - U)."""
    if not has(summary, 0, bench, "none"):
        return []
    n = int(num(summary, "smp"))
    t0 = median_ms(cell(summary, 0, "none", bench))
    out = []
    loads = sorted(
        {int(r["rtos_load"]) for r in summary_list(summary) if isinstance(r["rtos_load"], int)}
        - {0}
    )
    for load in loads:
        u = load / 100
        scaled = t0 * n / (n - u)
        parts = []
        for mode in ("none", *AWARE):
            if has(summary, load, bench, mode):
                m = median_ms(cell(summary, load, mode, bench))
                parts.append(f"{mode} {m:.1f} ({m / scaled - 1:+.1%})")
        if parts:
            out.append(
                f"- {bench} at {load} %: {t0:.1f} ms x {n} / {n - u:g} = {scaled:.1f} ms; "
                f"measured {', '.join(parts)}; if the RTOS's core kept its 1 / {n} of the "
                f"work regardless, {t0:.1f} / {1 - u:g} = {t0 / (1 - u):.1f} ms"
            )
    return out


def control(summary: dict[str, object]) -> str:
    """What the control (`sysbench cpu`: threads sharing one event counter,
    so it uses whatever capacity is left however they are placed) says of
    the capacity Linux got: its medians against the 0 % time scaled by
    n / (n - U)."""
    bench = "sysbench-cpu"
    if not has(summary, 0, bench, "none"):
        return ""
    n = int(num(summary, "smp"))
    t0 = median_ms(cell(summary, 0, "none", bench))
    devs = [
        median_ms(r) / (t0 * n / (n - int(r["rtos_load"]) / 100)) - 1
        for r in summary_list(summary)
        if r["bench"] == bench and isinstance(r["rtos_load"], int) and r["rtos_load"] != 0
    ]
    if not devs:
        return ""
    words = (
        "so Linux's tasks got the capacity the RTOS leaves, no more and no less, and "
        "QEMU's scheduling of the vCPUs took none of it"
        if max(abs(d) for d in devs) <= 0.03
        else "more than 3 % away: something besides the RTOS's share changed what Linux got"
    )
    return (
        f"The control, `sysbench cpu`, took {min(devs):+.1%} to {max(devs):+.1%} of the 0 % "
        f"time scaled by n / (n - U) at every constant load in every mode, {words}."
    )


def shortfalls(summary: dict[str, object], bench: str = "hackbench") -> list[str]:
    """The acceptance items `bench` does not meet: a capacity-aware mode not
    beyond the spread of none at 80 %, a gain that does not grow from 50 to
    80 %, steal not beyond static's spread with the changing load."""
    out = []
    for mode in AWARE:
        if has(summary, 80, bench, "none", mode):
            saved, _, spread, _ = comparison(summary, 80, "none", mode, bench)
            if saved <= spread:
                out.append(f"{mode} at 80 % ({spread - saved:.0f} ms short of the spread)")
        if has(summary, 50, bench, "none", mode) and has(summary, 80, bench, "none", mode):
            f50 = comparison(summary, 50, "none", mode, bench)[1]
            f80 = comparison(summary, 80, "none", mode, bench)[1]
            if f80 <= f50:
                out.append(f"{mode}'s gain from 50 to 80 % ({f50:+.1%} -> {f80:+.1%})")
    if has(summary, CHANGING, bench, "static", "steal"):
        saved, _, spread, _ = comparison(summary, CHANGING, "static", "steal", bench)
        if saved <= spread:
            out.append(
                f"steal against static with the changing load ({spread - saved:.0f} ms short "
                "of the spread)"
            )
    return out


def rtos_check(summary: dict[str, object]) -> str:
    """Whether the RTOS took what it was told to: deadline misses, and its
    busy time per release on its core, over every boot."""
    core = int(num(summary, "rtos_core"))
    misses = 0
    per_release: dict[object, list[float]] = {}
    for b in summary_list(summary, "boots"):
        rtos = b.get("rtos")
        if not isinstance(rtos, list):
            return ""
        misses += sum(int(c["deadline_misses"]) for c in rtos)
        mine = rtos[core]
        if isinstance(b["rtos_load"], int) and mine["releases"]:
            per_release.setdefault(b["rtos_load"], []).append(mine["busy_us"] / mine["releases"])
    parts = [
        f"{load} %: {min(v):.1f} to {max(v):.1f} µs"
        for load, v in sorted(per_release.items(), key=lambda kv: str(kv[0]))
    ]
    return (
        f"The RTOS missed {misses} deadlines over all boots; its busy time per release on "
        f"core {core} (as it published last): {'; '.join(parts)} (period "
        f"{summary['period_us']} µs)."
    )


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    ch = summary["changing_load"]
    assert isinstance(ch, dict)
    scen = summary.get("scenario")
    assert isinstance(scen, dict)
    timing = str(summary["timing"])
    mode_words = Timing.of_summary(summary).words()
    benches = [b for b in ("hackbench", "sysbench-cpu") if any(r["bench"] == b for r in rows)]
    sizes = []
    if "hackbench" in benches:
        sizes.append(f"`hackbench -g {scen['hackbench_groups']} -l {scen['hackbench_loops']}`")
    if "sysbench-cpu" in benches:
        sizes.append(
            f"`sysbench cpu --threads={scen['sysbench_threads']} "
            f"--events={scen['sysbench_events']}`"
        )
    core = summary["rtos_core"]
    out = [
        "# capacity: capacity-aware load balancing (paper 000 §4)",
        "",
        f"Run `{run_dir.name.removesuffix('.partial')}` on QEMU (not hardware), "
        f"**{mode_words}**, {summary['smp']} cores, RTOS task on core {core} only "
        f"(period {summary['period_us']} µs), {summary['reps']} paired repetition(s)"
        f"{seeds_words(summary)}"
        f"{', quick settings' if summary['quick'] else ''}; benchmarks {' and '.join(sizes)}. "
        f"Changing load: {ch['high_pct']} % and {ch['low_pct']} % alternating every "
        f"{ch['every_ms']} ms (static mode sizes core capacity for the higher). "
        f"Reproduce: `{command}`.",
        "",
        "| RTOS load | mode | bench | median ms | spread ms | against none | runs ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        load = r["rtos_load"]
        vs = "-"
        if r["mode"] != "none" and has(summary, load, str(r["bench"]), "none"):
            base = median_ms(cell(summary, load, "none", str(r["bench"])))
            vs = f"{1 - median_ms(r) / base:+.1%}"
        out.append(
            f"| {load}{' %' if isinstance(load, int) else ''} | {r['mode']} | {r['bench']} | "
            f"{median_ms(r):.1f} | {spread_ms(r):.1f} | {vs} | "
            f"{', '.join(f'{x:.1f}' for x in runs_ms(r))} |"
        )
    out += [
        "",
        "Against none: the time saved, as a share of none's median at the same load "
        "(positive: faster than none). The spread is the range (slowest minus fastest) of a "
        "cell's runs; a pair is the two modes' runs of one repetition, which started with "
        "the same phase.",
        "",
        "## Against the paper and the acceptance",
        "",
    ]
    modes = {str(r["mode"]) for r in rows}
    for bench in benches:
        for mode in (m for m in AWARE if m in modes and "none" in modes):
            parts = []
            for load in (50, 80):
                if has(summary, load, bench, "none", mode):
                    words = comparison_words(*comparison(summary, load, "none", mode, bench))
                    parts.append(f"at {load} % {words}")
            if parts:
                out.append(f"- {bench}, {mode} against none: " + "; ".join(parts))
            if has(summary, 50, bench, "none", mode) and has(summary, 80, bench, "none", mode):
                f50 = comparison(summary, 50, "none", mode, bench)[1]
                f80 = comparison(summary, 80, "none", mode, bench)[1]
                trend = "holds" if f80 > f50 else "does NOT hold"
                out.append(
                    f"  - the paper's trend, {PAPER_TREND}: {f50:+.1%} -> {f80:+.1%}, {trend}"
                )
        if has(summary, CHANGING, bench, "static", "steal"):
            saved, frac, spread, pairs = comparison(summary, CHANGING, "static", "steal", bench)
            who = "steal beats static" if saved > 0 else "steal does NOT beat static"
            out.append(
                f"- {bench}, changing load: {who}: {comparison_words(saved, frac, spread, pairs)}"
            )
    lines = [x for bench in benches for x in headroom(summary, bench)]
    if lines:
        out += [
            "",
            "## How much there was to gain",
            "",
            f"Where the RTOS takes U of one core of {summary['smp']}, Linux has n - U cores "
            "left. The 0 % time of `none` scaled by n / (n - U) is the time of a benchmark "
            "that uses whatever capacity is left, however it is spread (a reference, not a "
            "bound: a benchmark that left cores idle at 0 % can lose less). Medians in ms, "
            "and how far each is above that time; last, the time if nothing moved work off "
            "the RTOS's core (the 0 % time over 1 - U), which says how far `none` is from "
            "blind:",
            "",
            *lines,
        ]
    out += [
        "",
        "## What Linux saw",
        "",
        f"Per (load, mode), medians over the repetitions, of what /proc/stat counted on "
        f"each core between the snapshots before and after the benchmark (ticks of 10 ms). "
        f"Without PV time (none, static) Linux cannot tell the RTOS's time from its own: "
        f"the RTOS's share of core {core} lands in busy while Linux had a task running "
        f"there (charged to that task, also in its PELT signals) and in idle while it had "
        f"none, so Linux's own run there is only known as a range. With PV time (steal, "
        f"both) the monitor counts as stolen the RTOS's periods that start while Linux "
        f"runs; Linux's own run is then busy exactly. The balancer's capacity of the core is "
        f"`cpu_capacity` less the share of its time in irq and steal (Linux's "
        f"scale_rt_capacity with NONTASK_CAPACITY; a PELT average, here computed from the "
        f"counted shares, not read from the kernel).",
        "",
    ]
    for bench in benches:
        out += [f"{bench}:", "", *linux_view(summary, bench), ""]
        if words := cpu_time_words(summary, bench):
            out += [words, ""]
    check = rtos_check(summary)
    if check:
        out += [check, ""]
    boots = summary_list(summary, "boots")
    loads_before = [num(b, "host_loadavg_before") for b in boots]
    out += [
        "## What QEMU can and cannot show here",
        "",
        Timing.of_summary(summary).caveats(),
        "",
    ]
    if words := control(summary):
        out += [words, ""]
    out += list(QEMU_LIMITS.get(timing, ()))
    if Timing.of_summary(summary).deterministic and (missed := shortfalls(summary)):
        out += [
            f"Not met here (hackbench): {'; '.join(missed)}. The modes ran in the same QEMU, "
            "and what it leaves out (free moves between cores, no bus) favours the modes "
            "that move tasks off the RTOS's core, so it does not explain a mode falling "
            "short; those are Linux's decisions under each mode, which the tables above "
            "show from outside (the scheduler's own state is not readable in this kernel).",
            "",
        ]
    # Runs before `--jobs` did not record it: one boot at a time.
    parallel = max(int(num(b, "parallel_boots", 1)) for b in boots)
    out += [
        f"Host load average before each boot: {min(loads_before):.2f} to "
        f"{max(loads_before):.2f}"
        + (f", with up to {parallel} boots running side by side" if parallel > 1 else "")
        + (
            " (guest time does not depend on it)."
            if Timing.of_summary(summary).deterministic
            else " (a busy host widens the spread)."
        ),
        "",
        "Files: `summary.json` (rows and every boot: times, capacities, per-core /proc/stat "
        "counts per benchmark, the RTOS's counts), `summary.csv`, `raw/` (every boot's "
        "script and console log), `capacity.png`.",
    ]
    return "\n".join(out) + "\n"


# What each timing mode lets this experiment show, beyond its caveats (platform/timing.py).
QEMU_LIMITS: dict[str, tuple[str, ...]] = {
    "percore": (
        "What differs between the modes is then Linux's own decisions, repeated exactly for "
        "the same inputs (the repetitions differ only by their start phase against the "
        "RTOS's period): where the scheduler puts hackbench's tasks, and what a task the "
        "RTOS has stopped on its core costs the others. A lock holder or a mutex owner "
        "stopped there keeps other cores spinning (paper 000 §3's problem); per-core timing "
        "counts that as hardware would, the spinning core's clock running while the "
        "holder's core runs the RTOS, and it shows as Linux CPU time on the other cores "
        "(above).",
        "",
        "What QEMU leaves out: caches, TLBs and the memory bus. A task that moves to another "
        "core finds no cold cache here, so the moves the scheduler makes cost nothing; on "
        "hardware each costs refills, which weighs against the modes that move tasks off the "
        "RTOS's core (how often each mode moves tasks is not measured: this kernel has "
        "neither SCHEDSTATS nor SCHED_DEBUG). The RTOS's busy loop does not compete with "
        "Linux for the bus. Every core runs one instruction per ns, so the times are not the "
        "R-Car H1's; the comparisons between the modes are what carries over.",
        "",
        "Not QEMU but this kernel: Linux 6.1 built without CONFIG_SCHED_MC has one "
        "scheduling domain over the cores and no last-level-cache domain, so with equal "
        "capacities (none, steal) a waking task goes back to its previous or its waker's "
        "core and only the load balancer moves tasks (periodically, every 64-128 ms on a "
        "busy core, and when a core goes idle); unequal `cpu_capacity` (static, both) "
        "turns on 6.1's asymmetric-capacity paths, which at wake-up look for an idle core "
        "the task fits and move tasks that outgrow the small core off it. steal changes "
        "only what the balancer sees (the core's capacity, and tasks' PELT signals, which "
        "no longer count the stolen time). The paper's Linux 2.6.35 had only the balancer's "
        "cpu_power.",
        "",
    ),
}
