"""The `lhp` report: E1, E2, the lock-state patch's cost and E3 against the
paper and the acceptance, and what QEMU can and cannot show; sections of
parts that did not run are left out."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import (
    fmt_us,
    median_change_ci,
    num,
    paired_gains,
    paired_words,
    read_summary,
    seeds_words,
    summary_list,
)
from tandem.exp.lhp.script import LOCKSTATE
from tandem.exp.lhp.spec import (
    NAME,
    OVERHEAD_GROWTH_LIMIT_US,
    PAPER_OVERHEAD_US,
    PARTS,
    PATCH_COST_LIMIT_PCT,
)
from tandem.platform.timing import Timing

# E2's modes that are not dispatch policies compared with static.
E2_BASELINES = ("static", "linux-alone", "linux-alone+lockstate")
# What E1 and E3 (run in the sweep's timing) can show, by timing mode.
SWEEP_LIMITS = {
    "virtual": (
        "In virtual timing QEMU itself preempts lock holders: a vCPU holding a lock waits "
        "for its turn while the others spin, so Linux alone already shows spin waits of "
        "hundreds of µs, and the paper's threshold (the longest wait with Linux alone) is "
        "that long. RTOS-caused waits only stand out when the RTOS's work is longer (the "
        "longer periods at 50 % load)."
    ),
    "percore": (
        "In per-core timing no vCPU waits for another's turn longer than the quantum, so "
        "QEMU no longer preempts lock holders: Linux alone's longest spin wait (the paper's "
        "threshold) is set by Linux's own lock holders (a critical section, with any "
        "interrupt taken inside it), and the long waits above it come "
        "from the RTOS taking a lock holder's core. Hold and wait times are instruction "
        "counts at 1 ns each: with no caches, a lock's cache line never moves between "
        "cores, so contended locks cost less than on hardware and the waits a preempted "
        "holder causes are the part QEMU shows. With migrate the handler reads another "
        "core's lock state and sends it an SGI, which that core takes once its clock "
        "reaches the sender's (within the quantum): the state the decision used is as fresh "
        "as on hardware to within the quantum, and E3's hand-off wait includes the SGI's "
        "delivery (at most about the quantum; a GIC on hardware takes well under a "
        "microsecond)."
    ),
}
# Virtual timing's cost for migrate's hand-off (runs whose E3 ran in it).
VIRTUAL_HANDOFF = (
    "With migrate the handler on one core reads another core's lock state and sends it "
    "an SGI; in virtual timing that core may run a whole turn (hundreds of µs) before it "
    "takes the interrupt, so the state the decision used is stale by then, and the cross-"
    "core dispatch itself waits for the turn (E3's hand-off wait). On hardware the SGI "
    "arrives within a microsecond."
)
# What E2's benchmark times can show, by timing mode.
BENCH_LIMITS = {
    "host": (
        "E2's host-timing numbers are only as good as the host was quiet: with other work on "
        "the host, the spread between repetitions exceeds any difference between modes.",
        "",
        "What would show the paper's effect cleanly: host timing on a host with a free "
        "core for every vCPU (no host-level lock-holder preemption), or hardware.",
    ),
    "percore": (
        "E2's times are guest time: the host's load does not enter them, and paired "
        "repetitions differ only by the phase of the RTOS's period at which they start, so "
        "the spread is the benchmark's own. What QEMU leaves out is what the paper's "
        "hardware adds to a preempted holder's cost: cache lines of the lock and its data "
        "moving between cores, and the memory bus they share.",
    ),
}


def qemu_limits(summary: dict[str, object], sweep_timing: str, timing: str) -> list[str]:
    """The section's paragraphs: each timing mode's caveats once (as the
    run of `summary` ran it), then what it means for E1/E3 and for E2."""
    out = [
        Timing.of_run(summary, sweep_timing).caveats(),
        "",
        SWEEP_LIMITS.get(sweep_timing, ""),
        "",
    ]
    if timing != sweep_timing:
        out += [Timing.of_run(summary, timing).caveats(), ""]
    if sweep_timing == "virtual":
        out += [VIRTUAL_HANDOFF, ""]
    return [*out, *BENCH_LIMITS.get(timing, ()), ""]


def _e2_expected(
    summary: dict[str, object], sweep: list[dict[str, object]], bench: list[dict[str, object]]
) -> list[str]:
    """What E1 lets E2 expect: the long-wait time each policy saves against
    static at E2's period, as a share of the cores' time in a hackbench run
    (E1 runs the same hackbench), beside E2's spread. Only when both parts
    ran, E1 at E2's period, with long-wait times."""
    scenario = summary.get("scenario")
    if not isinstance(scenario, dict):
        return []
    period = scenario.get("bench_period_us")
    rows = {
        str(r["policy"]): r
        for r in sweep
        if r["period_us"] == period and isinstance(r.get("long_spin_us_runs"), list)
    }
    hack = {str(r["policy"]): r for r in bench if r["bench"] == "hackbench"}
    if "static" not in rows or "static" not in hack:
        return []

    def median(values: object) -> float:
        assert isinstance(values, list) and values
        v = sorted(float(x) for x in values)
        return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2

    cores = int(num(summary, "sweep_smp"))
    run_s = num(hack["static"], "median_s")
    static_us = median(rows["static"]["long_spin_us_runs"])
    out = [
        "",
        "What E1 lets E2 expect (hackbench): a core spinning in a long wait does no work, so "
        "the long-wait time a policy saves against static, as a share of the cores' time in "
        f"one run ({cores} cores x {run_s:.3f} s), is the CPU time it gives back: a first-order "
        "estimate of its gain (a waiter on the benchmark's critical path may cost more):",
        "",
    ]
    for policy, r in rows.items():
        if policy == "static" or policy not in hack:
            continue
        saved_us = static_us - median(r["long_spin_us_runs"])
        bound = saved_us / (cores * run_s * 1e6) * 100
        spread = max(num(hack["static"], "spread_s"), num(hack[policy], "spread_s"))
        out.append(
            f"- {policy}: {saved_us / 1000:.1f} ms of long waits saved per run (medians), "
            f"{bound:.1f} % of the cores' time, against E2's spread of "
            f"{spread / run_s * 100:.1f} %"
        )
    return out


def _frames(stack: object, n: int = 4) -> str:
    """The first `n` frames of a waiter's stack, without offsets."""
    if not isinstance(stack, list):
        return "-"
    return " ← ".join(str(f).split("+")[0] for f in stack[:n]) or "-"


def _threshold(longest: object) -> list[str]:
    """Linux alone's longest wait per repetition: which lock, whether the
    waiter was interrupted, where it waited (runs from before the kernel
    recorded it have none)."""
    if not isinstance(longest, list) or not any(isinstance(w, dict) for w in longest):
        return []
    out = [
        "",
        "The threshold is the longest of Linux alone's repetitions; each one's longest wait "
        "(`tandem_spin_longest`, linux/patches/0004: the lock, the interrupts the waiting "
        "core took while it spun, and where it waited):",
        "",
        "| repetition | longest µs | core | lock | interrupts while spinning | waiter |",
        "|---|---|---|---|---|---|",
    ]
    for rep, w in enumerate(longest, 1):
        if isinstance(w, dict):
            out.append(
                f"| {rep} | {fmt_us(num(w, 'us'))} | {w['cpu']} | `{w['lock']}` | "
                f"{w['irqs']} | {_frames(w.get('stack'))} |"
            )
        else:
            out.append(f"| {rep} | - | - | - | - | no contended wait |")
    return out


def _e1_pair(sweep: list[dict[str, object]], period: int, policy: str) -> list[str]:
    """One line: `policy` against static at `period`, summed and per pair."""
    st = [r for r in sweep if r["period_us"] == period and r["policy"] == "static"]
    mi = [r for r in sweep if r["period_us"] == period and r["policy"] == policy]
    if not (st and mi):
        return []
    a, b = num(st[0], "long_spin_waits"), num(mi[0], "long_spin_waits")
    if not a:
        cut = "no long waits under static"
    elif b <= a:
        cut = f"{(a - b) / a * 100:.0f} % fewer with {policy}"
    else:
        cut = f"{(b - a) / a * 100:.0f} % MORE with {policy}"
    pairs = ""
    runs_a, runs_b = st[0].get("long_spin_waits_runs"), mi[0].get("long_spin_waits_runs")
    if isinstance(runs_a, list) and isinstance(runs_b, list) and len(runs_a) > 1:
        fewer = sum(y < x for x, y in zip(runs_a, runs_b, strict=False))
        cuts = ", ".join(
            f"{(x - y) / x * 100:.0f} %" if x else "-" for x, y in zip(runs_a, runs_b, strict=False)
        )
        pairs = (
            f"; fewer in {fewer} of {len(runs_a)} repetitions (same phase, paired; "
            f"cut per pair {cuts})"
        )
    return [f"- {period} µs: static {a:.0f}, {policy} {b:.0f}: {cut}{pairs}"]


def _e1_causes(sweep: list[dict[str, object]]) -> list[str]:
    """What the RTOS's jobs preempted (Linux holding a lock, spinning for one,
    or neither), and the time in long waits, per period and policy; runs made
    before the core records counted it have no such section."""
    rows = [r for r in sweep if isinstance(r.get("preempted_runs"), dict)]
    if not rows:
        return []
    out = [
        "",
        "### Where the long waits come from",
        "",
        "At each job's first instruction the RTOS reads the lock words Linux published on "
        "that core (Linux cannot run there while the job does, so they say what it was doing "
        "when the RTOS took the core): holding a spin lock or rwlock, spinning for one, or "
        "neither. Counted over each hackbench run (each job counts in its core's record "
        "as it starts). Long-wait time: the time Linux's cores "
        "spent in waits above the threshold (a lower bound, from bucket starts), the "
        "capacity lost to lock-holder and lock-waiter preemption.",
        "",
        "| period µs | policy | jobs | preempted holding | preempted spinning | "
        "long-wait time per run, ms (median) | jobs per core |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        pre = r["preempted_runs"]
        assert isinstance(pre, dict)
        jobs, holding, waiting = (sum(pre[k]) for k in ("starts", "holding", "waiting"))
        per_core: object
        times = r.get("long_spin_us_runs")
        ms = (
            f"{sorted(times)[len(times) // 2] / 1000:.1f}"
            if isinstance(times, list) and times
            else "-"
        )

        def share(n: int, jobs: int = jobs) -> str:
            return f"{n} ({n / jobs * 100:.1f} %)" if jobs else str(n)

        per_core = pre.get("starts_per_core")
        spread = "-"
        if isinstance(per_core, list) and per_core and all(isinstance(x, list) for x in per_core):
            totals = [sum(c) for c in zip(*per_core, strict=False)]
            spread = " / ".join(f"{t / jobs * 100:.0f} %" for t in totals) if jobs else "-"
        out.append(
            f"| {r['period_us']} | {r['policy']} | {jobs} | {share(holding)} | "
            f"{share(waiting)} | {ms} | {spread} |"
        )
    out += [
        "",
        "Where the jobs ran matters for E2 as well: `static` keeps the RTOS's whole load on "
        "one core, while `migrate` spreads it over the cores (the last column), which Linux's "
        "scheduler, blind to the RTOS's time, may balance better whatever the locks; the "
        "long-wait time saved is the part E1 attributes to the locks.",
    ]
    return out


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, NAME)
    timing = str(summary["timing"])
    sweep_timing = str(summary["sweep_timing"])
    sweep = summary_list(summary, "period_sweep")
    bench = summary_list(summary, "bench")
    overhead = summary_list(summary, "overhead")
    out = [
        "# lhp: lock-holder preemption and RTOS task migration (paper 000 §3)",
        "",
        f"Run `{run_dir.name.removesuffix('.partial')}` on QEMU (not hardware): "
        f"E1 and E3 in **{summary['sweep_timing']} timing** on {summary.get('sweep_smp')} "
        f"cores, E2 in **{timing} timing** on {summary['smp']} cores; "
        f"RTOS handler on core {summary['rtos_core']}, "
        f"E1 {summary.get('sweep_reps', summary['reps'])} and E2 {summary['reps']} "
        f"repetition(s){seeds_words(summary)}"
        f"{', quick settings' if summary['quick'] else ''}. Reproduce: `{command}`.",
    ]
    parts = summary.get("parts", list(PARTS))
    assert isinstance(parts, list)
    if set(parts) != set(PARTS):
        skipped = [p for p in PARTS if p not in parts]
        out += ["", f"Parts run: {', '.join(parts)}; not run here: {', '.join(skipped)}."]
    thresholds = summary_list(summary, "thresholds", required=False)
    if len(thresholds) > 1:
        # Each seed's boots count against their own seed's Linux alone.
        alone = "with Linux alone on the boot's Linux seed in this run (" + ", ".join(
            f"seed {t['seed']}: {fmt_us(t['us'])} µs" for t in thresholds
        )
    else:
        alone = f"with Linux alone in this run ({fmt_us(summary['long_spin_threshold_us'])} µs"
    out += [
        "",
        "## E1: long spin waits against the RTOS period",
        "",
        f"Long: longer than the longest spin wait {alone}, 1.024 µs buckets), counted "
        "over hackbench runs (sum over repetitions; repetition r starts "
        f"(r - 1) times {summary['scenario'].get('sweep_phase_us', 0)} µs later, "  # type: ignore[attr-defined]
        "at another phase of the RTOS period).",
    ]
    out += _threshold(summary.get("baseline_longest"))
    out += [
        "",
        "| period µs | load µs | policy | long spin waits | per repetition | all contended | "
        "longest µs | over 100 / 300 / 1000 / 3000 µs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sweep:
        over = r.get("waits_over_us")
        tail = " / ".join(str(v) for v in over.values()) if isinstance(over, dict) else "-"
        per_rep = r.get("long_spin_waits_runs")
        per = ", ".join(str(v) for v in per_rep) if isinstance(per_rep, list) else "-"
        out.append(
            f"| {r['period_us']} | {r['load_us']} | {r['policy']} | {r['long_spin_waits']} | "
            f"{per} | {r['spin_waits']} | {fmt_us(r['max_spin_us'])} | {tail} |"
        )
    movers = [p for p in dict.fromkeys(str(r["policy"]) for r in sweep) if p != "static"]
    for policy in movers:
        out += ["", f"{policy.capitalize()} against static:", ""]
        for period in sorted({int(num(r, "period_us")) for r in sweep}, reverse=True):
            out += _e1_pair(sweep, period, policy)
    out += _e1_causes(sweep)
    out += [
        "",
        "## E2: benchmark times",
        "",
        f"RTOS at {summary['scenario']['bench_period_us']} µs / "  # type: ignore[index]
        f"{summary['scenario']['bench_work_us']} µs. Paired: each repetition boots every mode "  # type: ignore[index]
        "back to back.",
        "",
        "| bench | mode | median s | spread s | runs |",
        "|---|---|---|---|---|",
    ]
    for r in bench:
        runs = ", ".join(f"{x:.3f}" for x in r["runs_s"])  # type: ignore[attr-defined]
        out.append(
            f"| {r['bench']} | {r['policy']} | {num(r, 'median_s'):.3f} | "
            f"{num(r, 'spread_s'):.3f} | {runs} |"
        )
    e2_pct = summary.get("lock_patch_overhead_e2_pct")
    out += [
        "",
        f"Linux alone with lock-state publishing against without, in E2 ({timing} timing): "
        f"{e2_pct} % on hackbench (see the patch cost below for the measurement that counts).",
    ]
    movers = [p for p in dict.fromkeys(str(r["policy"]) for r in bench) if p not in E2_BASELINES]
    for name in sorted({str(r["bench"]) for r in bench}):
        st = [r for r in bench if r["bench"] == name and r["policy"] == "static"]
        for policy in movers:
            mi = [r for r in bench if r["bench"] == name and r["policy"] == policy]
            if st and mi:
                a, b = num(st[0], "median_s"), num(mi[0], "median_s")
                runs_a = [float(x) for x in st[0]["runs_s"]]  # type: ignore[attr-defined]
                runs_b = [float(x) for x in mi[0]["runs_s"]]  # type: ignore[attr-defined]
                # Beyond the spread: the two modes' ranges do not overlap (the
                # claims table's test, tandem/claims.py).
                beyond = (
                    f"beyond the spread: every {policy} run faster than every static run"
                    if max(runs_b) < min(runs_a)
                    else "within the spread: the ranges overlap"
                )
                gains = paired_gains(st[0], mi[0])
                out.append(
                    f"- {name}: static {a:.3f} s ({min(runs_a):.3f}-{max(runs_a):.3f}), "
                    f"{policy} {b:.3f} s ({min(runs_b):.3f}-{max(runs_b):.3f}): "
                    f"{(a - b) / a * 100:+.1f} % for {policy}, {beyond}; {policy} "
                    f"{paired_words(gains)}"
                )
    out += _e2_expected(summary, sweep, bench)
    patch = summary.get("lock_patch_overhead")
    if isinstance(patch, dict):
        pct = num(patch, "pct")
        noise = max(num(patch, "spread_off_pct"), num(patch, "spread_on_pct"))
        verdict = "within" if pct <= PATCH_COST_LIMIT_PCT else "NOT within"
        out += [
            "",
            "## Cost of the lock-state patch",
            "",
            f"hackbench with Linux alone, {patch['timing']} timing, {patch['smp']} core(s); "
            f"boots without and with `{LOCKSTATE}` alternate, "
            f"{len(patch['runs_off_s'])} runs each:",
            "",
            "| lock state | median s | spread % | runs s |",
            "|---|---|---|---|",
        ]
        for setting in ("off", "on"):
            runs = ", ".join(f"{float(x):.3f}" for x in patch[f"runs_{setting}_s"])
            out.append(
                f"| {setting} | {num(patch, f'median_{setting}_s'):.3f} | "
                f"{num(patch, f'spread_{setting}_pct'):.1f} | {runs} |"
            )
        # From the runs, so that reports of runs older than the interval have it.
        low, high = median_change_ci(
            [float(x) for x in patch["runs_off_s"]], [float(x) for x in patch["runs_on_s"]]
        )
        where = (
            "lies below"
            if high <= PATCH_COST_LIMIT_PCT
            else "lies above"
            if low > PATCH_COST_LIMIT_PCT
            else "includes"
        )
        interval = (
            f"95 % bootstrap interval {low:+.2f} to {high:+.2f} %, which {where} the target; "
        )
        out += [
            "",
            f"`lock_patch_overhead_pct` = {pct:+.2f} % (median {verdict} the "
            f"{PATCH_COST_LIMIT_PCT} % target; {interval}"
            f"run-to-run spread up to {noise:.1f} %).",
        ]
        if Timing.of_summary(patch).deterministic:
            out.append(
                f"In {patch['timing']} timing a second is 10^9 instructions, so this is the "
                "share of instructions the publishing adds: 5 per uncontended lock and 5 per "
                "unlock over the key's branch when off (inline: `mrs sp_el0`, the held word's "
                "pointer from thread_info, and a load, add and store of the word), against "
                "lock and unlock fast paths of 10 to 15. "
                "On hardware, where a lock's atomic costs more than an ordinary instruction, "
                "the share would be smaller; QEMU cannot tell by how much."
            )
        else:
            out.append(
                "In host timing the time is the host's wall clock under multi-threaded TCG: "
                f"an interval {high - low:.1f} points wide cannot tell a "
                f"{PATCH_COST_LIMIT_PCT} % cost from none, and is what this host can resolve "
                "here; the virtual-timing figure counts the instructions the patch adds."
                if high - low > 2 * PATCH_COST_LIMIT_PCT
                else "In host timing the time is the host's wall clock under multi-threaded TCG, "
                "which weighs each added instruction by what TCG makes of it."
            )
    out += [
        "",
        "## E3: RTOS dispatch overhead",
        "",
        *e3_lines(overhead),
    ]
    out += [
        "",
        "## What QEMU can and cannot show here",
        "",
        *qemu_limits(summary, sweep_timing, timing),
        "Files: `summary.json`, `summary.csv`, `dispatch_histograms.csv`, "
        "`path_histograms.csv` (E3's per-core counts), `raw/` (every boot's script and "
        "console log, and E3's plugin hits), `e1_long_spin_waits.png`, `e2_bench.png`, "
        "`e3_path_counts.png`, `e3_overhead.png`.",
    ]
    return "\n".join(_without_sections(out, [p for p in PARTS if p not in parts])) + "\n"


def path_lines(overhead: list[dict[str, object]]) -> list[str]:
    """E3's per-core instruction counts (tandem/instruments/pathcount.py) and the verdict
    on them; empty for runs from before the count."""
    counted = {str(r["policy"]): r.get("path_instructions") for r in overhead}
    if not counted or not all(isinstance(c, dict) for c in counted.values()):
        return []
    out = [
        "Measured: each dispatch path in the instructions its own cores executed, counted "
        "by the QEMU plugin `tandem-pathcount` over the whole boot (1 instruction = 1 ns "
        "of virtual time). Local: the task starts on the core whose handler requested it. "
        "Remote (migrate moved it): the requesting core's part up to its reschedule SGI, plus "
        "the target core's part from its next entry into EL3 or the RTOS (the monitor's "
        "world switch included) to the task's first instruction. The SGI's delivery is in "
        "neither part: on QEMU it is the wait for the target vCPU's turn, on hardware the "
        "GIC's latency. Raw hits: `raw/e3-<policy>.pathcount.csv`.",
        "",
        "| policy | paths | local: median / max | remote | remote: median / max "
        "| requesting part max | target part max | worst µs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    worst: dict[str, float] = {}
    for policy, c in counted.items():
        assert isinstance(c, dict)

        def part(key: str, field: str, c: dict[str, object] = c) -> str:
            v = c.get(key)
            n = v.get(field, "-") if isinstance(v, dict) else "-"
            # A median of an even count may fall between two instructions.
            return f"{n:g}" if isinstance(n, float) else str(n)

        everything = c.get("all")
        if isinstance(everything, dict) and everything.get("samples"):
            worst[policy] = float(everything["max"]) / 1000
        out.append(
            f"| {policy} | {part('all', 'samples')} | {part('local', 'median')} / "
            f"{part('local', 'max')} | {part('remote', 'samples')} | {part('remote', 'median')} "
            f"/ {part('remote', 'max')} | {part('remote_requesting_part', 'max')} | "
            f"{part('remote_task_part', 'max')} | {fmt_us(worst.get(policy))} |"
        )
    untimed = {
        str(r["policy"]): r["path_remote_without_sgi"]
        for r in overhead
        if isinstance(r.get("path_remote_without_sgi"), int) and r["path_remote_without_sgi"]
    }
    if untimed:
        out.append(
            "\nRemote starts not timed: the target core was already entering the RTOS "
            "(no SGI from the requesting core, then an entry, before the start), so the "
            "task started with no SGI path: "
            + ", ".join(f"{p} {n}" for p, n in untimed.items())
            + "."
        )
    if "static" in worst and "migrate" in worst:
        growth = worst["migrate"] - worst["static"]
        ok = "within" if growth <= OVERHEAD_GROWTH_LIMIT_US else "NOT within"
        out.append(
            f"\nCounted in instructions, the worst case grows by {growth:+.2f} µs with migrate "
            f"({ok} the {OVERHEAD_GROWTH_LIMIT_US} µs limit; the paper, on hardware and with "
            "the SGI's delivery: +7 µs)."
        )
    return [*out, ""]


def e3_lines(overhead: list[dict[str, object]]) -> list[str]:
    """E3's tables and verdict: the per-core instruction counts where the run
    has them, then the RTOS's own clock readings. Runs from before the
    hand-off counts (ABI 1.5) measured the whole interval, hand-off wait
    included."""
    counts = path_lines(overhead)
    if counts:
        return [
            *counts,
            "The RTOS's own clock readings of the same paths, over the measurement window "
            "(the virtual clock counts every vCPU's instructions, so a path during which "
            "QEMU's round robin ran another vCPU reads long; the verdict above is on the "
            "counts):",
            "",
            *_clock_lines(overhead, verdict=False),
        ]
    return _clock_lines(overhead, verdict=True)


def _clock_lines(overhead: list[dict[str, object]], verdict: bool) -> list[str]:
    split = all("handoffs" in r for r in overhead)
    what = (
        "the RTOS's own path: activation request to the task's first instruction, less "
        "the wait from a reschedule SGI's sending to the target core's RTOS entry "
        "(counted apart, below)"
        if split
        else "activation request to the task's first instruction (hand-off wait included)"
    )
    out = [
        f"Measured: {what}; counter ticks of 16 ns, in a histogram of 65.5 µs, so a max "
        "shown with dispatches beyond it is a lower bound.",
        "",
        "| policy | dispatches | min µs | avg µs | max µs | beyond 65.5 µs | paper's worst (hw) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in overhead:
        beyond = int(num(r, "beyond_histogram")) if "beyond_histogram" in r else 0
        bound = "≥ " if beyond else ""
        out.append(
            f"| {r['policy']} | {r['samples']} | {fmt_us(r['min_us'])} | {fmt_us(r['avg_us'])} | "
            f"{bound}{fmt_us(r['max_us'])} | {beyond} | "
            f"{PAPER_OVERHEAD_US.get(str(r['policy']), '-')} µs |"
        )
    st = [r for r in overhead if r["policy"] == "static"]
    mi = [r for r in overhead if r["policy"] == "migrate"]
    if st and mi and verdict:
        if num(mi[0], "beyond_histogram") or num(st[0], "beyond_histogram"):
            out.append(
                "\nA worst case lies beyond the histogram: the growth with migrate "
                f"cannot be told against the {OVERHEAD_GROWTH_LIMIT_US} µs limit."
            )
        else:
            growth = num(mi[0], "max_us") - num(st[0], "max_us")
            ok = "within" if growth <= OVERHEAD_GROWTH_LIMIT_US else "NOT within"
            out.append(
                f"\nWorst case grows by {growth:.2f} µs with migrate ({ok} the "
                f"{OVERHEAD_GROWTH_LIMIT_US} µs limit; the paper: +7 µs)."
            )
            tail = mi[0].get("slowest_us")
            if growth > OVERHEAD_GROWTH_LIMIT_US and isinstance(tail, list):
                worst = num(st[0], "max_us")
                above = [float(x) for x in tail if float(x) > worst + OVERHEAD_GROWTH_LIMIT_US]
                beyond_tail = "" if len(above) < len(tail) else f"at least {len(tail)} "
                out.append(
                    f"The slowest migrate dispatches: {', '.join(fmt_us(float(x)) for x in tail)}"
                    f" µs; {beyond_tail}{len(above)} of {mi[0]['samples']} exceed static's "
                    f"worst by more than {OVERHEAD_GROWTH_LIMIT_US} µs. In virtual "
                    "timing a cross-core dispatch runs on two vCPUs, and QEMU's round robin "
                    "may switch to another vCPU in the middle of either part (the hand-off "
                    "waits below show how long a turn lasts), so a few migrate samples "
                    "include a turn of another vCPU; see `dispatch_histograms.csv`. What "
                    "would tell: hardware, or counting each core's own instructions instead "
                    "of the shared clock (later runs do, with the QEMU plugin "
                    "`tandem-pathcount`)."
                )
    if split:
        out += [
            "",
            "Hand-offs to another core since boot (the core records), and how long each "
            "waited between the SGI's sending and the target core's RTOS entry: in virtual "
            "timing the wait for that vCPU's turn in QEMU's round robin, on hardware the "
            "GIC's delivery and the monitor's world switch (about 200 instructions):",
            "",
            "| policy | hand-offs | avg wait µs | max wait µs | deadline misses |",
            "|---|---|---|---|---|",
        ]
        for r in overhead:
            out.append(
                f"| {r['policy']} | {r['handoffs']} | {fmt_us(r.get('handoff_wait_avg_us'))} | "
                f"{fmt_us(num(r, 'handoff_wait_max_us'))} | {r.get('deadline_misses', '-')} |"
            )
        out += [
            "",
            "A job whose release found the last one still pending or running (a deadline "
            "miss) queues behind it; its dispatch is not timed, since it waits for that job. "
            "Deadline misses count since boot. In virtual timing with hackbench on every core "
            "they are mostly the round robin's: a release waits for its core's vCPU's turn "
            "(as long as the hand-off waits above), which can exceed the slack the period "
            "leaves after the job. With Linux idle a boot misses about 20, in core 1's known "
            "boot-time stall (docs/rtos.md).",
        ]
    return out


# The report's section of each part, by the start of its heading.
SECTIONS = {"e1": "## E1", "e2": "## E2", "e3": "## E3", "patch": "## Cost of the lock-state"}


def _without_sections(lines: list[str], skipped: list[str]) -> list[str]:
    """The report without the sections of parts that did not run."""
    drop = tuple(SECTIONS[p] for p in skipped)
    out: list[str] = []
    dropping = False
    for line in lines:
        if line.startswith("## "):
            dropping = line.startswith(drop) if drop else False
        if not dropping:
            out.append(line)
    return out
