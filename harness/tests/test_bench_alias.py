"""`tandem bench NAME` for a bench that is a registered experiment
(cli.BENCH_ALIASES): the run `tandem exp run NAME` makes, its bench flags
set as scenario keys, and `exp list` showing it (issue 48)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem import cli, exp
from tandem.errors import TandemError
from tandem.exp import scenario
from tandem.exp.shards import Shard


def test_every_bench_alias_is_a_registered_experiment_with_its_keys() -> None:
    names = [n for n, _ in exp.listing()]
    for name, (_, flags) in cli.BENCH_ALIASES.items():
        assert name in exp.REGISTRY and name in names
        schema = {**scenario.COMMON, **scenario.OPTIONAL, **exp.get(name).schema}
        assert [f.key for f in flags if f.key not in schema] == []


def test_bench_memory_runs_exp_run_memory_with_its_flags_as_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, bool, dict[str, object], int | None, Shard | None]] = []

    def run(
        name: str,
        quick: bool,
        overrides: dict[str, object],
        jobs: int | None = None,
        shard: Shard | None = None,
    ) -> Path:
        calls.append((name, quick, dict(overrides), jobs, shard))
        (tmp_path / "report.md").write_text("report\n")
        return tmp_path

    monkeypatch.setattr(exp, "run", run)
    argv = ["bench", "memory", "--quick", "--jobs", "2", "--profiles", "a53", "--loads", "7"]
    assert cli.main([*argv, "--board", "imx8mp-evk", "--set", "switches=9"]) == 0
    assert calls == [
        (
            "memory",
            True,
            {"switches": 9, "board": "imx8mp-evk", "profiles": ["a53"], "loads": 7},
            2,
            None,
        )
    ]
    assert cli.main(["bench", "memory", "--shard", "1/2"]) == 0
    assert calls[-1][4] == Shard(1, 2)


def test_a_memory_scenario_it_cannot_run_is_refused_before_any_boot() -> None:
    memory = exp.get("memory")
    cases: list[tuple[dict[str, object], str]] = [
        ({"timing": "host"}, "runs in per-core timing"),
        ({"memmodel": "a53"}, "name profiles in `profiles`"),
        ({"reps": 2}, "reps must be 1"),
    ]
    for overrides, message in cases:
        s = scenario.load("memory", memory.schema, overrides=overrides)
        with pytest.raises(TandemError, match=message):
            memory.units(s)


def test_bench_fidelity_runs_exp_run_fidelity_one_boot_at_a_time_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Its flags as before (`--quanta`, `--rounds`, `--memmodel`, ...) set
    scenario keys; its boots run one at a time unless --jobs says, so that
    its cost (e) in host wall time is judged, as `exp run` would not."""
    calls: list[tuple[str, bool, dict[str, object], int | None, Shard | None]] = []

    def run(
        name: str,
        quick: bool,
        overrides: dict[str, object],
        jobs: int | None = None,
        shard: Shard | None = None,
    ) -> Path:
        calls.append((name, quick, dict(overrides), jobs, shard))
        (tmp_path / "report.md").write_text("report\n")
        return tmp_path

    monkeypatch.setattr(exp, "run", run)
    argv = ["bench", "fidelity", "--memmodel", "a53", "--quanta", "1000,2000", "--rounds", "20"]
    assert cli.main(argv) == 0
    assert calls == [
        ("fidelity", False, {"quanta": [1000, 2000], "rounds": 20, "memmodel": "a53"}, 1, None)
    ]
    assert cli.main(["bench", "fidelity", "--causal", "max", "--jobs", "2"]) == 0
    assert calls[-1][2:4] == ({"causal": "max"}, 2)
    assert cli.main(["exp", "run", "fidelity"]) == 0
    assert calls[-1][3] is None, "exp run: one boot per host core, as every experiment"
