"""`tandem bench NAME` for a bench that is a registered experiment
(cli.BENCH_ALIASES): the run `tandem exp run NAME` makes, its bench flags
set as scenario keys, and `exp list` showing it (issue 48)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem import cli, exp, pool
from tandem.errors import TandemError
from tandem.exp import scenario
from tandem.exp.common import read_summary
from tandem.exp.shards import Shard

# What cli.main passed to exp.run: name, quick, overrides, jobs, shard.
Call = tuple[str, bool, dict[str, object], int | None, Shard | None]


@pytest.fixture
def exp_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Call]:
    """exp.run replaced by a stand-in that notes each call and writes the
    report the CLI prints: the calls, in order."""
    calls: list[Call] = []

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
    return calls


def test_every_bench_alias_is_a_registered_experiment_with_its_keys() -> None:
    names = [n for n, _ in exp.listing()]
    for name, (_, flags) in [*cli.BENCH_ALIASES.items(), ("trace", cli.TRACE_ALIAS)]:
        assert name in exp.REGISTRY and name in names
        schema = {**scenario.COMMON, **scenario.OPTIONAL, **exp.get(name).schema}
        assert [f.key for f in flags if f.key not in schema] == []


def test_bench_memory_runs_exp_run_memory_with_its_flags_as_keys(exp_runs: list[Call]) -> None:
    calls = exp_runs
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


def test_bench_boot_latency_switch_and_restart_keep_their_flags_as_keys(
    exp_runs: list[Call],
) -> None:
    """The flags the docs give them (docs/rtos.md, docs/boards.md,
    docs/monitor.md, results/README.md) are scenario keys of
    experiments/NAME.toml."""
    commands = [
        ["boot", "--config", "heteroos", "--runs", "3"],
        ["latency", "--smp", "1", "--idle-seconds", "11", "--hackbench-loops", "1000"],
        ["latency", "--timing", "percore", "--linux-idle", "wfi", "--quantum-ns", "500"],
        ["switch", "--config", "tandem-hyp", "--board", "imx8mp-evk", "--seconds", "2"],
        ["restart", "--count", "100"],
        ["restart", "--board", "imx8mp-evk", "--count", "3", "--smp", "2"],
    ]
    for argv in commands:
        assert cli.main(["bench", *argv]) == 0
    calls = [(name, overrides, jobs) for name, _, overrides, jobs, _ in exp_runs]
    assert calls == [
        ("boot", {"config": "heteroos", "reps": 3}, None),
        ("latency", {"smp": 1, "idle_seconds": 11, "hackbench_loops": 1000}, None),
        ("latency", {"timing": "percore", "linux_idle": "wfi", "quantum_ns": 500}, None),
        ("switch", {"board": "imx8mp-evk", "config": "tandem-hyp", "idle_ms": 2000}, None),
        ("restart", {"count": 100}, None),
        ("restart", {"board": "imx8mp-evk", "count": 3, "smp": 2}, None),
    ]
    # Each sets a key the scenario checks: a configuration that does not exist
    # is refused naming the key and what is allowed.
    s = scenario.load("latency", exp.get("latency").schema, overrides=calls[1][1])
    assert s.integer("idle_seconds") == 11
    with pytest.raises(TandemError, match="config = 'nonesuch' is not allowed"):
        scenario.load("boot", exp.get("boot").schema, overrides={"config": "nonesuch"})


def test_bench_fidelity_runs_exp_run_fidelity_with_its_flags_as_keys(
    exp_runs: list[Call],
) -> None:
    """Its flags as before (`--quanta`, `--rounds`, `--memmodel`, ...) set
    scenario keys; --jobs is passed on as given (exp.run then runs its
    boots one at a time unless it says: Boot.host_time)."""
    calls = exp_runs
    argv = ["bench", "fidelity", "--memmodel", "a53", "--quanta", "1000,2000", "--rounds", "20"]
    assert cli.main(argv) == 0
    assert calls == [
        ("fidelity", False, {"quanta": [1000, 2000], "rounds": 20, "memmodel": "a53"}, None, None)
    ]
    assert cli.main(["bench", "fidelity", "--causal", "max", "--jobs", "2"]) == 0
    assert calls[-1][2:4] == ({"causal": "max"}, 2)


def test_fidelity_boots_one_at_a_time_unless_told_and_boot_always() -> None:
    """fidelity's cost (e) is the host's wall time: its boots run one at a
    time by default, by `bench fidelity` and `exp run fidelity` alike, so
    that the report's Reproduce command judges (e); boot and restart
    measure nothing else, and refuse more than one."""
    strictest = {
        name: max(
            (b.host_time for b in exp.get(name).units(scenario.load(name, exp.get(name).schema))),
            key=exp.HOST_TIME_ORDER.index,
        )
        for name in ("fidelity", "boot", "restart", "lhp")
    }
    assert strictest == {
        "fidelity": pool.HostTime.SOME,
        "boot": pool.HostTime.ALL,
        "restart": pool.HostTime.ALL,
        "lhp": pool.HostTime.NONE,
    }


def test_a_bench_run_from_before_its_experiment_is_refused_unless_redrawable(
    tmp_path: Path,
) -> None:
    """`exp report latency` on a run `bench latency` made before issue 48
    says so, as `exp report trace` on one of `tandem trace`'s; fidelity's
    and restart's such runs are redrawn (their kept reports)."""
    for name in ("latency", "fidelity", "restart"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(f'{{"benchmark": "{name}"}}\n')
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "summary.json").write_text('{"command": "trace", "share": {}}\n')
    with pytest.raises(TandemError, match="a run of `tandem trace` from before it was an"):
        read_summary(tmp_path / "trace", "trace")
    with pytest.raises(TandemError, match="from before it was an experiment"):
        read_summary(tmp_path / "latency", "latency")
    assert read_summary(tmp_path / "fidelity", "fidelity") == {"benchmark": "fidelity"}
    assert read_summary(tmp_path / "restart", "restart") == {"benchmark": "restart"}
    with pytest.raises(TandemError, match="before it was an experiment"):
        read_summary(tmp_path / "fidelity", "latency")


def test_tandem_trace_runs_exp_run_trace_with_its_flags_as_keys(exp_runs: list[Call]) -> None:
    """The commands docs/harness.md, docs/linux.md and docs/rtos.md give."""
    commands = [
        ["--config", "heteroos"],
        ["--linux-sched", "--window-ms", "2"],
        ["--smp", "3", "--workload", "1:1000:0", "--window-ms", "100", "--load", "none"],
        ["--linux-idle", "wfi", "--window-ms", "0.5", "--quick"],
    ]
    for argv in commands:
        assert cli.main(["trace", *argv]) == 0
    assert [(name, quick, overrides) for name, quick, overrides, _, _ in exp_runs] == [
        ("trace", False, {"config": "heteroos"}),
        ("trace", False, {"window_us": 2000, "linux_sched": True}),
        (
            "trace",
            False,
            {"window_us": 100_000, "load": "none", "workload": [1, 1000, 0], "smp": 3},
        ),
        ("trace", True, {"window_us": 500, "linux_idle": "wfi"}),
    ]
    s = scenario.load("trace", exp.get("trace").schema, overrides=exp_runs[2][2])
    assert s.integers("workload") == [1, 1000, 0] and not s.flag("linux_sched")
    with pytest.raises(TandemError, match="load = 'idle' is not allowed"):
        scenario.load("trace", exp.get("trace").schema, overrides={"load": "idle"})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--window-ms", "0"], "the window must be positive"),
        (["--window-ms", "ten"], "expected milliseconds"),
        (["--workload", "1:1000"], "expected CORE:PERIOD_US:WORK_US"),
    ],
)
def test_tandem_trace_refuses_bad_flags(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["trace", *argv])
    assert message in capsys.readouterr().err


def test_a_trace_workload_that_is_not_three_numbers_is_refused() -> None:
    s = scenario.load("trace", exp.get("trace").schema, overrides={"workload": [1, 2]})
    with pytest.raises(TandemError, match=r"workload must be \[core, period_us, work_us\]"):
        exp.get("trace").units(s)


def test_exp_kernel_trace_runs_exp_run_linux_rt_trace(exp_runs: list[Call]) -> None:
    """`exp kernel-trace` as experiments/README.md and docs/linux.md give it."""
    assert cli.main(["exp", "kernel-trace", "--cores", "1,2", "--io", "--samples", "64"]) == 0
    assert cli.main(["exp", "kernel-trace", "--quick"]) == 0
    assert [(name, quick, overrides) for name, quick, overrides, _, _ in exp_runs] == [
        ("linux-rt-trace", False, {"cores": [1, 2], "samples": 64, "io_load": True}),
        ("linux-rt-trace", True, {}),
    ]
    with pytest.raises(TandemError, match=r"cores = \[9\] is not allowed"):
        scenario.load("linux-rt-trace", exp.get("linux-rt-trace").schema, overrides={"cores": [9]})
