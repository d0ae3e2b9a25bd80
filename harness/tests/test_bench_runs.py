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
from tandem.exp import units
from tandem.exp.common import Boot
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
