"""Paper 000 §3 (lock-holder preemption): its claims, tested on the latest
full runs of `lhp`.

Runs that declare issue 49's statistics (tandem/stats.py) are judged by the
paired tests in `_preregistered`, fixed before those runs (re-measured on
the memory profile `a9-rcar-h1`, the R-Car H1's 4 Cortex-A9 cores). Their
summary carries, besides what older runs have, each boot's Linux seed:
`run_seeds` beside every per-boot list (`long_spin_waits_runs` of the
period sweep, `runs_s` of the benchmarks and of the `patch` rows,
`rep_max_us` and `handoff_wait_rep_max_us` of the overhead rows), a
`thresholds` list of `{"seed", "us"}` (Linux alone's longest wait per seed,
the threshold of "long" for that seed's boots) and a `patch` list of
`{"lockstate": false|true, "runs_s", "run_seeds"}` (hackbench with the lock
state published or not, paired by seed and repetition)."""

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
from tandem.exp.common import finished_runs, num, numbers, summary_list
from tandem.platform.paths import RESULTS
from tandem.platform.timing import modes_words

PAPER = "000 §3"
THRESHOLD = (
    "Linux alone's longest spin wait (the threshold of 'long') is a real lock hold time",
    "(threshold on R-Car H1; tens of µs expected)",
)
SHORTER = (
    "The shorter the RTOS period, the more long spin waits (static)",
    "Eval 1: more long waits at shorter periods",
)
FEWER = (
    "migrate has fewer long spin waits than static at every period",
    "Eval 1: migration always below static",
)
HALF = (
    "At 1 ms / 500 µs, migrate cuts long spin waits by at least half, in every paired repetition",
    "Eval 1: far fewer at short periods",
)
FASTER = (
    "hackbench is faster with migrate than static (1 ms / 500 µs), beyond the spread",
    "Eval 2: migration better in every benchmark",
)
DISPATCH = (
    "The RTOS's worst dispatch path grows by at most 10 µs with migrate (SGI included)",
    "Eval 3: worst 14 µs static, 21 µs migration (hardware)",
)
PATCH = (
    "Publishing the lock state costs Linux little (our target: at most 2 % on hackbench)",
    "requirement 2: a minimal Linux change",
)


def _sweep(summary: Summary, policy: str) -> dict[int, dict[str, object]]:
    return {
        int(num(r, "period_us")): r
        for r in summary_list(summary, "period_sweep", required=False)
        if r["policy"] == policy
    }


def _longest_words(longest: object) -> str:
    """Linux alone's longest wait: its lock's waiter and whether it was
    interrupted (runs that recorded it)."""
    waits = [w for w in longest if isinstance(w, dict)] if isinstance(longest, list) else []
    if not waits:
        return ""
    w = max(waits, key=lambda x: num(x, "us"))
    stack = w.get("stack")
    frames = [str(f).split("+")[0] for f in stack[1:3]] if isinstance(stack, list) else []
    return (
        f"; a waiter in {' <- '.join(frames) or '?'}, interrupted {w.get('irqs')} times; "
        "per repetition " + ", ".join(f"{num(x, 'us'):.0f}" for x in waits) + " µs"
    )


def _cause_words(static: dict[str, object], policy: dict[str, object]) -> str:
    """What the RTOS's jobs preempted under static and `policy`: Linux
    holding a lock or spinning for one (runs that counted it)."""
    a, b = static.get("preempted_runs"), policy.get("preempted_runs")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return ""

    def share(d: dict[str, object], key: str) -> str:
        jobs = sum(numbers(d, "starts"))
        return f"{sum(numbers(d, key)) / jobs:.1%}" if jobs else "-"

    return (
        f" (jobs that preempted a holder {share(a, 'holding')} -> {share(b, 'holding')}, "
        f"a spinning waiter {share(a, 'waiting')} -> {share(b, 'waiting')})"
    )


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 000 §3's claims on the latest full runs under `root`."""
    runs = finished_runs("lhp", root)
    newest = latest_full(runs, lambda s: True)
    if newest and stats.preregistered(newest[1]):
        return _preregistered(*newest)
    out: list[Claim] = []
    paper = "000 §3"

    claim = "Linux alone's longest spin wait (the threshold of 'long') is a real lock hold time"
    figure = "(threshold on R-Car H1; tens of µs expected)"
    e1 = latest_full(runs, lambda s: bool(summary_list(s, "period_sweep", required=False)))
    if e1:
        run_id, s = e1
        t = num(s, "long_spin_threshold_us")
        out.append(
            Claim(
                paper,
                claim,
                figure,
                f"{t:.1f} µs ({modes_words(s)}){_longest_words(s.get('baseline_longest'))}",
                run_id,
                REPRODUCED if t < 100 else NOT_REPRODUCED,
            )
        )
        static = _sweep(s, "static")
        periods = sorted(static)
        longs = [num(static[p], "long_spin_waits") for p in periods]
        out.append(
            Claim(
                paper,
                "The shorter the RTOS period, the more long spin waits (static)",
                "Eval 1: more long waits at shorter periods",
                ", ".join(f"{p / 1000:g} ms: {n:.0f}" for p, n in zip(periods, longs, strict=True)),
                run_id,
                REPRODUCED if len(longs) >= 2 and longs[0] > longs[-1] else NOT_REPRODUCED,
            )
        )
        migrate = _sweep(s, "migrate")
        fewer = [
            p
            for p in periods
            if p in migrate
            and num(migrate[p], "long_spin_waits") < num(static[p], "long_spin_waits")
        ]
        out.append(
            Claim(
                paper,
                "migrate has fewer long spin waits than static at every period",
                "Eval 1: migration always below static",
                f"fewer at {len(fewer)} of {len(periods)} periods",
                run_id,
                REPRODUCED if periods and len(fewer) == len(periods) else NOT_REPRODUCED,
            )
        )
        if 1000 in static and 1000 in migrate:
            a = numbers(static[1000], "long_spin_waits_runs")
            b = numbers(migrate[1000], "long_spin_waits_runs")
            cuts = [(x - y) / x if x else (0.0 if y else 1.0) for x, y in zip(a, b, strict=False)]
            ours = (
                f"static / migrate {num(static[1000], 'long_spin_waits'):.0f} / "
                f"{num(migrate[1000], 'long_spin_waits'):.0f}; cut per pair "
                + ", ".join(f"{c:.0%}" for c in cuts)
            )
            ok = bool(cuts) and all(c >= 0.5 for c in cuts)
            ours += _cause_words(static[1000], migrate[1000])
            strict = _sweep(s, "migrate-strict").get(1000)
            if strict:
                c = numbers(strict, "long_spin_waits_runs")
                strict_cuts = [(x - y) / x if x else 0.0 for x, y in zip(a, c, strict=False)]
                ours += (
                    "; migrate-strict (also off cores spinning for a lock, ours): "
                    f"{num(strict, 'long_spin_waits'):.0f}, cut per pair "
                    + ", ".join(f"{x:.0%}" for x in strict_cuts)
                    + _cause_words(static[1000], strict)
                )
            out.append(
                Claim(
                    paper,
                    "At 1 ms / 500 µs, migrate cuts long spin waits by at least half, in every "
                    "paired repetition",
                    "Eval 1: far fewer at short periods",
                    ours,
                    run_id,
                    REPRODUCED if ok else NOT_REPRODUCED,
                )
            )
    else:
        out.append(not_run(paper, claim, figure))

    claim = "hackbench is faster with migrate than static (1 ms / 500 µs), beyond the spread"
    figure = "Eval 2: migration better in every benchmark"
    e2 = latest_full(runs, lambda s: bool(summary_list(s, "bench", required=False)))
    if e2:
        run_id, s = e2
        by = {(r["bench"], r["policy"]): r for r in summary_list(s, "bench", required=False)}
        st, mi = by.get(("hackbench", "static")), by.get(("hackbench", "migrate"))
        if st and mi:
            a, b = numbers(st, "runs_s"), numbers(mi, "runs_s")
            ok = len(a) >= 5 and len(b) >= 5 and max(b) < min(a)
            faster = sum(1 for x, y in zip(a, b, strict=False) if y < x)
            out.append(
                Claim(
                    paper,
                    claim,
                    figure,
                    f"median {statistics.median(a):.2f} s static, {statistics.median(b):.2f} s "
                    f"migrate; ranges {min(a):.2f}-{max(a):.2f} / {min(b):.2f}-{max(b):.2f} s; "
                    f"migrate faster in {faster} of {min(len(a), len(b))} pairs ({modes_words(s)})",
                    run_id,
                    REPRODUCED if ok else NOT_REPRODUCED,
                )
            )
    else:
        out.append(not_run(paper, claim, figure))

    claim = "The RTOS's worst dispatch path grows by at most 10 µs with migrate (SGI included)"
    figure = "Eval 3: worst 14 µs static, 21 µs migration (hardware)"
    e3 = latest_full(runs, lambda s: bool(summary_list(s, "overhead", required=False)))
    if e3:
        run_id, s = e3
        by_policy = {r["policy"]: r for r in summary_list(s, "overhead", required=False)}
        st, mi = by_policy.get("static"), by_policy.get("migrate")
        if st and mi:
            worst_static = num(st, "max_us")
            worst_migrate = num(mi, "max_us") + num(mi, "handoff_wait_max_us", default=0.0)
            grow = worst_migrate - worst_static
            out.append(
                Claim(
                    paper,
                    claim,
                    figure,
                    f"worst {worst_static:.2f} µs static, {worst_migrate:.2f} µs migrate with "
                    f"the SGI's delivery ({grow:+.2f} µs; {modes_words(s)})",
                    run_id,
                    REPRODUCED if grow <= 10 else NOT_REPRODUCED,
                )
            )
    else:
        out.append(not_run(paper, claim, figure))

    claim = "Publishing the lock state costs Linux little (our target: at most 2 % on hackbench)"
    figure = "requirement 2: a minimal Linux change"
    patch = latest_full(runs, lambda s: isinstance(s.get("lock_patch_overhead_pct"), int | float))
    if patch:
        run_id, s = patch
        pct = num(s, "lock_patch_overhead_pct")
        out.append(
            Claim(
                paper,
                claim,
                figure,
                f"{pct:+.2f} % ({modes_words(s)})",
                run_id,
                REPRODUCED if pct <= 2 else NOT_REPRODUCED,
            )
        )
    else:
        out.append(not_run(paper, claim, figure))
    return out


def _claim(pair: tuple[str, str], ours: str, run_id: str, holds: bool) -> Claim:
    return Claim(PAPER, pair[0], pair[1], ours, run_id, verdict(holds))


def _per_seed_words(values: dict[int, float], unit: str) -> str:
    return ", ".join(f"seed {k}: {v:.1f}{unit}" for k, v in sorted(values.items()))


def _preregistered(run_id: str, s: Summary) -> list[Claim]:
    """Issue 49's tests, fixed before its runs: every comparison paired by
    Linux seed and repetition (tandem/stats.py); a claim measured with
    fewer than 20 pairs over 5 seeds is not reproduced, and says so."""
    out: list[Claim] = []
    modes = modes_words(s)

    # Threshold: below 100 µs on every seed (one seed's longest of its boots).
    thresholds = {
        int(num(t, "seed")): num(t, "us") for t in summary_list(s, "thresholds", required=False)
    }
    if thresholds:
        over = sorted(k for k, v in thresholds.items() if v >= 100)
        out.append(
            _claim(
                THRESHOLD,
                f"{_per_seed_words(thresholds, ' µs')} ({modes})"
                + (f"; 100 µs or more on seed {', '.join(map(str, over))}" if over else "")
                + (
                    f"; fewer than {stats.MIN_SEEDS} seeds"
                    if len(thresholds) < stats.MIN_SEEDS
                    else ""
                ),
                run_id,
                not over and len(thresholds) >= stats.MIN_SEEDS,
            )
        )
    else:
        out.append(not_run(PAPER, *THRESHOLD))

    sweep = summary_list(s, "period_sweep", required=False)
    cells = {
        (int(num(r, "period_us")), str(r["policy"])): stats.by_seed(r, "long_spin_waits_runs")
        for r in sweep
    }
    periods = sorted({p for p, _ in cells})
    if len(periods) >= 2 and all((p, "static") in cells for p in periods):
        # Shortest against longest period, static: more long waits, paired.
        test = stats.paired_test(
            stats.differences(cells[(periods[-1], "static")], cells[(periods[0], "static")]),
            stats.ABOVE,
        )
        out.append(
            _claim(
                SHORTER,
                f"{periods[0] / 1000:g} ms minus {periods[-1] / 1000:g} ms, long waits per boot: "
                + test.words(digits=1),
                run_id,
                test.holds,
            )
        )
        # migrate below static at every period, each paired.
        tests = {
            p: stats.paired_test(
                stats.differences(cells[(p, "static")], cells[(p, "migrate")]), stats.BELOW
            )
            for p in periods
            if (p, "migrate") in cells
        }
        held = [p for p, t in tests.items() if t.holds]
        out.append(
            _claim(
                FEWER,
                f"migrate minus static, long waits per boot: fewer beyond the interval at "
                f"{len(held)} of {len(periods)} periods; "
                + "; ".join(f"{p / 1000:g} ms: {t.words(digits=1)}" for p, t in tests.items()),
                run_id,
                len(held) == len(periods) and len(tests) == len(periods),
            )
        )
        # At 1 ms: the cut 1 - migrate / static, per pair, beyond one half.
        if (1000, "static") in cells and (1000, "migrate") in cells:
            cuts = {
                k: [-d for d in ds]
                for k, ds in stats.differences(
                    cells[(1000, "static")], cells[(1000, "migrate")], relative=True
                ).items()
            }
            test = stats.paired_test(cuts, stats.ABOVE, 0.5)
            out.append(
                _claim(
                    HALF,
                    "cut 1 - migrate / static: " + test.words(percent=True),
                    run_id,
                    test.holds,
                )
            )
    else:
        out.append(not_run(PAPER, *SHORTER))

    bench = {
        (str(r["bench"]), str(r["policy"])): r for r in summary_list(s, "bench", required=False)
    }
    st, mi = bench.get(("hackbench", "static")), bench.get(("hackbench", "migrate"))
    if st and mi:
        test = stats.paired_test(
            stats.differences(stats.by_seed(st, "runs_s"), stats.by_seed(mi, "runs_s"), True),
            stats.BELOW,
        )
        out.append(
            _claim(
                FASTER,
                f"migrate / static - 1: {test.words(percent=True)} ({modes})",
                run_id,
                test.holds,
            )
        )
    else:
        out.append(not_run(PAPER, *FASTER))

    # Dispatch: the worst over every boot of every seed (a worst case pools
    # by its maximum), each seed's beside it.
    overhead = {str(r["policy"]): r for r in summary_list(s, "overhead", required=False)}
    st, mi = overhead.get("static"), overhead.get("migrate")
    if st and mi:
        st_worst = {k: max(v) for k, v in stats.by_seed(st, "rep_max_us").items()}
        mi_path = stats.by_seed(mi, "rep_max_us")
        # The SGI's delivery, where the run recorded it (0 where not).
        mi_wait = (
            stats.by_seed(mi, "handoff_wait_rep_max_us")
            if "handoff_wait_rep_max_us" in mi
            else {k: [0.0] * len(v) for k, v in mi_path.items()}
        )
        # As before issue 49: the path's worst plus the SGI's worst.
        mi_worst = {k: max(v) + max(mi_wait.get(k, [0.0])) for k, v in mi_path.items()}
        grow = {k: mi_worst[k] - st_worst[k] for k in sorted(st_worst.keys() & mi_worst.keys())}
        pooled = max(mi_worst.values()) - max(st_worst.values())
        out.append(
            _claim(
                DISPATCH,
                f"worst {max(st_worst.values()):.2f} µs static, {max(mi_worst.values()):.2f} µs "
                f"migrate with the SGI's delivery ({pooled:+.2f} µs; {modes}); growth per "
                + _per_seed_words(grow, " µs")
                + (f"; fewer than {stats.MIN_SEEDS} seeds" if len(grow) < stats.MIN_SEEDS else ""),
                run_id,
                pooled <= 10 and len(grow) >= stats.MIN_SEEDS,
            )
        )
    else:
        out.append(not_run(PAPER, *DISPATCH))

    # Patch cost: the paired interval's upper end at most 2 %.
    patch = {bool(r["lockstate"]): r for r in summary_list(s, "patch", required=False)}
    if False in patch and True in patch:
        pct = {
            k: [100 * d for d in ds]
            for k, ds in stats.differences(
                stats.by_seed(patch[False], "runs_s"), stats.by_seed(patch[True], "runs_s"), True
            ).items()
        }
        test = stats.paired_test(pct, stats.BELOW, 2.0)
        out.append(_claim(PATCH, f"on / off - 1: {test.words(' %')} ({modes})", run_id, test.holds))
    else:
        out.append(not_run(PAPER, *PATCH))
    return out
