"""Paper 000 §4 (capacity): its claims, tested on the latest full run of
`capacity`.

Runs that declare issue 49's statistics (tandem/stats.py) are judged by the
paired tests in `_preregistered`, fixed before those runs (re-measured on
the memory profile `a9-rcar-h1`): their rows carry `run_seeds` beside
`runs_s`, each boot's Linux seed, and cells pair by seed and repetition."""

from __future__ import annotations

import statistics
from pathlib import Path

from tandem import stats
from tandem.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Summary,
    latest_full,
    not_run,
    verdict,
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
    if stats.preregistered(s):
        return _preregistered(run_id, s)
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


def _preregistered(run_id: str, s: Summary) -> list[Claim]:
    """Issue 49's tests, fixed before its runs: hackbench's times paired by
    Linux seed and repetition, relative (mode / none - 1), each claim's
    95 % interval beyond 0 over at least 20 pairs and 5 seeds."""
    paper = "000 §4"
    modes = modes_words(s)
    cells = {
        (str(r["rtos_load"]), str(r["mode"])): stats.by_seed(r, "runs_s")
        for r in summary_list(s, required=False)
        if r["bench"] == "hackbench"
    }
    out: list[Claim] = []
    aware = [m for m in ("static", "steal", "both") if ("80", m) in cells]
    if ("80", "none") in cells and aware:
        tests = {
            m: stats.paired_test(
                stats.differences(cells[("80", "none")], cells[("80", m)], relative=True),
                stats.BELOW,
            )
            for m in aware
        }
        out.append(
            Claim(
                paper,
                "At 80 % RTOS load every capacity-aware mode beats none beyond the spread",
                "hackbench better with cpu_power set, more so at 80 %",
                "mode / none - 1: "
                + "; ".join(f"{m}: {t.words(percent=True)}" for m, t in tests.items())
                + f" ({modes})",
                run_id,
                verdict(all(t.holds for t in tests.values())),
            )
        )
    else:
        out.append(
            not_run(
                paper,
                "At 80 % RTOS load every capacity-aware mode beats none beyond the spread",
                "hackbench better with cpu_power set, more so at 80 %",
            )
        )

    def gains(load: str, mode: str) -> dict[int, list[float]]:
        """Per seed and repetition, the time saved against none: 1 - mode / none."""
        return {
            k: [-d for d in ds]
            for k, ds in stats.differences(
                cells[(load, "none")], cells[(load, mode)], relative=True
            ).items()
        }

    both = [
        m
        for m in ("static", "steal", "both")
        if {(ld, x) for ld in ("50", "80") for x in ("none", m)} <= cells.keys()
    ]
    if both:
        tests = {
            m: stats.paired_test(stats.differences(gains("50", m), gains("80", m)), stats.ABOVE)
            for m in both
        }
        out.append(
            Claim(
                paper,
                "Every capacity-aware mode gains more at 80 % RTOS load than at 50 %",
                "larger effect at 80 %",
                "gain at 80 % minus gain at 50 % (gain: 1 - mode / none): "
                + "; ".join(f"{m}: {t.words(percent=True)}" for m, t in tests.items()),
                run_id,
                verdict(all(t.holds for t in tests.values())),
            )
        )
    if ("changing", "static") in cells and ("changing", "steal") in cells:
        test = stats.paired_test(
            stats.differences(cells[("changing", "static")], cells[("changing", "steal")], True),
            stats.BELOW,
        )
        out.append(
            Claim(
                paper,
                "With a load that changes, stolen time (steal) beats static capacities",
                "future work in the paper (dynamic load)",
                f"steal / static - 1: {test.words(percent=True)}",
                run_id,
                verdict(test.holds),
            )
        )
    return out
