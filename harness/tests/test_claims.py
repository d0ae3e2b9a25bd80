"""`tandem exp claims`: each claim's test on made-up summaries, so that a
verdict can go either way, and the CLAIMS.md and README table it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem import claims
from tandem.errors import TandemError
from tandem.exp import capacity, claim_tests, domains, lhp, linux_rt, rpc


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
