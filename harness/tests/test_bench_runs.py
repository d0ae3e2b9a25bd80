"""`bench boot`, `latency` and `switch` as experiments (issue 48): each run
through `exp run` with a stand-in for QEMU that "prints" made-up output and
times, so the parsing, summary, report and the pipeline's files are
checked on the host. The guest's side is in test_qemu.py."""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tandem import exp, pool
from tandem.errors import TandemError
from tandem.exp import rpc, units
from tandem.exp.common import Boot
from tandem.exp.latency.parse import check_samples, phase, reports
from tandem.platform.boot import ExecResult
from tandem.platform.commands_output import BEGIN

StandIn = Callable[[Boot, pool.Context], ExecResult]


def stand_in(
    logs: Path,
    output: Mapping[str, Sequence[str]],
    boot_s: Sequence[float] = (1.0,),
    poweroff_s: float = 0.03,
    qemu_status: int = 0,
) -> tuple[StandIn, list[Boot]]:
    """A stand-in for units.boot: boot LABEL prints output[LABEL] (or
    nothing), the nth boot took boot_s[n] host seconds to Linux's first
    command; also the list of boots it was asked for."""
    booted: list[Boot] = []

    def boot(unit: Boot, ctx: pool.Context) -> ExecResult:
        n = len(booted)
        booted.append(unit)
        log_dir = Path(tempfile.mkdtemp(prefix=f"{unit.label}-", dir=logs))
        lines = list(output.get(unit.label, []))
        console = [f"[    1.0] rcS: {BEGIN}", *lines, "@@TANDEM-EXEC-END status=0@@"]
        (log_dir / "console.log").write_text("\n".join(console) + "\n")
        (log_dir / "secure.log").write_text("")
        return ExecResult(
            status=0,
            output="\n".join(lines),
            console_log=log_dir / "console.log",
            secure_log=log_dir / "secure.log",
            qemu_status=qemu_status,
            boot_s=boot_s[n % len(boot_s)],
            poweroff_s=poweroff_s,
            lines=lines,
        )

    return boot, booted


def test_bench_boot_summarizes_each_boots_wall_time_from_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, booted = stand_in(tmp_path, {}, boot_s=(1.7961, 1.341, 1.462))
    monkeypatch.setattr(units, "boot", boot)
    out = exp.run("boot", False, {"reps": 3, "config": "heteroos"}, out_root=tmp_path)
    assert [b.label for b in booted] == ["run1", "run2", "run3"]
    assert all(b.options.config.name == "heteroos" and b.options.smp == 4 for b in booted)
    assert all(b.script == "true" for b in booted)
    summary = json.loads((out / "summary.json").read_text())
    # The bench's keys as it wrote them before it was an experiment.
    assert summary["benchmark"] == "boot" and summary["config"] == "heteroos"
    assert summary["clock"] == "host wall time (QEMU start to the first command in Linux)"
    assert (summary["runs"], summary["timing"], summary["quantum_ns"]) == (3, "host", None)
    assert summary["boot_median_s"] == 1.462
    assert (summary["boot_min_s"], summary["boot_max_s"]) == (1.341, 1.796)
    assert (summary["poweroff_median_s"], summary["poweroff_max_s"]) == (0.03, 0.03)
    assert summary["provenance"]["host"]["jobs"] == 1
    with (out / "summary.csv").open() as f:
        assert [r["boot_s"] for r in csv.DictReader(f)] == ["1.796", "1.341", "1.462"]
    report = (out / "report.md").read_text()
    assert "Clock: the host's wall time" in report
    assert "| QEMU's start to the first command | 1.462 s | 1.341 s | 1.796 s |" in report
    assert (out.parent / "latest").resolve() == out
    assert (out / "raw.tar.xz").is_file() and not (out / "raw").exists()


def test_bench_boot_refuses_boots_side_by_side_in_any_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, booted = stand_in(tmp_path, {})
    monkeypatch.setattr(units, "boot", boot)
    for timing in ("host", "percore"):
        with pytest.raises(TandemError, match="--jobs 2: boot's boots measure the host's wall"):
            exp.run("boot", True, {"timing": timing}, out_root=tmp_path, jobs=2)
    assert booted == [] and not (tmp_path / "boot").exists()
    # Per-core timing alone would have let boots run side by side.
    out = exp.run("boot", True, {"timing": "percore"}, out_root=tmp_path)
    assert json.loads((out / "summary.json").read_text())["provenance"]["host"]["jobs"] == 1


def test_bench_boot_refuses_a_boot_whose_qemu_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, _ = stand_in(tmp_path, {}, qemu_status=1)
    monkeypatch.setattr(units, "boot", boot)
    with pytest.raises(TandemError, match=r"run1 .*QEMU exited with status 1, not 0"):
        exp.run("boot", True, {}, out_root=tmp_path)
    (partial,) = (tmp_path / "boot").iterdir()
    assert partial.name.endswith(".partial") and not (partial / "summary.json").exists()


def _lat_report(samples: int, max_ns: float, histogram: list[list[float]]) -> str:
    """A `tandem-lat report` line (linux/tools/tandem-lat.c's JSON)."""
    return json.dumps(
        {
            "tick_ns": 16.0,
            "cores": [{"core": 0, "samples": samples, "avg_ns": 112.0, "max_ns": max_ns}],
            "histogram": histogram,
            "samples": samples,
            "min_ns": 112.0,
            "avg_ns": 114.0,
            "max_ns": max_ns,
            "overflow": 0,
        }
    )


LATENCY_OUTPUT = [
    "@@COUNT start core 0 10 12",
    "@@COUNT start cpu 0 5",
    "@@COUNT idle core 0 3010 3012",
    "@@COUNT idle cpu 0 905",
    "@@COUNT hackbench core 0 6010 6012",
    "@@COUNT hackbench cpu 0 950",
    _lat_report(3000, 112.0, [[112.0, 3000]]),
    _lat_report(2990, 1120.0, [[112.0, 2989], [1120.0, 1]]),
]


def test_bench_latency_reads_both_phases_into_the_benchs_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, booted = stand_in(tmp_path, {"latency": LATENCY_OUTPUT})
    monkeypatch.setattr(units, "boot", boot)
    out = exp.run("latency", False, {"min_samples": 2000}, out_root=tmp_path)
    (unit,) = booted
    assert "sleep 3\n" in unit.script and "hackbench -g 8 -l 1000 > /dev/null" in unit.script
    assert unit.options.timing.mode == "percore" and unit.options.linux_idle == "psci"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resolution_ns"] == 16.0 and summary["histogram_limit_us"] == 262.1
    idle, loaded = summary["phases"]
    assert (idle["load"], idle["samples"], idle["max_us"]) == ("idle", 3000, 0.112)
    assert (loaded["load"], loaded["max_us"], loaded["avg_us"]) == ("hackbench", 1.12, 0.114)
    assert idle["counts"] == {
        "cores": {"0": {"to_rtos": 3000, "to_linux": 3000}},
        "cpus": {"0": {"standby_entries": 900}},
    }
    assert loaded["counts"]["cpus"] == {"0": {"standby_entries": 45}}
    assert (out / "histograms.csv").read_text().splitlines() == [
        "load,latency_ns,count",
        "idle,112.0,3000",
        "hackbench,112.0,2989",
        "hackbench,1120.0,1",
    ]
    assert (out / "latency.png").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "| hackbench | 2990 | 0.112 | 0.114 | 1.12 | 0 | 3000 | 45 |" in report, report
    assert "| hackbench | 0 | 2990 | 112.0 | 1120.0 |" in report


def test_bench_latency_fails_a_phase_with_too_few_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, _ = stand_in(tmp_path, {"latency": LATENCY_OUTPUT})
    monkeypatch.setattr(units, "boot", boot)
    with pytest.raises(TandemError, match="only 2990 samples with Linux hackbench"):
        exp.run("latency", False, {"min_samples": 2995}, out_root=tmp_path)
    with pytest.raises(TandemError, match="not a tandem-lat report"):
        reports(["{}", "no json"], "x")
    with pytest.raises(TandemError, match="min_ns is None"):
        phase("idle", {"samples": 1, "min_ns": None})
    check_samples([{"load": "idle", "samples": 5}], 5)


COUNTED: dict[str, object] = {
    "linux_to_rtos": {
        "samples": 1171,
        "median_instructions": 103,
        "min_instructions": 103,
        "max_instructions": 110,
        "median_path": {"trap::lower_fiq": 62, "lower_fiq": 41},
    },
    "rtos_to_linux": {
        "samples": 1172,
        "median_instructions": 100,
        "min_instructions": 100,
        "max_instructions": 606,
        "median_path": {"trap::secure_sync": 99, "hw::yield_to_linux (smc)": 1},
    },
}


def test_bench_switch_keeps_its_counts_where_rpc_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, booted = stand_in(tmp_path, {})
    monkeypatch.setattr(units, "boot", boot)
    # The execution log is counted on the host that booted (Boot.reduce).
    counted_from: list[Path] = []

    def count(log_dir: Path, board: str) -> dict[str, object]:
        counted_from.append(log_dir)
        return COUNTED

    monkeypatch.setattr(exp.switch, "count_switches", count)
    out = exp.run("switch", False, {}, out_root=tmp_path)
    (unit,) = booted
    # The bench's `sleep 1`, and a shorter idle with --quick.
    assert unit.script == "sleep 1" and unit.options.smp == 1
    quick = exp.scenario.load("switch", exp.get("switch").schema, quick=True)
    assert [b.script for b in exp.get("switch").units(quick)] == ["sleep 0.3"]
    assert unit.options.timing.mode == "virtual" and unit.options.linux_idle == "wfi"
    assert len(counted_from) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["linux_to_rtos"] == COUNTED["linux_to_rtos"]
    assert summary["unit"] == "instructions (virtual timing: 1 instruction = 1 ns)"
    # `exp run rpc` takes the world-switch round trip from the latest run.
    assert rpc.switch_round_trip_ns(tmp_path) == 203
    assert rpc.switch_run(tmp_path) == out.name
    report = (out / "report.md").read_text()
    assert "| RTOS → Linux | RTOS YIELD smc to the monitor's eret into Linux | 1172 | 100 |" in (
        report
    )
    assert "| `hw::yield_to_linux (smc)` | 1 |" in report


def test_bench_switch_refuses_a_log_without_a_direction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot, _ = stand_in(tmp_path, {})
    monkeypatch.setattr(units, "boot", boot)
    one_way = {**COUNTED, "rtos_to_linux": {"samples": 0}}
    monkeypatch.setattr(exp.switch, "count_switches", lambda log_dir, board: one_way)
    with pytest.raises(TandemError, match="no rtos_to_linux switch in QEMU's log"):
        exp.run("switch", False, {}, out_root=tmp_path)


@pytest.mark.parametrize("name", ["latency", "switch"])
def test_one_boot_benches_refuse_repetitions(name: str) -> None:
    experiment = exp.get(name)
    s = exp.scenario.load(name, experiment.schema, overrides={"reps": 2})
    with pytest.raises(TandemError, match="reps must be 1"):
        experiment.units(s)
