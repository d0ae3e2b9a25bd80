"""Paper 002 (RPC): its claims, tested on the latest full run of `rpc`."""

from __future__ import annotations

from pathlib import Path

from tandem.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    latest_full,
    not_run,
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
