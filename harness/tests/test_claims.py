"""`tandem exp claims`: each claim's test on made-up summaries, so that a
verdict can go either way, and the CLAIMS.md and README table it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem import claims, stats
from tandem.errors import TandemError
from tandem.exp import capacity, claim_tests, ctxsw, domains, lhp, linux_rt, rpc
from tandem.exp.lhp.claims import DISPATCH, FASTER, FEWER, HALF, PATCH


def _write(root: Path, experiment: str, run: str, summary: dict[str, object]) -> None:
    d = root / experiment / run
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"experiment": experiment, **summary}))


def _verdicts(found: list[claims.Claim]) -> dict[str, str]:
    return {c.claim: c.verdict for c in found}


def _lhp(cut: float, threshold: float) -> dict[str, object]:
    rows = []
    for period, static in ((10000, 10), (1000, 100)):
        migrate = int(static * (1 - cut))
        for policy, n in (("static", static), ("migrate", migrate)):
            rows.append(
                {
                    "period_us": period,
                    "policy": policy,
                    "long_spin_waits": n * 2,
                    "long_spin_waits_runs": [n, n],
                }
            )
    return {
        "quick": False,
        "long_spin_threshold_us": threshold,
        "period_sweep": rows,
        "bench": [
            {"bench": "hackbench", "policy": "static", "runs_s": [10, 11, 12, 10.5, 11.5]},
            {"bench": "hackbench", "policy": "migrate", "runs_s": [8, 9, 9.5, 8.5, 9.9]},
        ],
        "overhead": [
            {"policy": "static", "max_us": 1.0},
            {"policy": "migrate", "max_us": 1.5, "handoff_wait_max_us": 1.0},
        ],
        "lock_patch_overhead_pct": 1.2,
        "provenance": {"timing": {"timing": "percore", "quantum_ns": 1000}},
    }


def test_lhp_claims_follow_the_numbers(tmp_path: Path) -> None:
    _write(tmp_path, "lhp", "20260101-000000", _lhp(cut=0.8, threshold=30))
    got = _verdicts(lhp.claims(tmp_path))
    assert set(got.values()) == {claims.REPRODUCED}, got
    # A newer run where migrate cuts only 20 % and the threshold is 300 µs.
    _write(tmp_path, "lhp", "20260102-000000", _lhp(cut=0.2, threshold=300))
    found = lhp.claims(tmp_path)
    got = _verdicts(found)
    assert (
        got[
            "At 1 ms / 500 µs, migrate cuts long spin waits by at least half, in every paired "
            "repetition"
        ]
        == claims.NOT_REPRODUCED
    )
    assert any("real lock hold time" in c and v == claims.NOT_REPRODUCED for c, v in got.items())
    assert all(c.run == "20260102-000000" for c in found)
    assert "(Q = 1000 ns)" in found[0].ours


def test_quick_and_unfinished_runs_are_not_claims(tmp_path: Path) -> None:
    quick = _lhp(cut=0.8, threshold=30) | {"quick": True}
    _write(tmp_path, "lhp", "20260101-000000", quick)
    (tmp_path / "lhp" / "20260102-000000.partial").mkdir()
    assert {c.verdict for c in lhp.claims(tmp_path)} == {claims.NOT_RUN}


def test_rpc_claims(tmp_path: Path) -> None:
    rows = [
        {"bytes": b, "mode": m, "median_ms": t}
        for b, busy, block, auto in ((64, 0.5, 0.6, 0.5), (65536, 0.9, 0.6, 0.61))
        for m, t in (("busy", busy), ("block", block), ("auto", auto))
    ]
    _write(
        tmp_path,
        "rpc",
        "20260101-000000",
        {"quick": False, "rows": rows, "crossover_bytes": 4000, "x_opt_bytes": 5000},
    )
    assert set(_verdicts(rpc.claims(tmp_path)).values()) == {claims.REPRODUCED}
    _write(
        tmp_path,
        "rpc",
        "20260102-000000",
        {"quick": False, "rows": rows, "crossover_bytes": 4000, "x_opt_bytes": 9000},
    )
    got = rpc.claims(tmp_path)
    assert got[1].verdict == claims.NOT_REPRODUCED and "x2.25" in got[1].ours


def _capacity(none80: list[float], steal50: float) -> dict[str, object]:
    def row(load: object, mode: str, runs: list[float]) -> dict[str, object]:
        return {"rtos_load": load, "mode": mode, "bench": "hackbench", "runs_s": runs}

    return {
        "quick": False,
        "rows": [
            row(50, "none", [1.0, 1.01, 1.02]),
            row(50, "static", [0.95, 0.96, 0.97]),
            row(50, "steal", [steal50] * 3),
            row(80, "none", none80),
            row(80, "static", [1.0, 1.01, 1.02]),
            row(80, "steal", [1.02, 1.03, 1.04]),
            row("changing", "static", [1.1, 1.1, 1.1]),
            row("changing", "steal", [1.0, 1.2, 1.0]),
        ],
        "provenance": {"timing": {"timing": "percore", "quantum_ns": 1000}},
    }


def test_capacity_claims(tmp_path: Path) -> None:
    _write(tmp_path, "capacity", "20260101-000000", _capacity([1.3, 1.31, 1.32], 0.99))
    got = _verdicts(capacity.claims(tmp_path))
    assert got == {
        "At 80 % RTOS load every capacity-aware mode beats none beyond the spread": (
            claims.REPRODUCED
        ),
        "Every capacity-aware mode gains more at 80 % RTOS load than at 50 %": claims.REPRODUCED,
        # steal is slower than static in one pair of three.
        "With a load that changes, stolen time (steal) beats static capacities": (
            claims.NOT_REPRODUCED
        ),
    }
    # none's fastest run at 80 % below steal's slowest; steal saves more of
    # none's time at 50 % (16 %) than at 80 %.
    _write(tmp_path, "capacity", "20260102-000000", _capacity([1.03, 1.2, 1.22], 0.85))
    found = capacity.claims(tmp_path)
    assert {c.verdict for c in found[:2]} == {claims.NOT_REPRODUCED}
    assert "every run below none's fastest: static" in found[0].ours
    assert "steal +15.8% at 50 %, +14.2% at 80 %" in found[1].ours


def test_domains_growth_with_loaded_cores_needs_a_bus_model(tmp_path: Path) -> None:
    rows = [
        {"env": e, "load": load, "loaded_cores": k, "max_us": w}
        for e, base in (("heteroos", 0.2), ("smp", 20.0), ("affinity", 10.0))
        for load in ("none", "memory", "scheduling")
        for k, w in ((0, base), (3, base * 2))
        if not (load == "none" and k == 3)
    ]
    _write(tmp_path, "domains", "20260101-000000", {"quick": False, "rows": rows})
    found = domains.claims(tmp_path)
    assert [c.verdict for c in found] == [
        claims.REPRODUCED,
        claims.REPRODUCED,
        claims.NEEDS_MODEL,
        claims.NOT_RUN,
        claims.NOT_RUN,
    ], "no DualUnix rows: its claims are not run"


def test_domains_dualunix_claims(tmp_path: Path) -> None:
    rows = [
        {"env": e, "load": load, "loaded_cores": k, "max_us": w, "avg_us": a}
        for e, base, a in (("heteroos", 0.2, 0.2), ("dualunix", 5.0, 3.0), ("affinity", 5.0, 4.0))
        for load in ("none", "memory", "scheduling")
        for k, w in ((0, base), (3, base * 2))
        if not (load == "none" and k == 3)
    ]
    _write(tmp_path, "domains", "20260101-000000", {"quick": False, "rows": rows})
    found = domains.claims(tmp_path)
    assert [c.verdict for c in found[3:]] == [claims.REPRODUCED, claims.REPRODUCED]
    rows = [dict(r, avg_us=5.0) if r["env"] == "dualunix" else r for r in rows]
    _write(tmp_path, "domains", "20260101-000001", {"quick": False, "rows": rows})
    assert domains.claims(tmp_path)[4].verdict == claims.NOT_REPRODUCED


def test_document_and_readme_table(tmp_path: Path) -> None:
    _write(tmp_path, "lhp", "20260101-000000", _lhp(cut=0.8, threshold=30))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{claims.BEGIN}\nstale table\n{claims.END}\n\nafter\n")
    out = claims.write(claim_tests(), tmp_path, readme)
    text = out.read_text()
    assert "| 000 §3 |" in text and "**reproduced**" in text and "not run" in text
    new = readme.read_text()
    assert "stale table" not in new and new.endswith("after\n")
    assert "| paper | claim | verdict |" in new
    readme.write_text("# no block\n")
    with pytest.raises(TandemError, match="no <!-- claims:begin"):
        claims.write(claim_tests(), tmp_path, readme)


def _linux_rt(off: dict[int, list[float]], on: list[float], io: list[float]) -> dict[str, object]:
    """A linux-rt summary: worst cases per repetition, affinity off (per
    core count), on and with I/O (every core count alike)."""
    rows: list[dict[str, object]] = []

    def row(cores: int, affinity: bool, io_load: bool, reps: list[float]) -> None:
        rows.append(
            {
                "cores": cores,
                "affinity": affinity,
                "io_load": io_load,
                "rep_max_us": reps,
                "max_us": max(reps),
            }
        )

    for cores, reps in off.items():
        row(cores, False, False, reps)
        row(cores, False, True, io)
        if cores > 1:
            row(cores, True, False, on)
    return {"quick": False, "reps": 3, "rows": rows, "timing": "percore"}


def test_linux_rt_claims_need_the_ordering_beyond_the_spread(tmp_path: Path) -> None:
    grows = {1: [80.0, 90.0, 100.0], 4: [200.0, 300.0, 400.0], 8: [500.0, 550.0, 600.0]}
    _write(tmp_path, "linux-rt", "20260101-000000", _linux_rt(grows, [5, 6, 7], [700, 800, 900]))
    got = _verdicts(linux_rt.claims(tmp_path))
    assert set(got.values()) == {claims.REPRODUCED}, got
    # Medians that grow, but the most cores' lowest repetition is below the
    # fewest cores' highest; affinity overlapping on one repetition; I/O
    # raising the median only.
    overlap = {1: [80.0, 90.0, 300.0], 4: [200.0, 300.0, 400.0], 8: [250.0, 550.0, 600.0]}
    _write(tmp_path, "linux-rt", "20260102-000000", _linux_rt(overlap, [5, 6, 250], [95, 560, 610]))
    found = linux_rt.claims(tmp_path)
    assert {c.verdict for c in found} == {claims.NOT_REPRODUCED}, found
    assert all(c.run == "20260102-000000" for c in found)
    assert "median (range) of 3 repetitions" in found[0].ours
    assert "1: 90 (80-300)" in found[0].ours


def test_kept_claims_regenerate_unchanged() -> None:
    """The committed runs keep the tests they were judged by: issue 49's
    paired tests apply only to runs that declare them."""
    from tandem.platform.paths import RESULTS

    kept = (RESULTS / "CLAIMS.md").read_text()
    assert claims.document(claims.collect(claim_tests())) == kept


# Issue 49's runs: every cell measured on 5 Linux seeds x 4 repetitions.
SEEDS = [s for s in range(5) for _ in range(4)]


def _boots(value: float, effect: float = 0.0, spread: float = 0.05) -> list[float]:
    """20 boots' values around `value` (+ `effect`), a fixed wobble per
    seed and repetition, the same for every cell: pairs differ by `effect`
    plus a little of their own."""
    return [
        round(value + effect + spread * ((i * 7) % 5 - 2) + 0.01 * ((i * 3) % 4), 4)
        for i in range(len(SEEDS))
    ]


def _prereg(summary: dict[str, object]) -> dict[str, object]:
    return {
        "quick": False,
        "stats": stats.STATS_VERSION,
        "provenance": {"timing": {"timing": "percore", "quantum_ns": 1000}},
        **summary,
    }


def _lhp_49(gain: float) -> dict[str, object]:
    """`gain`: how much migrate improves on static (0: not at all)."""
    sweep = [
        {
            "period_us": p,
            "policy": policy,
            "long_spin_waits_runs": _boots(base * (1 - gain if policy == "migrate" else 1), 0, 2),
            "run_seeds": SEEDS,
        }
        for p, base in ((10000, 20.0), (1000, 200.0))
        for policy in ("static", "migrate")
    ]
    return _prereg(
        {
            "thresholds": [{"seed": s, "us": 40.0 + s} for s in range(5)],
            "period_sweep": sweep,
            "bench": [
                {"bench": "hackbench", "policy": p, "runs_s": _boots(1.0, e), "run_seeds": SEEDS}
                for p, e in (("static", 0.0), ("migrate", -gain))
            ],
            "overhead": [
                {"policy": p, "rep_max_us": _boots(w), "run_seeds": SEEDS}
                for p, w in (("static", 1.0), ("migrate", 3.0))
            ],
            "patch": [
                {"lockstate": on, "runs_s": _boots(1.0, 0.005 * on), "run_seeds": SEEDS}
                for on in (False, True)
            ],
        }
    )


def test_lhp_paired_claims(tmp_path: Path) -> None:
    _write(tmp_path, "lhp", "20270101-000000", _lhp_49(gain=0.6))
    found = lhp.claims(tmp_path)
    assert {c.verdict for c in found} == {claims.REPRODUCED}, found
    assert "95 % interval" in found[4].ours and "20 pairs over 5 seeds" in found[4].ours
    # No gain at all: migrate's claims fail, the others stand.
    _write(tmp_path, "lhp", "20270102-000000", _lhp_49(gain=0.0))
    got = _verdicts(lhp.claims(tmp_path))
    assert got[FEWER[0]] == claims.NOT_REPRODUCED
    assert got[HALF[0]] == claims.NOT_REPRODUCED
    assert got[FASTER[0]] == claims.NOT_REPRODUCED
    assert got[DISPATCH[0]] == claims.REPRODUCED
    assert got[PATCH[0]] == claims.REPRODUCED
    # An older run without the declaration keeps its own tests.
    assert lhp.claims(tmp_path)[0].run == "20270102-000000"


def test_lhp_threshold_names_the_seeds_over_it(tmp_path: Path) -> None:
    summary = _lhp_49(gain=0.6)
    summary["thresholds"] = [{"seed": s, "us": 348.0 if s == 3 else 81.0} for s in range(5)]
    _write(tmp_path, "lhp", "20270101-000000", summary)
    first = lhp.claims(tmp_path)[0]
    assert first.verdict == claims.NOT_REPRODUCED
    assert "100 µs or more on seed 3" in first.ours


def _capacity_49(gain80: float) -> dict[str, object]:
    def row(load: object, mode: str, value: float) -> dict[str, object]:
        return {
            "rtos_load": load,
            "mode": mode,
            "bench": "hackbench",
            "runs_s": _boots(value),
            "run_seeds": SEEDS,
        }

    return _prereg(
        {
            "rows": [
                row(50, "none", 1.0),
                row(50, "static", 0.95),
                row(80, "none", 1.5),
                row(80, "static", 1.5 * (1 - gain80)),
                row("changing", "static", 1.2),
                row("changing", "steal", 1.2),
            ]
        }
    )


def test_capacity_paired_claims(tmp_path: Path) -> None:
    _write(tmp_path, "capacity", "20270101-000000", _capacity_49(gain80=0.2))
    got = [c.verdict for c in capacity.claims(tmp_path)]
    # steal equals static under the changing load: no claim there.
    assert got == [claims.REPRODUCED, claims.REPRODUCED, claims.NOT_REPRODUCED]
    _write(tmp_path, "capacity", "20270102-000000", _capacity_49(gain80=0.0))
    got = [c.verdict for c in capacity.claims(tmp_path)]
    assert got[:2] == [claims.NOT_REPRODUCED, claims.NOT_REPRODUCED]


def _linux_rt_49(growth: float) -> dict[str, object]:
    rows: list[dict[str, object]] = []
    for cores in (1, 2, 4):
        worst = 50.0 + growth * cores
        for affinity, io, value in (
            (False, False, worst),
            (True, False, 5.0),
            (False, True, worst + 30),
        ):
            if affinity and cores == 1:
                continue
            rows.append(
                {
                    "cores": cores,
                    "affinity": affinity,
                    "io_load": io,
                    "rep_max_us": _boots(value, 0, 3),
                    "run_seeds": SEEDS,
                    "max_us": value,
                }
            )
    return _prereg({"reps": 4, "rows": rows})


def test_linux_rt_paired_claims(tmp_path: Path) -> None:
    _write(tmp_path, "linux-rt", "20270101-000000", _linux_rt_49(growth=20.0))
    assert {c.verdict for c in linux_rt.claims(tmp_path)} == {claims.REPRODUCED}
    _write(tmp_path, "linux-rt", "20270102-000000", _linux_rt_49(growth=-10.0))
    found = linux_rt.claims(tmp_path)
    assert [c.verdict for c in found] == [
        claims.NOT_REPRODUCED,
        claims.REPRODUCED,
        claims.REPRODUCED,
    ]
    assert "falls beyond the interval at 1 -> 2, 2 -> 4" in found[0].ours


def _domains_49(smp: list[float], heteroos: list[float]) -> dict[str, object]:
    """Worst cases with 0-3 memory-loaded cores for smp and heteroos;
    affinity and dualunix at smp's."""
    rows: list[dict[str, object]] = []
    for env, pts in (("smp", smp), ("heteroos", heteroos), ("affinity", smp), ("dualunix", smp)):
        for k, w in enumerate(pts):
            rows.append(
                {
                    "env": env,
                    "load": "none" if k == 0 else "memory",
                    "loaded_cores": k,
                    "rep_max_us": _boots(w, 0, 0.02 * w),
                    "run_seeds": SEEDS,
                }
            )
        rows.append(
            {
                "env": env,
                "load": "scheduling",
                "loaded_cores": 3,
                "rep_max_us": _boots(pts[-1]),
                "rep_avg_us": _boots(3.0, -0.5 if env == "dualunix" else 0.0),
                "run_seeds": SEEDS,
            }
        )
    return _prereg({"rows": rows})


def test_domains_paired_claims_test_the_growth_with_loaded_cores(tmp_path: Path) -> None:
    paper = _domains_49([54, 120, 165, 202], [3, 5, 7.5, 9.5])
    _write(tmp_path, "domains", "20270101-000000", paper)
    found = domains.claims(tmp_path)
    assert {c.verdict for c in found} == {claims.REPRODUCED}, found
    assert "0 -> 3 x3.74" in found[2].ours
    # Flat: no growth, however far HeteroOS stays below.
    _write(tmp_path, "domains", "20270102-000000", _domains_49([54] * 4, [3] * 4))
    assert domains.claims(tmp_path)[2].verdict == claims.NOT_REPRODUCED
    # Growing, but 0 -> 3 x10 for SMP: more than twice the paper's x3.7.
    _write(tmp_path, "domains", "20270103-000000", _domains_49([20, 60, 120, 200], [3, 5, 7, 9]))
    grows = domains.claims(tmp_path)[2]
    assert grows.verdict == claims.NOT_REPRODUCED and "smp" in grows.ours


def _ctxsw_49(refill_gap: float) -> dict[str, object]:
    rows = [
        {
            "timing": "percore",
            "profile": profile,
            "mode": mode,
            "pages": pages,
            "runs_ns": _boots(
                1000.0 + (refill_gap if mode == "flush" and profile != "none" else 0)
            ),
            "run_seeds": SEEDS,
            "model_refill_ns": (200.0 if mode == "flush" else 40.0),
        }
        for profile in ("none", "a53")
        for mode in ("asid", "flush")
        for pages in (0, 64)
    ]
    return _prereg({"rows": rows})


def test_ctxsw_paired_claims_need_the_modelled_refill_cost(tmp_path: Path) -> None:
    _write(tmp_path, "ctxsw", "20270101-000000", _ctxsw_49(refill_gap=160.0))
    found = ctxsw.claims(tmp_path)
    assert [c.verdict for c in found] == [claims.REPRODUCED, claims.REPRODUCED], found
    # Slower, beyond the interval, but by x0.5 of the model's refill gap.
    _write(tmp_path, "ctxsw", "20270102-000000", _ctxsw_49(refill_gap=80.0))
    found = ctxsw.claims(tmp_path)
    assert found[1].verdict == claims.NOT_REPRODUCED and "x0.50" in found[1].ours


def _rpc_49(large_block_gain: float) -> dict[str, object]:
    rows = []
    for size, busy, block in ((64, 0.5, 0.6), (65536, 0.9, 0.9 - large_block_gain)):
        for mode, t in (("busy", busy), ("block", block), ("auto", min(busy, block) * 1.01)):
            rows.append(
                {"bytes": size, "mode": mode, "runs_ms": _boots(t, 0, 0.005), "run_seeds": SEEDS}
            )
    return _prereg({"rows": rows, "crossover_bytes": 2000, "x_opt_bytes": 2500})


def test_rpc_paired_claims(tmp_path: Path) -> None:
    _write(tmp_path, "rpc", "20270101-000000", _rpc_49(large_block_gain=0.3))
    assert {c.verdict for c in rpc.claims(tmp_path)} == {claims.REPRODUCED}
    _write(tmp_path, "rpc", "20270102-000000", _rpc_49(large_block_gain=0.0))
    found = rpc.claims(tmp_path)
    assert found[0].verdict == claims.NOT_REPRODUCED
