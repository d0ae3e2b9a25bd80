"""Experiment `lhp` (paper 000 §3): lock-holder preemption, and the RTOS
dispatching its task around Linux's lock holders.

The RTOS runs one periodic task (boot-configured workload): a cyclic handler
on core `rtos_core` releases a task that busy-waits `load_pct` % of the
period, dispatched `static` (always on the handler's core) or `migrate` (on a
core where Linux holds no spin lock, as Linux publishes with
`tandem_lockstate=on`).

- E1: long spin waits in Linux (longer than the longest seen with Linux
  alone, from the spin-wait histogram of `tandem_spinstat=on`) while
  hackbench runs, for each RTOS period, static vs migrate.
- E2: benchmark times at one period (hackbench and sysbench's mutex test):
  Linux alone (lock-state publishing off, then on: the patch's cost), static,
  migrate; paired runs, medians and spread.
- E3: RTOS dispatch overhead, activation request to the task's first
  instruction, static vs migrate (virtual timing: a path length).
"""

from __future__ import annotations

import collections
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from tandem.exp.common import (
    Boot,
    Progress,
    boot_options,
    fmt_us,
    median_change_ci,
    num,
    rep_phase_us,
    run_tag,
    run_words,
    runs,
    seed_suffix,
    seeds,
)
from tandem.exp.lhp.claims import claims
from tandem.exp.lhp.parse import (
    HACKBENCH_TIME,
    SYSBENCH_TIME,
    bench_times,
    handoff_waits,
    json_after,
    long_spin_us,
    long_waits,
    longest_waits,
    preemptions,
    slowest,
    spin_histogram,
)
from tandem.exp.lhp.plot import plot
from tandem.exp.lhp.report import report
from tandem.exp.lhp.script import (
    DISPATCH_RESULT,
    LOCKSTATE,
    LONGEST_BEGIN,
    LONGEST_END,
    PREEMPT_AFTER,
    PREEMPT_BEFORE,
    SPIN_RESULT,
    SPINSTAT,
    bench_script,
    dispatch_script,
    e2_modes,
    patch_script,
    periodic_task,
    spin_script,
)
from tandem.exp.lhp.spec import NAME, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.instruments import pathcount
from tandem.instruments.measure import Latency, from_rtos, merged
from tandem.platform.board import Board
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload
from tandem.platform.timing import Timing
from tandem.results import write_atomic

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]

# Host seconds a boot may take.
BOOT_TIMEOUT_S = 1800


# Spin-wait lengths (µs) above which E1 also counts, to show the tail's shape.
TAIL_US = (100, 300, 1000, 3000)


def _longest(board: Board, lines: list[str], label: str) -> dict[str, object] | None:
    """The longest spin wait of any CPU in the run (timed by `board`'s
    counter), with its lock, the waiter's interrupts meanwhile and its
    stack (None if no wait)."""
    tick_us = 1e6 / board.counter_hz
    waits = longest_waits(lines, LONGEST_BEGIN, LONGEST_END, tick_us, label)
    return waits[0] if waits else None


def _e1_options(s: Scenario, workload: Workload | None, seed: int) -> BootOptions:
    return boot_options(
        s,
        config="linux-only" if workload is None else "tandem",
        timing=s.text("sweep_timing"),
        smp=s.integer("sweep_smp"),
        extra_bootargs=f"{LOCKSTATE} {SPINSTAT}",
        workload=workload,
        linux_seed=seed,
    )


def e1_units(s: Scenario) -> list[Boot]:
    """E1's boots: Linux alone (the baseline), then each period and policy,
    `sweep_reps` times each per Linux seed. The policies of one period, seed
    and repetition (the boots a claim pairs) run back to back; the periods
    it also pairs (static's shortest and longest) are a period apart in the
    order, which per-core timing (E1's, a boot repeated exactly whatever
    else runs) makes no difference to."""
    reps = s.integer("sweep_reps")
    out = [
        Boot(
            f"e1-alone-{run_tag(s, run)}",
            _e1_options(s, None, run.seed),
            spin_script(s, run.rep),
            timeout_s=BOOT_TIMEOUT_S,
            about=f"E1 baseline: Linux alone, {run_words(s, run, reps)}",
        )
        for run in runs(s, reps)
    ]
    for run in runs(s, reps):
        for period in s.integers("periods_us"):
            work = period * s.integer("load_pct") // 100
            for policy in s.texts("policies"):
                out.append(
                    Boot(
                        f"e1-{period}us-{policy}-{run_tag(s, run)}",
                        _e1_options(s, periodic_task(s, period, work, policy), run.seed),
                        spin_script(s, run.rep),
                        timeout_s=BOOT_TIMEOUT_S,
                        about=f"E1 period {period} µs, load {work} µs, {policy}, "
                        f"{run_words(s, run, reps)}",
                    )
                )
    return out


def e1(
    s: Scenario, measured: Measured, progress: Progress
) -> tuple[dict[int, float], list[dict[str, object] | None], list[dict[str, object]]]:
    """The baseline's longest spin wait per Linux seed (the threshold of
    "long" for that seed's boots), each baseline boot's longest (with its
    lock and stack), and long spin waits per period and policy."""
    reps = s.integer("sweep_reps")
    thresholds = dict.fromkeys(seeds(s), 0.0)
    baseline_longest: list[dict[str, object] | None] = []
    for run in runs(s, reps):
        label = f"e1-alone-{run_tag(s, run)}"
        lines = measured.lines(label)
        hist = spin_histogram(json_after(lines, SPIN_RESULT, label), label)
        thresholds[run.seed] = max([thresholds[run.seed], *(us for us, n in hist.items() if n)])
        baseline_longest.append(_longest(s.board, lines, label))
    progress.note(
        "longest spin wait with Linux alone: "
        + ", ".join(f"{fmt_us(us)} µs (seed {seed})" for seed, us in thresholds.items())
    )
    rows: list[dict[str, object]] = []
    for period in s.integers("periods_us"):
        work = period * s.integer("load_pct") // 100
        for policy in s.texts("policies"):
            total_long = total = 0
            long_per_rep: list[int] = []
            long_us_per_rep: list[float] = []
            longest_per_rep: list[dict[str, object] | None] = []
            preempted: dict[str, list[object]] = {
                "starts": [],
                "holding": [],
                "waiting": [],
                "starts_per_core": [],
            }
            longest = 0.0
            tail = dict.fromkeys(TAIL_US, 0)
            cell_runs = runs(s, reps)
            for run in cell_runs:
                label = f"e1-{period}us-{policy}-{run_tag(s, run)}"
                lines = measured.lines(label)
                hist = spin_histogram(json_after(lines, SPIN_RESULT, label), label)
                # Long: longer than any wait of Linux alone with this seed.
                threshold = thresholds[run.seed]
                long_per_rep.append(long_waits(hist, threshold))
                long_us_per_rep.append(round(long_spin_us(hist, threshold), 1))
                for key, n in preemptions(lines, PREEMPT_BEFORE, PREEMPT_AFTER, label).items():
                    preempted[key].append(n)
                longest_per_rep.append(_longest(s.board, lines, label))
                total_long += long_per_rep[-1]
                total += sum(hist.values())
                for t in TAIL_US:
                    tail[t] += long_waits(hist, t)
                longest = max([longest, *(us for us, n in hist.items() if n)])
            progress.note(f"{policy} at {period} µs: {total_long} long spin waits of {total}")
            rows.append(
                {
                    "period_us": period,
                    "load_us": work,
                    "policy": policy,
                    "long_spin_waits": total_long,
                    "long_spin_waits_runs": long_per_rep,
                    # Each boot's Linux seed, beside every per-boot list here.
                    "run_seeds": [run.seed for run in cell_runs],
                    # Time in those waits per repetition (bucket starts: a lower bound).
                    "long_spin_us_runs": long_us_per_rep,
                    # Per repetition: the task's jobs, and how many preempted
                    # Linux holding a lock, or spinning for one.
                    "preempted_runs": preempted,
                    # Per repetition: the longest wait, its lock, the waiter's
                    # interrupts meanwhile and its stack.
                    "longest_runs": longest_per_rep,
                    "spin_waits": total,
                    "max_spin_us": longest,
                    "runs": len(cell_runs),
                    "waits_over_us": {str(t): n for t, n in tail.items()},
                }
            )
    return thresholds, baseline_longest, rows


def e2_units(s: Scenario) -> list[Boot]:
    """E2's boots: every mode of one Linux seed and repetition back to back
    (the boots a claim pairs), at the repetition's phase."""
    reps = s.integer("reps")
    script = bench_script(s)
    out = []
    for run in runs(s, reps):
        for mode, config, lockstate, policy in e2_modes(s.texts("policies")):
            workload = (
                periodic_task(s, s.integer("bench_period_us"), s.integer("bench_work_us"), policy)
                if policy
                else None
            )
            out.append(
                Boot(
                    f"e2-{mode}-{run_tag(s, run)}",
                    boot_options(
                        s,
                        config=config,
                        timing=s.text("timing"),
                        smp=s.integer("smp"),
                        extra_bootargs=LOCKSTATE if lockstate else "",
                        workload=workload,
                        phase_us=rep_phase_us(run.rep),
                        linux_seed=run.seed,
                    ),
                    script,
                    timeout_s=BOOT_TIMEOUT_S,
                    about=f"E2 {mode}, {run_words(s, run, reps)}",
                )
            )
    return out


def e2(s: Scenario, measured: Measured, progress: Progress) -> list[dict[str, object]]:
    """Benchmark times per mode; the modes of one repetition ran back to back."""
    benches = s.texts("benches")
    times: dict[tuple[str, str], list[float]] = {}
    times_seeds: dict[tuple[str, str], list[int]] = {}
    for run in runs(s, s.integer("reps")):
        for mode, _, _, _ in e2_modes(s.texts("policies")):
            label = f"e2-{mode}-{run_tag(s, run)}"
            lines = measured.lines(label)
            for bench, pattern in (("hackbench", HACKBENCH_TIME), ("sysbench", SYSBENCH_TIME)):
                if bench in benches:
                    times.setdefault((bench, mode), []).extend(
                        bench_times(lines, pattern, label, 1)
                    )
                    times_seeds.setdefault((bench, mode), []).append(run.seed)
    rows = []
    for (bench, mode), values in times.items():
        rows.append(
            {
                "bench": bench,
                "policy": mode,
                "median_s": round(statistics.median(values), 4),
                "runs_s": values,
                # Each boot's Linux seed, beside runs_s.
                "run_seeds": times_seeds[(bench, mode)],
                "spread_s": round(max(values) - min(values), 4),
            }
        )
        progress.note(f"{bench} {mode}: median {statistics.median(values):.3f} s of {values}")
    return rows


def patch_units(s: Scenario) -> list[Boot]:
    """The patch cost's boots: without and with `tandem_lockstate=on`,
    alternating (the pairs back to back), `patch_boots` of each per Linux
    seed, each running hackbench once to warm up and then `patch_runs`
    times."""
    timing = s.text("patch_timing")
    boots = s.integer("patch_boots")
    script = patch_script(s)
    return [
        Boot(
            f"patch-{setting}-{run_tag(s, run, 'boot')}",
            boot_options(
                s,
                config="linux-only",
                timing=timing,
                smp=s.integer("patch_smp"),
                extra_bootargs=LOCKSTATE if setting == "on" else "",
                linux_seed=run.seed,
            ),
            script,
            timeout_s=BOOT_TIMEOUT_S,
            about=f"patch cost: lock state {setting}, "
            f"{run_words(s, run, boots).replace('rep', 'boot')} ({timing} timing)",
        )
        for run in runs(s, boots)
        for setting in ("off", "on")
    ]


def patch_cost(s: Scenario, measured: Measured, progress: Progress) -> dict[str, object]:
    """The lock-state patch's cost on hackbench with Linux alone."""
    per_boot = s.integer("patch_runs")
    times: dict[str, list[float]] = {"off": [], "on": []}
    # Each run's boot's Linux seed (`patch_runs` per boot), the same for
    # off and on: their boots alternate.
    run_seeds: list[int] = []
    for run in runs(s, s.integer("patch_boots")):
        run_seeds += [run.seed] * per_boot
        for setting in ("off", "on"):
            label = f"patch-{setting}-{run_tag(s, run, 'boot')}"
            times[setting] += bench_times(measured.lines(label), HACKBENCH_TIME, label, per_boot)
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    pct = round((on - off) / off * 100, 2)
    low, high = median_change_ci(times["off"], times["on"])
    progress.note(
        f"hackbench median off {off:.3f} s, on {on:.3f} s: {pct:+.2f} % "
        f"(95 % interval {low:+.2f} to {high:+.2f} %)"
    )
    return {
        "timing": s.text("patch_timing"),
        "smp": s.integer("patch_smp"),
        "runs_off_s": times["off"],
        "runs_on_s": times["on"],
        "run_seeds": run_seeds,
        "median_off_s": off,
        "median_on_s": on,
        "spread_off_pct": round((max(times["off"]) - min(times["off"])) / off * 100, 2),
        "spread_on_pct": round((max(times["on"]) - min(times["on"])) / on * 100, 2),
        "pct": pct,
        "pct_ci95": [low, high],
    }


# The per-core instruction count's file (tandem/instruments/pathcount.py),
# written into the boot's log directory and kept as raw/LABEL.pathcount.csv.
PATHCOUNT_CSV = "pathcount.csv"


def _count_paths(timing: str) -> Callable[[], tuple[str, ...]]:
    return lambda: pathcount.qemu_args(Path("{run_dir}") / PATHCOUNT_CSV, timing)


def e3_label(s: Scenario, policy: str, seed: int) -> str:
    """An E3 boot's label: its policy, and its Linux seed where the
    scenario has other seeds than 0 alone."""
    return f"e3-{policy}{seed_suffix(s, seed)}"


def e3_units(s: Scenario) -> list[Boot]:
    """E3's boots: one per Linux seed and policy (the policies of a seed
    back to back), Linux running hackbench throughout."""
    timing = s.text("sweep_timing")
    # The per-core instruction count, beside the RTOS's own clock
    # readings, needs one QEMU thread for all cores.
    counting = Timing(timing).deterministic
    return [
        Boot(
            e3_label(s, policy, seed),
            boot_options(
                s,
                config="tandem",
                timing=timing,
                smp=s.integer("sweep_smp"),
                extra_bootargs=LOCKSTATE,
                workload=periodic_task(
                    s, s.integer("bench_period_us"), s.integer("bench_work_us"), policy
                ),
                linux_seed=seed,
            ),
            dispatch_script(s),
            timeout_s=BOOT_TIMEOUT_S,
            about=f"E3 dispatch overhead, {policy}{seed_suffix(s, seed).replace('-', ' ')} "
            f"({timing} timing)",
            instrument=_count_paths(timing) if counting else None,
            keep=(PATHCOUNT_CSV,) if counting else (),
        )
        for seed in seeds(s)
        for policy in s.texts("policies")
    ]


def e3(
    s: Scenario, out: Path, measured: Measured, progress: Progress
) -> tuple[list[dict[str, object]], dict[str, dict[float, int]]]:
    """Dispatch overhead per policy, with Linux running hackbench throughout."""
    rows: list[dict[str, object]] = []
    hists: dict[str, dict[float, int]] = {}
    path_hists: dict[str, collections.Counter[int]] = {}
    counting = Timing(s.text("sweep_timing")).deterministic
    for policy in s.texts("policies"):
        # Each seed's boot, its worst cases kept per boot; the rest over all.
        lats: list[Latency] = []
        wait_maxes: list[int] = []
        handoffs = wait_sum = misses = 0
        paths: list[pathcount.DispatchPath] = []
        unmatched: int | None = None
        without_sgi: int | None = None
        for seed in seeds(s):
            label = e3_label(s, policy, seed)
            lines = measured.lines(label)
            lats.append(from_rtos(json_after(lines, DISPATCH_RESULT, label), label))
            n, most, total, missed = handoff_waits(lines, label)
            handoffs, wait_sum, misses = handoffs + n, wait_sum + total, misses + missed
            wait_maxes.append(most)
            if counting:
                got = pathcount.dispatch_paths(
                    pathcount.read_hits(measured.path(label, PATHCOUNT_CSV))
                )
                paths += got.paths
                unmatched = (unmatched or 0) + got.unmatched
                without_sgi = (without_sgi or 0) + got.without_sgi
        lat = merged(lats)
        wait_max = max(wait_maxes)
        counted: dict[str, object] | None = None
        if counting:
            counted = pathcount.summarize(paths)
            path_hists[policy] = collections.Counter(p.instructions for p in paths)
            progress.note(
                f"{policy}: {len(paths)} dispatch paths counted, worst "
                f"{fmt_us(_instructions_us(counted, 'max'))} µs in its cores' instructions"
            )
        hists[policy] = lat.histogram
        rows.append(
            {
                "policy": policy,
                "samples": lat.samples,
                "min_us": round(lat.min_us, 3),
                "avg_us": round(lat.avg_us, 3),
                "max_us": round(lat.max_us, 3),
                "slowest_us": slowest(lat.histogram, 8),
                "beyond_histogram": lat.overflow,
                "handoffs": handoffs,
                "handoff_wait_avg_us": round(wait_sum / handoffs * lat.resolution_us, 3)
                if handoffs
                else None,
                "handoff_wait_max_us": round(wait_max * lat.resolution_us, 3),
                "deadline_misses": misses,
                # Whole boot, per core's own instructions (1 ns each).
                "path_instructions": counted,
                "path_max_us": _instructions_us(counted, "max"),
                "path_min_us": _instructions_us(counted, "min"),
                "path_unmatched_requests": unmatched,
                # Remote starts whose core was already entering the RTOS
                # (no SGI, then entry): counted, not timed (pathcount.py).
                "path_remote_without_sgi": without_sgi,
                # Per boot (one per Linux seed): the RTOS path's worst and the
                # longest wait of a hand-off, with the boot's seed.
                "rep_max_us": [round(x.max_us, 3) for x in lats],
                "handoff_wait_rep_max_us": [
                    round(w * x.resolution_us, 3) for w, x in zip(wait_maxes, lats, strict=True)
                ],
                "run_seeds": seeds(s),
            }
        )
        progress.note(
            f"{policy}: {lat.samples} dispatches, RTOS path "
            f"min {fmt_us(lat.min_us)} max {fmt_us(lat.max_us)} µs; {handoffs} hand-offs "
            f"to another core, waiting up to {fmt_us(wait_max * lat.resolution_us)} µs"
        )
    if path_hists:
        with (out / "path_histograms.csv").open("w") as f:
            f.write("policy,instructions,paths\n")
            for policy, h in path_hists.items():
                for n in sorted(h):
                    f.write(f"{policy},{n},{h[n]}\n")
    return rows, hists


def _instructions_us(counted: dict[str, object] | None, field: str) -> float | None:
    """A field of all counted paths, from instructions to µs (1 ns each);
    None if nothing was counted."""
    everything = counted["all"] if counted else None
    value = everything.get(field) if isinstance(everything, dict) else None
    return None if value is None else float(value) / 1000


# The parts' boots, in the order a run measures them.
PARTS = {"e1": e1_units, "e2": e2_units, "e3": e3_units, "patch": patch_units}


def units(s: Scenario) -> list[Boot]:
    """Every boot of the scenario's parts."""
    return [boot for part in s.texts("parts") for boot in PARTS[part](s)]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    reps = s.integer("reps")
    parts = s.texts("parts")
    progress = Progress(NAME)
    thresholds: dict[int, float] = {}
    baseline_longest: list[dict[str, object] | None] = []
    sweep: list[dict[str, object]] = []
    bench: list[dict[str, object]] = []
    overhead: list[dict[str, object]] = []
    hists: dict[str, dict[float, int]] = {}
    patch: dict[str, object] | None = None
    if "e1" in parts:
        thresholds, baseline_longest, sweep = e1(s, measured, progress)
    if "e2" in parts:
        bench = e2(s, measured, progress)
    if "e3" in parts:
        overhead, hists = e3(s, out, measured, progress)
    if "patch" in parts:
        patch = patch_cost(s, measured, progress)
    with (out / "dispatch_histograms.csv").open("w") as f:
        f.write("policy,latency_us,count\n")
        for policy, h in hists.items():
            for us in sorted(h):
                f.write(f"{policy},{us},{h[us]}\n")
    med = {(r["bench"], r["policy"]): num(r, "median_s") for r in bench}
    host_pct = None
    if ("hackbench", "linux-alone") in med and ("hackbench", "linux-alone+lockstate") in med:
        off, on = med[("hackbench", "linux-alone")], med[("hackbench", "linux-alone+lockstate")]
        host_pct = round((on - off) / off * 100, 2)
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "sweep_timing": s.text("sweep_timing"),
        "sweep_smp": s.integer("sweep_smp"),
        "quick": s.quick,
        "reps": reps,
        "sweep_reps": s.integer("sweep_reps"),
        "seeds": seeds(s),
        "smp": s.integer("smp"),
        "rtos_core": s.integer("rtos_core"),
        "scenario": s.values,
        "parts": parts,
        # The longest over every seed; each seed's boots count "long"
        # against their own seed's (`thresholds`).
        "long_spin_threshold_us": max(thresholds.values()) if thresholds else None,
        "thresholds": [{"seed": seed, "us": us} for seed, us in thresholds.items()],
        # Linux alone, per boot: the longest wait, which lock, the
        # waiter's interrupts meanwhile, its stack; with each boot's seed.
        "baseline_longest": baseline_longest,
        "baseline_run_seeds": [run.seed for run in runs(s, s.integer("sweep_reps"))]
        if "e1" in parts
        else [],
        "period_sweep": sweep,
        "bench": bench,
        "overhead": overhead,
        # From the patch-cost part (its own timing mode, `lock_patch_overhead`);
        # E2's Linux-alone pair gives the same in E2's timing.
        "lock_patch_overhead_pct": None if patch is None else patch["pct"],
        "lock_patch_overhead": patch,
        "lock_patch_overhead_e2_pct": host_pct,
        # The patch cost's runs by lock state, each with its boot's Linux
        # seed (tandem/stats.by_seed pairs them by seed and run).
        "patch": []
        if patch is None
        else [
            {"lockstate": on, "runs_s": patch[key], "run_seeds": patch["run_seeds"]}
            for on, key in ((False, "runs_off_s"), (True, "runs_on_s"))
        ],
    }
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    with (out / "summary.csv.tmp").open("w") as f:
        f.write("part,period_us,load_us,policy,bench,value,unit\n")
        for r in sweep:
            f.write(
                f"E1,{r['period_us']},{r['load_us']},{r['policy']},,"
                f"{r['long_spin_waits']},long spin waits\n"
            )
        for r in bench:
            f.write(f"E2,,,{r['policy']},{r['bench']},{r['median_s']},median s\n")
        for r in overhead:
            f.write(f"E3,,,{r['policy']},,{r['max_us']},max dispatch us (RTOS clock)\n")
            if r.get("path_max_us") is not None:
                f.write(
                    f"E3,,,{r['policy']},,{r['path_max_us']},max dispatch us (own instructions)\n"
                )
    (out / "summary.csv.tmp").replace(out / "summary.csv")
    return summary
