"""The `fidelity` summary's rows as the checks, the plot and the report
look them up: which boots are judged, which only compared with, the cost
pairs; and the acceptance checks (a), (b), (d), (e) on them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tandem.exp.fidelity.spec import (
    COST_LIMIT_CPU,
    COST_LIMIT_WALL,
    COST_QUANTUM_NS,
    MODEL_OFF,
)

Row = dict[str, object]


def is_comparison(row: Row) -> bool:
    """A row booted only to compare with (a counter rule or model off)."""
    return bool(row.get("comparison"))


def judged(rows: Sequence[Row]) -> list[Row]:
    """The per-core boots judged, one per quantum (their first repetition),
    without the comparisons."""
    return [r for r in rows if r["timing"] == "percore" and r["rep"] == 1 and not is_comparison(r)]


def user_cpu(row: Row) -> float | None:
    """QEMU's user CPU seconds for boot + hackbench (None if not read)."""
    boot, hackbench = row.get("boot_user_s"), row.get("hackbench_user_s")
    if not isinstance(boot, int | float) or not isinstance(hackbench, int | float):
        return None
    return float(boot) + float(hackbench)


def wall(row: Row) -> float:
    """Host wall seconds of boot + hackbench."""
    return float(str(row["boot_s"])) + float(str(row["hackbench_s"]))


def cost_pairs(rows: Sequence[Row]) -> list[tuple[float, float]]:
    """(with the model, without) user CPU seconds of boot + hackbench at
    Q = 1 µs, one pair per rep that has both."""
    with_model: dict[int, float] = {}
    without: dict[int, float] = {}
    for r in rows:
        cpu = user_cpu(r)
        if r["timing"] != "percore" or r["quantum_ns"] != COST_QUANTUM_NS or cpu is None:
            continue
        if r.get("comparison") == MODEL_OFF:
            without[int(str(r["rep"]))] = cpu
        elif r.get("memmodel") and not is_comparison(r):
            with_model[int(str(r["rep"]))] = cpu
    return [(with_model[k], without[k]) for k in sorted(with_model) if k in without]


def checks(
    rows: Sequence[Row], identical: bool | None, judge_cost: bool = True, judge_cpu: bool = True
) -> list[tuple[str, bool]]:
    """The acceptance checks, on the per-core rows: (what, met); the cost
    (e) in wall time only if `judge_cost` (the boots ran one at a time, on
    one host), in CPU time only if `judge_cpu` (they ran on one host)."""
    out: list[tuple[str, bool]] = []
    percore = judged(rows)
    # (b)'s limit holds for one path on an idle and a busy core; with caches
    # the busy core's path misses on what hackbench evicted, so with a
    # model the boot without it ("model off") is judged instead.
    judged_b = [r for r in percore if r.get("memmodel") in (None, "none")] + [
        r for r in rows if r.get("comparison") == MODEL_OFF and r["rep"] == 1
    ]
    for r in percore:
        q = int(str(r["quantum_ns"]))
        insns = int(str(r["overlap_insns"]))
        err = abs(float(str(r["overlap_median_error_ns"])))
        out.append(
            (
                f"(a) Q = {q} ns: overlap median {err:.0f} ns off {insns} instructions, "
                f"limit 1 % + Q = {0.01 * insns + q:.0f} ns",
                err <= 0.01 * insns + q,
            )
        )
    for r in judged_b:
        q = int(str(r["quantum_ns"]))
        idle, busy = r["notify_idle"], r["notify_busy"]
        assert isinstance(idle, dict) and isinstance(busy, dict)
        if idle["max_ns"] is None or busy["max_ns"] is None:
            out.append(
                (
                    f"(b) Q = {q} ns: no doorbell samples ({r['notify_server_first']} calls the "
                    "RTOS server found before their doorbell rang: it ran up to Q behind Linux "
                    "and read the request early)",
                    False,
                )
            )
            continue
        out.append(
            (
                f"(b) Q = {q} ns: interrupt to a busy core worst {busy['max_ns']} ns, to an "
                f"idle core (the path alone) worst {idle['max_ns']} ns, limit path + Q = "
                f"{idle['max_ns'] + q} ns",
                float(busy["max_ns"]) <= float(idle["max_ns"]) + q,
            )
        )
    if identical is not None:
        out.append(("(d) two boots with the same inputs give the same samples", identical))
    virtual = [r for r in rows if r["timing"] == "virtual"]
    q1 = [r for r in percore if r["quantum_ns"] == COST_QUANTUM_NS]
    model_off = [
        r
        for r in rows
        if r.get("comparison") == MODEL_OFF and r["quantum_ns"] == COST_QUANTUM_NS and r["rep"] == 1
    ]
    if virtual and judge_cost:
        # Per-core timing without a model against virtual timing.
        plain = model_off or [r for r in q1 if not r.get("memmodel")]
        # A boot without host times (0 s: replayed) is not judged.
        if plain and wall(virtual[0]) > 0 and wall(plain[0]) > 0:
            v, p = wall(virtual[0]), wall(plain[0])
            out.append(
                (
                    f"(e) Q = 1 µs: boot + hackbench {p:.1f} s of host time against {v:.1f} s "
                    f"in virtual timing ({p / v:.2f}x), limit {COST_LIMIT_WALL}x",
                    p <= COST_LIMIT_WALL * v,
                )
            )
    pairs = cost_pairs(rows) if judge_cpu else []
    if pairs:
        ratios = [m / p for m, p in pairs]
        mid = statistics.median(ratios)
        model = next(r["memmodel"] for r in q1 if r.get("memmodel"))
        out.append(
            (
                f"(e) Q = 1 µs: boot + hackbench in QEMU's user CPU time with the memory model "
                f"{model} against without, {len(pairs)} alternated pairs: "
                + ", ".join(f"{m:.1f} against {p:.1f} s" for m, p in pairs)
                + f"; median ratio {mid:.2f}x, limit {COST_LIMIT_CPU:g}x",
                mid <= COST_LIMIT_CPU,
            )
        )
    elif (
        model_off
        and q1
        and q1[0].get("memmodel")
        and judge_cost
        and judge_cpu
        and wall(model_off[0]) > 0
    ):
        # Runs from before the CPU time was read: host wall time.
        m, p = wall(q1[0]), wall(model_off[0])
        out.append(
            (
                f"(e) Q = 1 µs: boot + hackbench {m:.1f} s of host time with the memory model "
                f"{q1[0]['memmodel']} against {p:.1f} s without ({m / p:.2f}x), "
                f"limit {COST_LIMIT_WALL}x",
                m <= COST_LIMIT_WALL * p,
            )
        )
    return out
