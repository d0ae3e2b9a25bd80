"""The `fidelity` experiment's report.md: every boot's probes, what the
counter rule and the memory model change, the checks, and how to read
them. Runs of `tandem bench fidelity` from before it was an experiment
(issue 48) are redrawn as they were written."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tandem.exp.common import read_summary, run_id, summary_list
from tandem.exp.fidelity.rows import Row, is_comparison, user_cpu, wall
from tandem.exp.fidelity.spec import COUNTER_FREE, MODEL_OFF, NAME

# Where the probes are described, and the raw data, in a run of the bench
# before issue 48 (its summary names it "benchmark") and in an experiment's.
BENCH_SOURCE = "harness/tandem/instruments/fidelity.py"
SOURCE = "harness/tandem/exp/fidelity/"
BENCH_RAW = "`raw/` (each boot's script and console)"
RAW = "`raw.tar.xz` (each boot's script and console, and the host's clocks at its marks)"


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    bench = "experiment" not in summary
    lines = [
        "# Timing fidelity: what each timing mode does between cores",
        "",
        f"Run `{run_id(run_dir)}`, QEMU (not hardware), {summary['smp']} cores, configuration "
        f"`{summary['config']}`, {summary['rounds']} rounds per probe. Reproduce: "
        f"`{command}`.",
        "",
        f"Probes (`{BENCH_SOURCE if bench else SOURCE}`): (a) overlap: CPU 2 times a "
        "loop of known length while CPU 1 spins, error = counter time minus instructions; "
        "(b) Linux stamps the counter and rings the RPC doorbell (an SGI) on CPU 0, the "
        "RTOS's server stamps on its core, with Linux idle or running hackbench on every "
        "core; "
        "(c) CPU 1 stores a stamp CPU 2 spins on (early: CPU 2's clock behind the stamp; "
        "rounds in which either CPU stopped running, as when the RTOS takes its turn on "
        "the core, are counted after the figures and left out of them); "
        '(e) host wall time. "Server first": calls the RTOS server found before their '
        "doorbell rang (it looks again after each call), which give no (b) sample.",
        "",
        "| timing | Q ns | (a) overlap error median ns | (b) idle min / median / max ns | "
        "(b) busy min / median / max ns | (b) server first | (c) hand-off min / median / max "
        "ns | (c) early | boot s | hackbench s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    # Runs before the counter rule and the model (no `causal` in their
    # rows) have the first table; before the CPU time was read, no column
    # of it.
    extended = any("causal" in r for r in rows)
    with_cpu = any("boot_user_s" in r for r in rows)
    if with_cpu:
        lines[-4] = lines[-4].replace(
            "(e) host wall time.", "(e) host wall time and QEMU's user CPU time."
        )
        lines[-2:] = [
            "| timing | Q ns | counter | memory model | (a) overlap error median ns | "
            "(b) idle min / median / max ns | (b) busy min / median / max ns | "
            "(b) server first | (c) hand-off min / median / max ns | (c) early | boot s | "
            "hackbench s | hackbench guest s | boot + hackbench user CPU s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    elif extended:
        lines[-2:] = [
            "| timing | Q ns | counter | memory model | (a) overlap error median ns | "
            "(b) idle min / median / max ns | (b) busy min / median / max ns | "
            "(b) server first | (c) hand-off min / median / max ns | (c) early | boot s | "
            "hackbench s | hackbench guest s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]

    def interrupted(r: Row) -> str:
        # Runs from before tandem-probe flagged interrupted rounds lack it.
        n = r.get("handoff_interrupted")
        return f" ({n} interrupted)" if n else ""

    def mmm(d: object) -> str:
        assert isinstance(d, dict)
        if d["max_ns"] is None:
            return "-"
        return f"{d['min_ns']} / {d['median_ns']:g} / {d['max_ns']}"

    for r in rows:
        q = r["quantum_ns"] or "-"
        rep = f" (rep {r['rep']})" if r["rep"] != 1 else ""
        if extended:
            lines.append(
                f"| {r['timing']}{rep} | {q} | {r.get('causal') or '-'} | "
                f"{r.get('memmodel') or '-'} | {r['overlap_median_error_ns']:g} | "
                f"{mmm(r['notify_idle'])} | {mmm(r['notify_busy'])} | "
                f"{r['notify_server_first']} | {mmm(r['handoff'])}{interrupted(r)} | "
                f"{r['handoff_early']} | {r['boot_s']} | {r['hackbench_s']} | "
                f"{r.get('hackbench_guest_s') or '-'} |"
            )
            if with_cpu:
                cpu = user_cpu(r)
                lines[-1] += f" {'-' if cpu is None else f'{cpu:.2f}'} |"
            continue
        lines.append(
            f"| {r['timing']}{rep} | {q} | {r['overlap_median_error_ns']:g} | "
            f"{mmm(r['notify_idle'])} | {mmm(r['notify_busy'])} | "
            f"{r['notify_server_first']} | {mmm(r['handoff'])}{interrupted(r)} | "
            f"{r['handoff_early']} | "
            f"{r['boot_s']} | {r['hackbench_s']} |"
        )
    jobs = summary.get("jobs", 1)
    if isinstance(jobs, int) and jobs > 1:
        lines += [
            "",
            f"The boots ran {jobs} at a time (`--jobs {jobs}`): the samples are the same as "
            "one at a time, the host seconds are not, so (e) is not judged "
            "(`--jobs 1` measures it).",
        ]
        if with_cpu:
            lines[-1] = (
                f"The boots ran {jobs} at a time (`--jobs {jobs}`): the samples are the same "
                "as one at a time, the host's wall seconds are not, so (e) in wall time is "
                "not judged (`--jobs 1` measures it); (e) in CPU time is, with boots side by "
                "side sharing the host's caches."
            )
    hosts = summary.get("hosts", 1)
    if isinstance(hosts, int) and hosts > 1:
        lines += [
            "",
            f"The boots ran on {hosts} hosts (`--shard`, `exp merge`): the samples are the "
            "same as on one, the host's seconds are not comparable, so (e) is not judged.",
        ]
    lines += comparison_lines(rows)
    lines += ["", "## Checks", ""]
    for what, met in summary["checks"]:  # type: ignore[attr-defined]
        lines.append(f"- {what}: {'met' if met else 'NOT met'}")
    lines += [
        "",
        "## Reading it",
        "",
        "In virtual timing one clock counts every core's instructions and the cores take "
        "turns: the overlap loop is timed with the spinning core's turns in it, and an "
        "interrupt for a core waits for that core's turn. In per-core timing each core "
        "has its own clock; a halted core woken by another's interrupt wakes at the "
        "sender's clock, so the idle-receiver path does not depend on Q, while a busy "
        "receiver that is ahead takes it up to Q late. QEMU models no caches, no memory "
        "bus and no GIC latency, so these are instruction paths, not hardware times.",
        "",
        "Files: `summary.json`, `samples.csv` (every sample), `fidelity.png` ((b) "
        f"against Q), {BENCH_RAW if bench else RAW}.",
        "",
    ]
    return "\n".join(lines)


def comparison_lines(rows: Sequence[Row]) -> list[str]:
    """What the counter's rule and the memory model change, against the
    same quantum's boot without them (nothing for a run without either)."""
    main = [
        r
        for r in rows
        if r["timing"] == "percore" and r["rep"] == 1 and not is_comparison(r) and "causal" in r
    ]
    out: list[str] = []
    for r in rows:
        # One paragraph per comparison: the reps of the model's cost pairs
        # are in (e).
        if not is_comparison(r) or r["rep"] != 1:
            continue
        ref = next((m for m in main if m["quantum_ns"] == r["quantum_ns"]), None)
        if ref is None:
            continue
        if r["comparison"] == COUNTER_FREE:
            # The counter-free boot runs without the model: its reference is
            # the boot that differs from it only in the counter rule.
            ref = next(
                (
                    m
                    for m in rows
                    if m.get("comparison") == MODEL_OFF
                    and m["quantum_ns"] == r["quantum_ns"]
                    and m["rep"] == r["rep"]
                ),
                ref,
            )

        def d(row: Row, probe: str, key: str) -> str:
            v = row[probe]
            assert isinstance(v, dict)
            return "-" if v[key] is None else f"{v[key]:g}"

        what = r["comparison"]
        name = (
            f"the counter rule `{ref['causal']}`"
            if what == COUNTER_FREE
            else f"the memory model `{ref['memmodel']}`"
        )
        guest_with, guest_without = ref.get("hackbench_guest_s"), r.get("hackbench_guest_s")
        host_with, host_without = wall(ref), wall(r)
        # No host times: a replayed boot (0 s).
        ratio = f" ({host_with / host_without:.2f}x)" if host_without else ""
        out += [
            "",
            f"**What {name} changes** (Q = {r['quantum_ns']} ns, against the same boot "
            f"{'with the counter free' if what == COUNTER_FREE else 'without the model'}): "
            f"(a) overlap error median {ref['overlap_median_error_ns']:g} against "
            f"{r['overlap_median_error_ns']:g} ns; (b) busy median / worst "
            f"{d(ref, 'notify_busy', 'median_ns')} / {d(ref, 'notify_busy', 'max_ns')} against "
            f"{d(r, 'notify_busy', 'median_ns')} / {d(r, 'notify_busy', 'max_ns')} ns; "
            f"(c) hand-off median / worst {d(ref, 'handoff', 'median_ns')} / "
            f"{d(ref, 'handoff', 'max_ns')} against {d(r, 'handoff', 'median_ns')} / "
            f"{d(r, 'handoff', 'max_ns')} ns, early {ref['handoff_early']} against "
            f"{r['handoff_early']}; hackbench's own time {guest_with} against {guest_without} s "
            f"of guest time; host time of boot + hackbench {host_with:.1f} against "
            f"{host_without:.1f} s{ratio}.",
        ]
    return out
