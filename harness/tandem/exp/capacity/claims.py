"""Paper 000 §4 (capacity): its claims, tested on the latest full run of
`capacity`."""

from __future__ import annotations

import statistics
from pathlib import Path

from tandem.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    latest_full,
    not_run,
)
from tandem.exp.common import finished_runs, numbers, summary_list
from tandem.platform.paths import RESULTS
from tandem.platform.timing import modes_words


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 000 §4's claims on the latest full run under `root`."""
    paper = "000 §4"
    claim = "At 80 % RTOS load every capacity-aware mode beats none beyond the spread"
    figure = "hackbench better with cpu_power set, more so at 80 %"
    found = latest_full(
        finished_runs("capacity", root), lambda s: bool(summary_list(s, required=False))
    )
    if not found:
        return [not_run(paper, claim, figure)]
    run_id, s = found
    rows = {
        (str(r["rtos_load"]), r["mode"], r["bench"]): r for r in summary_list(s, required=False)
    }

    def runs(load: str, mode: str) -> list[float]:
        r = rows.get((load, mode, "hackbench"))
        return numbers(r, "runs_s") if r else []

    def med(load: str, mode: str) -> float | None:
        r = runs(load, mode)
        return statistics.median(r) if r else None

    out: list[Claim] = []
    none80 = runs("80", "none")
    aware = [m for m in ("static", "steal", "both") if runs("80", m)]
    beats = [m for m in aware if none80 and max(runs("80", m)) < min(none80)]

    def ms(load: str, mode: str) -> str:
        r = runs(load, mode)
        return f"{mode} {statistics.median(r) * 1000:.0f} ms (range {(max(r) - min(r)) * 1000:.0f})"

    ours = ", ".join(ms("80", m) for m in ["none", *aware] if runs("80", m))
    out.append(
        Claim(
            paper,
            claim,
            figure,
            f"medians {ours}; every run below none's fastest: {', '.join(beats) or 'none'} "
            f"({modes_words(s)})",
            run_id,
            REPRODUCED if aware and len(beats) == len(aware) else NOT_REPRODUCED,
        )
    )
    gains: dict[str, dict[str, float]] = {}
    for mode in ("static", "steal", "both"):
        for load in ("50", "80"):
            n, with_mode = med(load, "none"), med(load, mode)
            if n and with_mode:
                gains.setdefault(mode, {})[load] = 1 - with_mode / n
    both_loads = {m: g for m, g in gains.items() if len(g) == 2}
    if both_loads:
        out.append(
            Claim(
                paper,
                "Every capacity-aware mode gains more at 80 % RTOS load than at 50 %",
                "larger effect at 80 %",
                "time saved against none: "
                + "; ".join(
                    f"{m} {g['50']:+.1%} at 50 %, {g['80']:+.1%} at 80 %"
                    for m, g in both_loads.items()
                ),
                run_id,
                REPRODUCED
                if all(g["80"] > g["50"] for g in both_loads.values())
                else NOT_REPRODUCED,
            )
        )
    st, sl = runs("changing", "static"), runs("changing", "steal")
    if st and sl:
        faster = sum(1 for x, y in zip(st, sl, strict=False) if y < x)
        out.append(
            Claim(
                paper,
                "With a load that changes, stolen time (steal) beats static capacities",
                "future work in the paper (dynamic load)",
                f"medians static {statistics.median(st) * 1000:.0f} ms, steal "
                f"{statistics.median(sl) * 1000:.0f} ms; steal faster in {faster} of "
                f"{min(len(st), len(sl))} pairs",
                run_id,
                REPRODUCED if faster == min(len(st), len(sl)) else NOT_REPRODUCED,
            )
        )
    return out
