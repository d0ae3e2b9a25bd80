"""Paper 002 (RPC): its claims, tested on the latest full run of `rpc`.

Runs that declare issue 49's statistics (tandem/stats.py) are judged by the
paired tests in `_preregistered`, fixed before those runs (re-measured on
the memory profile `arm11-ne1`, the NaviEngine NE1's four ARM11 MPCore
cores). Their rows carry `runs_ms` (each boot's time per call) with
`run_seeds` (each boot's Linux seed); busy, block and auto pair by seed and
repetition at each size."""

from __future__ import annotations

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
from tandem.exp.common import finished_runs, num, summary_list
from tandem.platform.paths import RESULTS
from tandem.platform.timing import modes_words


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 002's claims on the latest full run under `root`."""
    paper = "002"
    paper_claims = [
        (
            "A busy/block crossover exists in the task-pair metric",
            "busy/block crosses 1 near 1.7 KB",
        ),
        ("The driver's calibrated x_opt is within x1.5 of the crossover", "x_opt = 1.70 KB"),
        (
            "auto (busy below x_opt, else block) is within 5 % of the better mode at every size",
            "the OS picks the mode per call",
        ),
    ]
    found = latest_full(finished_runs("rpc", root), lambda s: bool(summary_list(s, required=False)))
    if not found:
        return [not_run(paper, c, f) for c, f in paper_claims]
    run_id, s = found
    if stats.preregistered(s):
        return _preregistered(run_id, s, paper_claims)
    cross = s.get("crossover_bytes")
    x_opt = s.get("x_opt_bytes")
    med = {
        (int(num(r, "bytes")), r["mode"]): num(r, "median_ms")
        for r in summary_list(s, required=False)
    }
    sizes = sorted({b for b, _ in med})
    ratios = [
        f"{b} B {med[(b, 'busy')] / med[(b, 'block')]:.2f}"
        for b in sizes
        if (b, "busy") in med and (b, "block") in med
    ]
    out = [
        Claim(
            paper,
            paper_claims[0][0],
            paper_claims[0][1],
            (f"crossover {cross:.0f} B; " if isinstance(cross, int | float) else "none; ")
            + "busy/block "
            + ", ".join(ratios)
            + f" ({modes_words(s)})",
            run_id,
            REPRODUCED if isinstance(cross, int | float) else NOT_REPRODUCED,
        )
    ]
    if isinstance(cross, int | float) and isinstance(x_opt, int | float) and x_opt > 0:
        ratio = max(x_opt / cross, cross / x_opt)
        out.append(
            Claim(
                paper,
                paper_claims[1][0],
                paper_claims[1][1],
                f"x_opt {x_opt:.0f} B against a crossover at {cross:.0f} B (x{ratio:.2f})",
                run_id,
                REPRODUCED if ratio <= 1.5 else NOT_REPRODUCED,
            )
        )
    else:
        out.append(
            Claim(
                paper,
                paper_claims[1][0],
                paper_claims[1][1],
                f"x_opt {x_opt}, crossover {cross}",
                run_id,
                NOT_REPRODUCED,
            )
        )
    over = [
        med[(b, "auto")] / min(med[(b, "busy")], med[(b, "block")]) - 1
        for b in sizes
        if {(b, "auto"), (b, "busy"), (b, "block")} <= med.keys()
    ]
    out.append(
        Claim(
            paper,
            paper_claims[2][0],
            paper_claims[2][1],
            f"worst {max(over):+.1%} above the better mode" if over else "-",
            run_id,
            REPRODUCED if over and max(over) <= 0.05 else NOT_REPRODUCED,
        )
    )
    return out


def _preregistered(run_id: str, s: Summary, paper_claims: list[tuple[str, str]]) -> list[Claim]:
    """Issue 49's tests, fixed before its runs: a crossover exists when busy
    is faster than block at the smallest size and slower at the largest,
    each beyond its paired 95 % interval; auto is within 5 % of the better
    mode (per pair: auto / min(busy, block) - 1) when that interval's upper
    end is below 5 % at every size. x_opt against the crossover as before."""
    paper = "002"
    modes = modes_words(s)
    cells = {
        (int(num(r, "bytes")), str(r["mode"])): stats.by_seed(r, "runs_ms")
        for r in summary_list(s, required=False)
    }
    sizes = sorted(b for b, m in cells if m == "busy" and (b, "block") in cells)
    out: list[Claim] = []
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        busy_small = stats.paired_test(
            stats.differences(cells[(small, "block")], cells[(small, "busy")], True), stats.BELOW
        )
        busy_large = stats.paired_test(
            stats.differences(cells[(large, "block")], cells[(large, "busy")], True), stats.ABOVE
        )
        cross = s.get("crossover_bytes")
        out.append(
            Claim(
                paper,
                *paper_claims[0],
                (f"crossover {cross:.0f} B; " if isinstance(cross, int | float) else "")
                + f"busy / block - 1 at {small} B: {busy_small.words(percent=True)}; at {large} B: "
                f"{busy_large.words(percent=True)} ({modes})",
                run_id,
                verdict(busy_small.holds and busy_large.holds),
            )
        )
    else:
        out.append(not_run(paper, *paper_claims[0]))
    cross, x_opt = s.get("crossover_bytes"), s.get("x_opt_bytes")
    if (
        isinstance(cross, int | float)
        and isinstance(x_opt, int | float)
        and x_opt > 0
        and cross > 0
    ):
        ratio = max(x_opt / cross, cross / x_opt)
        out.append(
            Claim(
                paper,
                *paper_claims[1],
                f"x_opt {x_opt:.0f} B against a crossover at {cross:.0f} B (x{ratio:.2f})",
                run_id,
                verdict(ratio <= 1.5),
            )
        )
    else:
        out.append(
            Claim(
                paper, *paper_claims[1], f"x_opt {x_opt}, crossover {cross}", run_id, NOT_REPRODUCED
            )
        )
    tests = {}
    for b in sizes:
        if (b, "auto") not in cells:
            continue
        better = {
            k: [min(x, y) for x, y in pairs]
            for k, pairs in stats.pair_up(cells[(b, "busy")], cells[(b, "block")]).items()
        }
        tests[b] = stats.paired_test(
            stats.differences(better, cells[(b, "auto")], relative=True), stats.BELOW, 0.05
        )
    out.append(
        Claim(
            paper,
            *paper_claims[2],
            "auto / better - 1: "
            + "; ".join(f"{b} B: {t.words(percent=True)}" for b, t in tests.items())
            + f" ({modes})",
            run_id,
            verdict(all(t.holds for t in tests.values())),
        )
        if tests
        else not_run(paper, *paper_claims[2])
    )
    return out
