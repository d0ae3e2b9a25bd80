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
import csv
import json
import re
import statistics
from pathlib import Path
from types import ModuleType

from tandem.errors import TandemError
from tandem.exp.common import (
    QEMU_CAVEATS,
    Boot,
    Progress,
    boot_lines,
    boot_options,
    fmt_us,
    median_change_ci,
    num,
    paired_gains,
    paired_words,
    read_summary,
    rep_phase_us,
    summary_list,
)
from tandem.exp.scenario import Key, Scenario
from tandem.instruments import pathcount
from tandem.instruments.measure import from_rtos
from tandem.platform.boot import DETERMINISTIC, TIMINGS, BootOptions
from tandem.platform.configs import Workload
from tandem.results import write_atomic

NAME = "lhp"
POLICIES = ("static", "migrate")
LOCKSTATE = "tandem_lockstate=on"
SPINSTAT = "tandem_spinstat=on"
BENCHES = ("hackbench", "sysbench")

PARTS = ("e1", "e2", "e3", "patch")

SCHEMA = {
    "parts": Key(
        list, "which parts to run (e.g. only e2 on a quiet host)", item=str, choices=PARTS
    ),
    "smp": Key(int, "E2: cores (keep <= host cores in host timing)", minimum=2, maximum=8),
    "sweep_timing": Key(str, "E1 and E3: timing mode", choices=TIMINGS),
    "sweep_smp": Key(int, "E1 and E3: cores", minimum=2, maximum=8),
    "sweep_reps": Key(int, "E1: repetitions", minimum=1, maximum=100),
    "sweep_phase_us": Key(
        int,
        "E1: repetition r first sleeps (r - 1) times this long, so that repetitions "
        "start at different phases of the RTOS period (virtual timing repeats a boot exactly)",
        minimum=0,
        maximum=1_000_000,
    ),
    "rtos_core": Key(int, "core of the RTOS's cyclic handler", minimum=0, maximum=7),
    "periods_us": Key(list, "E1: RTOS periods", item=int, minimum=100, maximum=1_000_000),
    "load_pct": Key(int, "E1: RTOS load, % of each period", minimum=1, maximum=90),
    "policies": Key(list, "dispatch policies compared", item=str, choices=POLICIES),
    "hackbench_groups": Key(int, "hackbench -g", minimum=1, maximum=64),
    "hackbench_loops": Key(int, "hackbench -l", minimum=1, maximum=100_000),
    "bench_period_us": Key(int, "E2/E3: RTOS period", minimum=100, maximum=1_000_000),
    "bench_work_us": Key(int, "E2/E3: RTOS work per period", minimum=1, maximum=999_999),
    "benches": Key(list, "E2: benchmarks", item=str, choices=BENCHES),
    "sysbench_threads": Key(int, "sysbench mutex --threads", minimum=1, maximum=64),
    "sysbench_locks": Key(
        int, "sysbench mutex --mutex-locks per thread", minimum=100, maximum=10_000_000
    ),
    "overhead_seconds": Key(int, "E3: seconds measured per policy", minimum=1, maximum=600),
    "patch_timing": Key(str, "lock-state patch cost: timing mode", choices=TIMINGS),
    "patch_smp": Key(int, "lock-state patch cost: cores", minimum=1, maximum=8),
    "patch_boots": Key(
        int,
        "lock-state patch cost: boots per setting (off and on alternate)",
        minimum=1,
        maximum=100,
    ),
    "patch_runs": Key(
        int,
        "lock-state patch cost: hackbench runs per boot (after one warm-up)",
        minimum=1,
        maximum=100,
    ),
}

HACKBENCH_TIME = re.compile(r"^Time: ([0-9.]+)$")
SYSBENCH_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s$")
SPIN_RESULT = "@@SPIN@@"
DISPATCH_RESULT = "@@DISPATCH@@"
HANDOFF_RESULT = "@@HANDOFF@@"
CORES_SYSFS = "/sys/bus/platform/devices/tandem/core[0-9]*"

# Paper 000 (Cortex-A9 MPCore, real hardware): the worst-case dispatch
# overhead, and what the acceptance asks of us.
PAPER_OVERHEAD_US = {"static": 14, "migrate": 21}
OVERHEAD_GROWTH_LIMIT_US = 10
# What the lock-state patch may cost on hackbench (the acceptance).
PATCH_COST_LIMIT_PCT = 2


def _hackbench(s: Scenario) -> str:
    return f"hackbench -g {s.integer('hackbench_groups')} -l {s.integer('hackbench_loops')}"


def _sysbench(s: Scenario) -> str:
    return (
        f"sysbench mutex --threads={s.integer('sysbench_threads')} "
        f"--mutex-locks={s.integer('sysbench_locks')} --mutex-num=64 run"
    )


def _workload(s: Scenario, period_us: int, work_us: int, policy: str) -> Workload:
    return Workload(
        core=s.integer("rtos_core"), period_us=period_us, work_us=work_us, dispatch=policy
    )


def _boot(
    label: str, options: BootOptions, script: str, raw: Path, progress: Progress
) -> list[str]:
    return boot_lines(Boot(label, options, script, timeout_s=1800), raw, progress)[0]


def _after(lines: list[str], marker: str, label: str) -> dict[str, object]:
    for i, line in enumerate(lines):
        if line.strip() == marker and i + 1 < len(lines):
            try:
                obj = json.loads(lines[i + 1])
            except json.JSONDecodeError as e:
                raise TandemError(f"{label}: bad {marker} result: {e}") from None
            if isinstance(obj, dict):
                return obj
    raise TandemError(f"{label}: no {marker} result")


def slowest(histogram: dict[float, int], n: int) -> list[float]:
    """The `n` largest samples of a histogram (bucket starts), largest first."""
    out: list[float] = []
    for us in sorted(histogram, reverse=True):
        out += [us] * min(histogram[us], n - len(out))
        if len(out) == n:
            break
    return out


def handoff_waits(lines: list[str], label: str) -> tuple[int, int, int, int]:
    """The RTOS's cross-core hand-offs of its periodic task since boot, from
    the core records: (count, longest wait in ticks, sum of waits in ticks,
    deadline misses), over all cores."""
    for line in lines:
        if line.startswith(HANDOFF_RESULT + " "):
            try:
                values = [int(x) for x in line.split()[1:]]
            except ValueError:
                break
            if not values or len(values) % 4:
                break
            cores = [values[i : i + 4] for i in range(0, len(values), 4)]
            return (
                sum(c[0] for c in cores),
                max(c[1] for c in cores),
                sum(c[2] for c in cores),
                sum(c[3] for c in cores),
            )
    raise TandemError(f"{label}: no (or a malformed) {HANDOFF_RESULT} line")


def spin_histogram(obj: dict[str, object], label: str) -> dict[float, int]:
    """tandem-spin's report: bucket start (µs) -> contended acquires."""
    raw = obj.get("histogram")
    if not isinstance(raw, list):
        raise TandemError(f"{label}: spin report without histogram")
    out: dict[float, int] = {}
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and all(isinstance(x, int | float) for x in item)
        ):
            raise TandemError(f"{label}: bad spin histogram entry {item!r}")
        out[float(item[0])] = int(item[1])
    return out


def long_waits(hist: dict[float, int], threshold_us: float) -> int:
    """Spin waits in buckets above the longest Linux alone showed."""
    return sum(n for us, n in hist.items() if us > threshold_us)


def _times(lines: list[str], pattern: re.Pattern[str], label: str, want: int) -> list[float]:
    got = [float(m.group(1)) for line in lines if (m := pattern.match(line.strip()))]
    if len(got) != want:
        raise TandemError(f"{label}: expected {want} benchmark times, found {len(got)}")
    return got


def _spin_script(s: Scenario, rep: int) -> str:
    phase_s = (rep - 1) * s.integer("sweep_phase_us") / 1e6
    return (
        (f"sleep {phase_s:.6f}\n" if phase_s else "") + "tandem-spin save /tmp/spin.a || exit 1\n"
        f"{_hackbench(s)} >/dev/null || exit 1\n"
        "tandem-spin save /tmp/spin.b || exit 1\n"
        f"echo {SPIN_RESULT}\n"
        "tandem-spin report /tmp/spin.a /tmp/spin.b || exit 1\n"
    )


# Spin-wait lengths (µs) above which E1 also counts, to show the tail's shape.
TAIL_US = (100, 300, 1000, 3000)


def e1(s: Scenario, out: Path, progress: Progress) -> tuple[float, list[dict[str, object]]]:
    """The baseline's longest spin wait, and long spin waits per period and policy."""
    timing = s.text("sweep_timing")
    smp = s.integer("sweep_smp")
    reps = s.integer("sweep_reps")
    baseline_max = 0.0
    for rep in range(1, reps + 1):
        progress.next(f"E1 baseline: Linux alone, rep {rep}/{reps}")
        label = f"e1-alone-rep{rep}"
        lines = _boot(
            label,
            boot_options(
                s,
                config="linux-only",
                timing=timing,
                smp=smp,
                extra_bootargs=f"{LOCKSTATE} {SPINSTAT}",
            ),
            _spin_script(s, rep),
            out / "raw",
            progress,
        )
        hist = spin_histogram(_after(lines, SPIN_RESULT, label), label)
        baseline_max = max([baseline_max, *(us for us, n in hist.items() if n)])
    progress.note(f"longest spin wait with Linux alone: {fmt_us(baseline_max)} µs")
    rows: list[dict[str, object]] = []
    for period in s.integers("periods_us"):
        work = period * s.integer("load_pct") // 100
        for policy in s.texts("policies"):
            total_long = total = 0
            long_per_rep: list[int] = []
            longest = 0.0
            tail = dict.fromkeys(TAIL_US, 0)
            for rep in range(1, reps + 1):
                progress.next(f"E1 period {period} µs, load {work} µs, {policy}, rep {rep}/{reps}")
                label = f"e1-{period}us-{policy}-rep{rep}"
                lines = _boot(
                    label,
                    boot_options(
                        s,
                        config="tandem",
                        timing=timing,
                        smp=smp,
                        extra_bootargs=f"{LOCKSTATE} {SPINSTAT}",
                        workload=_workload(s, period, work, policy),
                    ),
                    _spin_script(s, rep),
                    out / "raw",
                    progress,
                )
                hist = spin_histogram(_after(lines, SPIN_RESULT, label), label)
                long_per_rep.append(long_waits(hist, baseline_max))
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
                    "spin_waits": total,
                    "max_spin_us": longest,
                    "runs": reps,
                    "waits_over_us": {str(t): n for t, n in tail.items()},
                }
            )
    return baseline_max, rows


# E2's modes: (name, platform config, lock state on, dispatch policy or None)
E2_MODES = (
    ("linux-alone", "linux-only", False, None),
    ("linux-alone+lockstate", "linux-only", True, None),
    ("static", "tandem", True, "static"),
    ("migrate", "tandem", True, "migrate"),
)


def e2(s: Scenario, out: Path, progress: Progress) -> list[dict[str, object]]:
    """Benchmark times per mode; the modes of one repetition run back to back."""
    timing = s.text("timing")
    reps = s.integer("reps")
    benches = s.texts("benches")
    runs: dict[tuple[str, str], list[float]] = {}
    script = ""
    if "hackbench" in benches:
        script += f"{_hackbench(s)} || exit 1\n"
    if "sysbench" in benches:
        script += f"{_sysbench(s)} || exit 1\n"
    for rep in range(1, reps + 1):
        for mode, config, lockstate, policy in E2_MODES:
            if policy is not None and policy not in s.texts("policies"):
                continue
            progress.next(f"E2 {mode}, rep {rep}/{reps}")
            label = f"e2-{mode}-rep{rep}"
            workload = (
                _workload(s, s.integer("bench_period_us"), s.integer("bench_work_us"), policy)
                if policy
                else None
            )
            lines = _boot(
                label,
                boot_options(
                    s,
                    config=config,
                    timing=timing,
                    smp=s.integer("smp"),
                    extra_bootargs=LOCKSTATE if lockstate else "",
                    workload=workload,
                    phase_us=rep_phase_us(rep),
                ),
                script,
                out / "raw",
                progress,
            )
            if "hackbench" in benches:
                runs.setdefault(("hackbench", mode), []).extend(
                    _times(lines, HACKBENCH_TIME, label, 1)
                )
            if "sysbench" in benches:
                runs.setdefault(("sysbench", mode), []).extend(
                    _times(lines, SYSBENCH_TIME, label, 1)
                )
    rows = []
    for (bench, mode), values in runs.items():
        rows.append(
            {
                "bench": bench,
                "policy": mode,
                "median_s": round(statistics.median(values), 4),
                "runs_s": values,
                "spread_s": round(max(values) - min(values), 4),
            }
        )
        progress.note(f"{bench} {mode}: median {statistics.median(values):.3f} s of {values}")
    return rows


def patch_cost(s: Scenario, out: Path, progress: Progress) -> dict[str, object]:
    """The lock-state patch's cost on hackbench with Linux alone: boots
    without and with `tandem_lockstate=on` alternate, each running hackbench
    once to warm up and then `patch_runs` times."""
    timing = s.text("patch_timing")
    boots = s.integer("patch_boots")
    runs = s.integer("patch_runs")
    script = f"{_hackbench(s)} >/dev/null || exit 1\n" + (
        f"for i in $(seq {runs}); do {_hackbench(s)} || exit 1; done\n"
    )
    times: dict[str, list[float]] = {"off": [], "on": []}
    for boot in range(1, boots + 1):
        for setting in ("off", "on"):
            progress.next(
                f"patch cost: lock state {setting}, boot {boot}/{boots} ({timing} timing)"
            )
            label = f"patch-{setting}-boot{boot}"
            lines = _boot(
                label,
                boot_options(
                    s,
                    config="linux-only",
                    timing=timing,
                    smp=s.integer("patch_smp"),
                    extra_bootargs=LOCKSTATE if setting == "on" else "",
                ),
                script,
                out / "raw",
                progress,
            )
            times[setting] += _times(lines, HACKBENCH_TIME, label, runs)
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    pct = round((on - off) / off * 100, 2)
    low, high = median_change_ci(times["off"], times["on"])
    progress.note(
        f"hackbench median off {off:.3f} s, on {on:.3f} s: {pct:+.2f} % "
        f"(95 % interval {low:+.2f} to {high:+.2f} %)"
    )
    return {
        "timing": timing,
        "smp": s.integer("patch_smp"),
        "runs_off_s": times["off"],
        "runs_on_s": times["on"],
        "median_off_s": off,
        "median_on_s": on,
        "spread_off_pct": round((max(times["off"]) - min(times["off"])) / off * 100, 2),
        "spread_on_pct": round((max(times["on"]) - min(times["on"])) / on * 100, 2),
        "pct": pct,
        "pct_ci95": [low, high],
    }


def e3(
    s: Scenario, out: Path, progress: Progress
) -> tuple[list[dict[str, object]], dict[str, dict[float, int]]]:
    """Dispatch overhead per policy, with Linux running hackbench throughout."""
    rows: list[dict[str, object]] = []
    hists: dict[str, dict[float, int]] = {}
    path_hists: dict[str, collections.Counter[int]] = {}
    seconds = s.integer("overhead_seconds")
    for policy in s.texts("policies"):
        progress.next(f"E3 dispatch overhead, {policy} ({s.text('sweep_timing')} timing)")
        label = f"e3-{policy}"
        script = (
            f"( while :; do {_hackbench(s)} >/dev/null; done ) &\n"
            "sleep 0.2\n"
            "tandem-lat -d save /tmp/d.a || exit 1\n"
            f"sleep {seconds}\n"
            "tandem-lat -d save /tmp/d.b || exit 1\n"
            "kill %1\n"
            f"echo {DISPATCH_RESULT}\n"
            "tandem-lat -d report /tmp/d.a /tmp/d.b || exit 1\n"
            # The RTOS refreshes the core records once a second.
            "sleep 1.2\n"
            f"echo {HANDOFF_RESULT} $(for c in {CORES_SYSFS}; do cat $c/dispatch_handoffs "
            "$c/dispatch_handoff_wait_max_ticks $c/dispatch_handoff_wait_sum_ticks "
            "$c/deadline_misses; done)\n"
        )
        # The per-core instruction count (tandem/pathcount.py), beside the
        # RTOS's own clock readings; it needs one QEMU thread for all cores.
        count_csv = out / "raw" / f"{label}.pathcount.csv"
        count_csv.parent.mkdir(parents=True, exist_ok=True)
        timing = s.text("sweep_timing")
        counting = timing in DETERMINISTIC
        lines = _boot(
            label,
            boot_options(
                s,
                config="tandem",
                timing=timing,
                smp=s.integer("sweep_smp"),
                extra_bootargs=LOCKSTATE,
                extra_qemu_args=pathcount.qemu_args(count_csv, timing) if counting else (),
                workload=_workload(
                    s, s.integer("bench_period_us"), s.integer("bench_work_us"), policy
                ),
            ),
            script,
            out / "raw",
            progress,
        )
        lat = from_rtos(_after(lines, DISPATCH_RESULT, label), label)
        handoffs, wait_max, wait_sum, misses = handoff_waits(lines, label)
        counted: dict[str, object] | None = None
        unmatched: int | None = None
        if counting:
            paths, unmatched = pathcount.dispatch_paths(pathcount.read_hits(count_csv))
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


def run(s: Scenario, out: Path) -> dict[str, object]:
    reps = s.integer("reps")
    parts = s.texts("parts")
    steps = {
        "e1": s.integer("sweep_reps")
        * (1 + len(s.integers("periods_us")) * len(s.texts("policies"))),
        "e2": reps * (2 + len(s.texts("policies"))),
        "e3": len(s.texts("policies")),
        "patch": 2 * s.integer("patch_boots"),
    }
    progress = Progress(NAME, sum(steps[p] for p in parts))
    baseline_max: float | None = None
    sweep: list[dict[str, object]] = []
    bench: list[dict[str, object]] = []
    overhead: list[dict[str, object]] = []
    hists: dict[str, dict[float, int]] = {}
    patch: dict[str, object] | None = None
    if "e1" in parts:
        baseline_max, sweep = e1(s, out, progress)
    if "e2" in parts:
        bench = e2(s, out, progress)
    if "e3" in parts:
        overhead, hists = e3(s, out, progress)
    if "patch" in parts:
        patch = patch_cost(s, out, progress)
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
        "smp": s.integer("smp"),
        "rtos_core": s.integer("rtos_core"),
        "scenario": s.values,
        "parts": parts,
        "long_spin_threshold_us": baseline_max,
        "period_sweep": sweep,
        "bench": bench,
        "overhead": overhead,
        # From the patch-cost part (its own timing mode, `lock_patch_overhead`);
        # E2's Linux-alone pair gives the same in E2's timing.
        "lock_patch_overhead_pct": None if patch is None else patch["pct"],
        "lock_patch_overhead": patch,
        "lock_patch_overhead_e2_pct": host_pct,
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


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Fig. 4-6 of the paper from our data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timing = summary["timing"]
    sweep = summary_list(summary, "period_sweep")
    bench = summary_list(summary, "bench")
    if sweep:
        _plot_e1(plt, run_dir, sweep, str(summary["sweep_timing"]))
    if bench:
        _plot_e2(plt, run_dir, bench, str(timing))
    overhead = summary_list(summary, "overhead")
    if overhead:
        split = all("handoffs" in r for r in overhead)
        _plot_e3(plt, run_dir, str(summary["sweep_timing"]), split)


def _plot_e1(plt: ModuleType, run_dir: Path, sweep: list[dict[str, object]], timing: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for policy in POLICIES:
        pts = sorted(
            (num(r, "period_us"), num(r, "long_spin_waits")) for r in sweep if r["policy"] == policy
        )
        if pts:
            ax.plot([p[0] / 1000 for p in pts], [p[1] for p in pts], marker="o", label=policy)
    ax.set_xscale("log")
    ax.set_xlabel("RTOS period (ms), load 50 %")
    ax.set_ylabel("long spin waits (during hackbench)")
    ax.set_title(f"lhp E1: long spin waits vs RTOS period ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e1_long_spin_waits.png", dpi=110)
    plt.close(fig)


def _plot_e2(plt: ModuleType, run_dir: Path, bench: list[dict[str, object]], timing: str) -> None:
    names = sorted({str(r["bench"]) for r in bench})
    fig, axes = plt.subplots(
        1, max(1, len(names)), figsize=(5 * max(1, len(names)), 4), squeeze=False
    )
    for ax, name in zip(axes[0], names, strict=False):
        rows = [r for r in bench if r["bench"] == name]
        labels = [str(r["policy"]) for r in rows]
        data = [[float(x) for x in r["runs_s"]] for r in rows]  # type: ignore[attr-defined]
        ax.boxplot(data, tick_labels=labels)
        ax.set_ylabel("seconds")
        ax.set_title(name)
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"lhp E2: benchmark times ({timing} timing, QEMU)")
    fig.tight_layout()
    fig.savefig(run_dir / "e2_bench.png", dpi=110)
    plt.close(fig)


def _policy_histograms(path: Path, value: str, count: str) -> dict[str, dict[float, int]]:
    """A CSV of `policy,<value>,<count>` rows as policy -> value -> count."""
    hist: dict[str, dict[float, int]] = {}
    with path.open() as f:
        for rec in csv.DictReader(f):
            hist.setdefault(rec["policy"], {})[float(rec[value])] = int(rec[count])
    return hist


def _plot_e3(plt: ModuleType, run_dir: Path, timing: str, split: bool) -> None:
    counted = run_dir / "path_histograms.csv"
    if counted.exists():
        _plot_e3_counts(plt, run_dir, counted, timing)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    hist = _policy_histograms(run_dir / "dispatch_histograms.csv", "latency_us", "count")
    for policy, h in hist.items():
        xs = sorted(h)
        ax.step(xs, [h[x] for x in xs], where="post", label=policy)
    ax.set_yscale("log")
    ax.set_xlabel(
        "activation request to the task's first instruction"
        + (", less the hand-off wait (µs)" if split else " (µs)")
    )
    ax.set_ylabel("dispatches")
    ax.set_title(f"lhp E3: RTOS dispatch overhead ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e3_overhead.png", dpi=110)
    plt.close(fig)


def _plot_e3_counts(plt: ModuleType, run_dir: Path, counted: Path, timing: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    hist = _policy_histograms(counted, "instructions", "paths")
    for policy, h in hist.items():
        xs = sorted(h)
        ax.plot([x / 1000 for x in xs], [h[x] for x in xs], "o", ms=3, label=policy)
    ax.set_yscale("log")
    ax.set_xlabel("dispatch path in its cores' own instructions (µs at 1 ns each)")
    ax.set_ylabel("dispatches")
    ax.set_title(f"lhp E3: RTOS dispatch path, per-core counts ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e3_path_counts.png", dpi=110)
    plt.close(fig)


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, NAME)
    timing = str(summary["timing"])
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
        f"repetition(s){', quick settings' if summary['quick'] else ''}. "
        f"Reproduce: `{command}`.",
    ]
    parts = summary.get("parts", list(PARTS))
    assert isinstance(parts, list)
    if set(parts) != set(PARTS):
        skipped = [p for p in PARTS if p not in parts]
        out += ["", f"Parts run: {', '.join(parts)}; not run here: {', '.join(skipped)}."]
    out += [
        "",
        "## E1: long spin waits against the RTOS period",
        "",
        f"Long: longer than the longest spin wait with Linux alone in this run "
        f"({fmt_us(summary['long_spin_threshold_us'])} µs, 1.024 µs buckets), counted "
        "over hackbench runs (sum over repetitions; repetition r starts "
        f"(r - 1) times {summary['scenario'].get('sweep_phase_us', 0)} µs later, "  # type: ignore[attr-defined]
        "at another phase of the RTOS period).",
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
    out += ["", "Migrate against static:", ""]
    for period in sorted({int(num(r, "period_us")) for r in sweep}, reverse=True):
        st = [r for r in sweep if r["period_us"] == period and r["policy"] == "static"]
        mi = [r for r in sweep if r["period_us"] == period and r["policy"] == "migrate"]
        if st and mi:
            a, b = num(st[0], "long_spin_waits"), num(mi[0], "long_spin_waits")
            if not a:
                cut = "no long waits under static"
            elif b <= a:
                cut = f"{(a - b) / a * 100:.0f} % fewer with migrate"
            else:
                cut = f"{(b - a) / a * 100:.0f} % MORE with migrate"
            pairs = ""
            runs_a, runs_b = st[0].get("long_spin_waits_runs"), mi[0].get("long_spin_waits_runs")
            if isinstance(runs_a, list) and isinstance(runs_b, list) and len(runs_a) > 1:
                fewer = sum(y < x for x, y in zip(runs_a, runs_b, strict=False))
                pairs = (
                    f"; migrate had fewer in {fewer} of {len(runs_a)} repetitions "
                    f"(same phase, paired)"
                )
            out.append(f"- {period} µs: static {a:.0f}, migrate {b:.0f}: {cut}{pairs}")
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
    for name in sorted({str(r["bench"]) for r in bench}):
        st = [r for r in bench if r["bench"] == name and r["policy"] == "static"]
        mi = [r for r in bench if r["bench"] == name and r["policy"] == "migrate"]
        if st and mi:
            a, b = num(st[0], "median_s"), num(mi[0], "median_s")
            spread = max(num(st[0], "spread_s"), num(mi[0], "spread_s"))
            beyond = "beyond" if a - b > spread else "within"
            gains = paired_gains(st[0], mi[0])
            out.append(
                f"- {name}: static {a:.3f} s, migrate {b:.3f} s: {(a - b) / a * 100:+.1f} % "
                f"for migrate, {beyond} the run-to-run spread ({spread:.3f} s); migrate "
                f"{paired_words(gains)}"
            )
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
        if patch["timing"] in DETERMINISTIC:
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
        QEMU_CAVEATS[str(summary["sweep_timing"])],
        "",
        "In virtual timing QEMU itself preempts lock holders: a vCPU holding a lock waits "
        "for its turn while the others spin, so Linux alone already shows spin waits of "
        "hundreds of µs, and the paper's threshold (the longest wait with Linux alone) is "
        "that long. RTOS-caused waits only stand out when the RTOS's work is longer (the "
        "longer periods at 50 % load).",
        "",
        QEMU_CAVEATS[timing],
        "",
        "With migrate the handler on one core reads another core's lock state and sends it "
        "an SGI; in virtual timing that core may run a whole turn (hundreds of µs) before it "
        "takes the interrupt, so the state the decision used is stale by then, and the cross-"
        "core dispatch itself waits for the turn (E3's hand-off wait). On hardware the SGI "
        "arrives within a microsecond.",
        "",
        "E2's host-timing numbers are only as good as the host was quiet: with other work on "
        "the host, the spread between repetitions exceeds any difference between modes.",
        "",
        "What would show the paper's effect cleanly: host timing on a host with a free "
        "core for every vCPU (no host-level lock-holder preemption), or hardware.",
        "",
        "Files: `summary.json`, `summary.csv`, `dispatch_histograms.csv`, "
        "`path_histograms.csv` (E3's per-core counts), `raw/` (every boot's script and "
        "console log, and E3's plugin hits), `e1_long_spin_waits.png`, `e2_bench.png`, "
        "`e3_path_counts.png`, `e3_overhead.png`.",
    ]
    return "\n".join(_without_sections(out, [p for p in PARTS if p not in parts])) + "\n"


def path_lines(overhead: list[dict[str, object]]) -> list[str]:
    """E3's per-core instruction counts (tandem/pathcount.py) and the verdict
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
