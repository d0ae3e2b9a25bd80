"""Reading the `memory` experiment's boots: membench's ns per load, the
RTOS's hand-off record with the model's counters, and the checks made of
them against a profile (plateaus, contention, TLB knees)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tandem.errors import TandemError
from tandem.exp.memory.script import overflow_pages
from tandem.exp.memory.spec import (
    CONTENTION_TOLERANCE,
    DRAM_SIZE,
    FLAT_TOLERANCE,
    KNEE_TOLERANCE,
    L1_SIZE,
    L2_SIZE,
    PLATEAU_TOLERANCE,
)
from tandem.instruments.handoffs import parse_record, per_switch
from tandem.platform import memmodel

# Each measurement's output line, and the field that says which point it is.
KEYS = {"chase": "bytes", "contend": "streams", "tlb": "pages"}


def parse(
    lines: Sequence[str], where: str, kinds: Sequence[str] = tuple(KEYS)
) -> dict[str, dict[int, float]]:
    """Each measurement of `kinds` in ns per load: chase by bytes, contend
    by streams, tlb by pages; a kind the output lacks is an error."""
    keys = {k: KEYS[k] for k in kinds}
    out: dict[str, dict[int, float]] = {k: {} for k in kinds}
    for line in lines:
        f = line.split()
        if not f or f[0] not in keys:
            continue
        try:
            fields = dict(x.split("=", 1) for x in f[1:])
            loads, ns = int(fields["loads"]), int(fields["ns"])
            key = int(fields[keys[f[0]]])
        except (ValueError, KeyError):
            raise TandemError(f"{where}: cannot read '{line}'") from None
        if loads <= 0:
            raise TandemError(f"{where}: no loads in '{line}'")
        out[f[0]][key] = ns / loads
    for kind, values in out.items():
        if not values:
            raise TandemError(f"{where}: no {kind} measurements")
    return out


@dataclass(frozen=True)
class Plateau:
    """A cache level's stall per load: measured at `size` against the profile's."""

    level: str
    size: int
    expected_ns: float
    measured_ns: float
    tolerance_ns: float

    @property
    def within_tolerance(self) -> bool:
        return abs(self.measured_ns - self.expected_ns) <= self.tolerance_ns


def plateaus(
    profile: Mapping[str, object], with_model: Mapping[int, float], baseline: Mapping[int, float]
) -> list[Plateau]:
    """L1, L2 (if the profile has one) and DRAM: the chase's stall per load
    (with the model minus `baseline`, the same size's) against the profile."""
    l1d, l2 = profile["l1d"], profile["l2"]
    assert isinstance(l1d, dict)
    dram = float(str(profile["memory_latency_ns"]))
    levels: list[tuple[str, int, float]] = [("L1", L1_SIZE, float(l1d["hit_ns"]))]
    if isinstance(l2, dict):
        levels.append(("L2", L2_SIZE, float(l2["hit_ns"])))
    levels.append(("DRAM", DRAM_SIZE, dram))
    out = []
    for i, (level, size, expected) in enumerate(levels):
        # A 0 ns level: within 10 % of the next level's step.
        scale = expected if expected > 0 else levels[i + 1][2]
        out.append(
            Plateau(
                level,
                size,
                expected,
                round(with_model[size] - baseline[size], 3),
                PLATEAU_TOLERANCE * scale,
            )
        )
    return out


def knees(profile: Mapping[str, object], stall: Mapping[int, float]) -> dict[str, object]:
    """Where the TLB sweep's stall per load steps up: the largest page count
    before the micro TLB misses (stall below half a micro miss); and, for
    the main TLB, where its set overflow begins (main_crossing) where the
    sweep has the overflow's page counts, else (runs before 30 Nov) the
    largest page count whose stall is within 0.1 ns of the plateau between
    the knees."""
    tlb = profile["tlb"]
    assert isinstance(tlb, dict)
    micro, main = int(tlb["micro_data_entries"]), int(tlb["main_entries"])
    micro_miss = float(tlb["main_hit_ns"])
    pages = sorted(stall)
    micro_knee = max((p for p in pages if stall[p] < micro_miss / 2), default=0)
    between = [stall[p] for p in pages if micro + 2 <= p <= main // 2]
    plateau = statistics.median(between) if between else micro_miss
    out: dict[str, object] = {
        "micro_entries": micro,
        "micro_knee": micro_knee,
        "main_entries": main,
        "micro_plateau_ns": round(plateau, 3),
        "micro_ok": abs(micro_knee - micro) <= KNEE_TOLERANCE,
    }
    ways = int(tlb["main_ways"])
    if all(p in stall for p in overflow_pages(main, ways)):
        knee = main_crossing(stall, main, ways)
        tolerance = main_knee_tolerance(main)
        out |= {
            "main_knee": knee,
            "main_rule": "change point",
            "main_tolerance": tolerance,
            "main_ok": knee is not None and abs(knee - main) <= tolerance,
        }
        return out
    main_knee = max(
        (p for p in pages if p > micro_knee and stall[p] - plateau < 0.1), default=micro_knee
    )
    out |= {"main_knee": main_knee, "main_ok": abs(main_knee - main) <= KNEE_TOLERANCE}
    return out


def main_knee_tolerance(main: int) -> int:
    """How far the knee may sit from the main TLB's size: 2 entries, or
    1/64 of them where that is more (8 of a53's 512). Fixed before any run
    with the overflow sweep: the kernel's and the loop's own pages hold a
    few entries, and a point's +-0.4 ns of noise moves the fitted change
    point by a few entries (test_memory_knees.py)."""
    return max(KNEE_TOLERANCE, main // 64)


def main_crossing(stall: Mapping[int, float], main: int, ways: int) -> int | None:
    """Where the main TLB's set overflow begins, from the sweep around it.

    A cyclic sweep over P pages of a main TLB of S = main / ways sets of
    `ways` ways (least recently used) overflows P - K sets for K < P <=
    K + S (K: the entries the sweep can have): each of those sets holds
    ways + 1 of the pages and misses on every one of them, the others
    never. So the stall per load is a plateau a up to K and a + b (P - K) / P
    above it (b: ways + 1 walks). For each K from main / 2 to main + S the
    least-squares fit of that shape to the sweep's points in [main / 2,
    main + S] (the plateau fitted with it) leaves a residual; the K that
    leaves the least is returned (None: no K gives a rise, so the main TLB
    never missed)."""
    sets = max(1, main // ways)
    points = [(p, stall[p]) for p in sorted(stall) if main // 2 <= p <= main + sets]
    if sum(1 for p, _ in points if p > main) < 3:
        raise TandemError("the TLB sweep has too few points over the main TLB's overflow")
    best: tuple[float, int] | None = None
    for knee in range(main // 2, main + sets):
        xs = [max(0.0, (p - knee) / p) for p, _ in points]
        n = len(points)
        mean_x = sum(xs) / n
        mean_y = sum(y for _, y in points) / n
        sxx = sum((x - mean_x) ** 2 for x in xs)
        if sxx == 0:
            continue
        slope = sum((x - mean_x) * (y - mean_y) for x, (_, y) in zip(xs, points, strict=True)) / sxx
        if slope <= 0:
            continue
        base = mean_y - slope * mean_x
        residual = sum((y - base - slope * x) ** 2 for x, (_, y) in zip(xs, points, strict=True))
        if best is None or residual < best[0]:
            best = (residual, knee)
    return None if best is None else best[1]


def contention(
    profile: Mapping[str, object] | None, latency: Mapping[int, float]
) -> dict[str, object]:
    """Core 0's DRAM latency per streaming core: its growth per core
    against the bus service time (with a model), or flatness (without)."""
    base = latency[0]
    growth = {k: round((latency[k] - base) / k, 3) for k in latency if k > 0}
    out: dict[str, object] = {
        "latency_ns": {str(k): round(v, 3) for k, v in sorted(latency.items())},
        "growth_per_stream_ns": {str(k): v for k, v in sorted(growth.items())},
    }
    if profile is None:
        out["flat"] = all(abs(latency[k] - base) <= FLAT_TOLERANCE * base for k in latency)
    else:
        service = float(str(profile["bus_service_ns"]))
        out["bus_service_ns"] = service
        out["per_stream_ok"] = all(
            abs(g - service) <= CONTENTION_TOLERANCE * service for g in growth.values()
        )
    return out


@dataclass(frozen=True)
class Handoffs:
    """One ctxsw boot: ns per hand-off, and the RTOS core's model counters."""

    mode: str
    profile: str | None
    per_switch_ns: float
    translation_stall_ns: int | None
    main_tlb_misses: int | None


def handoffs(
    counter_hz: int,
    mode: str,
    spec: str | None,
    lines: Sequence[str],
    stats: Mapping[str, object] | None,
    where: str,
) -> Handoffs:
    """One ctxsw boot's result, from the commands' output (the RTOS's record,
    in ticks of the board's counter, `counter_hz`) and the model's counters."""
    record = parse_record(list(lines), where)
    mean, _ = per_switch(record, counter_hz)
    if stats is None:
        return Handoffs(mode, spec, round(mean, 2), None, None)
    return Handoffs(
        mode,
        spec,
        round(mean, 2),
        memmodel.core_counter(stats, 0, "translation_stall_ns", where),
        memmodel.core_counter(stats, 0, "main_tlb_misses", where),
    )


def plateau_agreement(
    a: Mapping[str, object], b: Mapping[str, object], tolerance_ns: float
) -> list[dict[str, object]]:
    """Every plateau two runs' summaries both measured (by profile and
    level), its stall per load in each, and whether they agree within
    `tolerance_ns` (e.g. one tick of the coarser board's counter: what its
    clock can tell apart). A profile or level only one run has is left out."""

    def by_level(summary: Mapping[str, object]) -> dict[tuple[str, str], float]:
        profiles = summary.get("profiles")
        out: dict[tuple[str, str], float] = {}
        if isinstance(profiles, Mapping):
            for name, p in profiles.items():
                for row in p["plateaus"]:
                    out[(str(name), str(row["level"]))] = float(row["measured_ns"])
        return out

    left, right = by_level(a), by_level(b)
    return [
        {
            "profile": profile,
            "level": level,
            "a_ns": left[(profile, level)],
            "b_ns": right[(profile, level)],
            "agree": abs(left[(profile, level)] - right[(profile, level)]) <= tolerance_ns,
        }
        for profile, level in sorted(set(left) & set(right))
    ]
