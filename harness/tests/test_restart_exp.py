"""Experiment `restart` (`tandem bench restart`) on the host: each restart
split into its phases from the host's times at the console's lines, the
monitor's part from the secure log, and a run made by `exp run` from a
stand-in for QEMU, summarized from its raw data (issue 48)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_qemu import fake_run_exec

from tandem import exp, provenance
from tandem.errors import TandemError
from tandem.exp import restart, units
from tandem.exp.restart import parse
from tandem.exp.restart.spec import LABEL, METHODS, TIMED
from tandem.exp.units import Measured
from tandem.instruments import hostmarks
from tandem.platform.boot_options import BootOptions
from tandem.platform.commands_output import BEGIN

BOOTING = "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x410fd034]"


def test_each_restart_is_split_into_stop_and_boot() -> None:
    timed = [
        (0.0, "@@GEN 1 0.05@@"),
        (1.0, "@@REQUEST 1@@"),
        (2.0, BOOTING),
        (3.5, "@@GEN 2 0.06@@"),
        (4.0, "@@REQUEST 2@@"),
        (4.9, BOOTING),
        (5.9, "@@GEN 3 0.04@@"),
    ]
    rows = parse.restarts(parse.clock(timed, 2, "here"), 2, [20.0, 21.0])
    assert rows[0] == {
        "generation": 2,
        "method": "reboot -f",
        "host_s": 2.5,
        "host_stop_s": 1.0,
        "host_boot_s": 1.5,
        "monitor_ms": 20.0,
        "linux_uptime_s": 0.06,
    }
    assert rows[1]["method"] == "echo b > /proc/sysrq-trigger" and rows[1]["host_s"] == 1.9
    assert parse.phase_stats(rows)["host_s"] == {"median": 2.2, "max": 2.5}
    # A Linux that never ran its first command, and a restart whose new
    # Linux printed no boot line.
    with pytest.raises(TandemError, match=r"generations \[1, 2, 3\], want 1..4"):
        parse.clock(timed, 3, "here")
    with pytest.raises(TandemError, match="no boot line seen for Linux 3"):
        parse.restarts(parse.clock([t for t in timed if t[0] != 4.9], 2, "here"), 2, [])


def test_monitor_gaps_pair_requests_and_restarts_in_time_order() -> None:
    # The monitor writes its lines out later, each core's ring in turn: the
    # boot core's restart can come before another core's request.
    log = "\n".join(
        [
            "[     3.000000] monitor/0: Linux restarts (generation 2); the RTOS ran on (core 0)",
            "[     2.990000] monitor/2: Linux asked to restart (core 2): stopping it on cores 0xf",
            "[     5.000000] rtos/0: 5 s | core0: 5000 jobs, 0 missed",
            "[     6.020000] monitor/1: Linux asked to restart (core 1): stopping it on cores 0xf",
            "[     6.050000] monitor/0: Linux restarts (generation 3); the RTOS ran on (core 0)",
        ]
    )
    assert [round(g, 3) for g in parse.monitor_gaps_ms(log)] == [10.0, 30.0]


def test_host_lines_time_every_matching_line_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(hostmarks, "time", SimpleNamespace(monotonic=lambda: now[0]))
    timed = hostmarks.HostLines(TIMED)
    timed.spawned(4321)
    for t, line in ((101.0, "@@GEN 1 0.05@@"), (102.0, "noise"), (103.5, f"  {BOOTING}\r")):
        now[0] = t
        timed.see(line)
    assert timed.to_json() == [
        {"wall_s": 1.0, "line": "@@GEN 1 0.05@@"},
        {"wall_s": 3.5, "line": BOOTING},
    ]
    assert hostmarks.lines_of_json(timed.to_json()) == [(1.0, "@@GEN 1 0.05@@"), (3.5, BOOTING)]
    assert hostmarks.lines_of_json([{"wall_s": "1", "line": "x"}]) is None


# The quick run's console (3 restarts: each method once, the last a panic)
# with the host's time at each line, seconds after QEMU started.
CONSOLE: list[tuple[float, str]] = [
    (1.0, "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x410fd034]"),
    (4.0, BEGIN),
    (5.0, "@@GEN 1 2.50@@"),
    (6.0, "@@REQUEST 1@@"),
    (6.1, "[    3.100000] reboot: Restarting system"),
    (6.5, BOOTING),
    (7.0, BEGIN),
    (7.5, "@@GEN 2 0.05@@"),
    (8.0, "@@REQUEST 2@@"),
    (8.2, BOOTING),
    (8.6, BEGIN),
    (9.0, "@@GEN 3 0.05@@"),
    (9.5, "@@REQUEST 3@@"),
    (9.6, "[    1.200000] sysrq: Trigger a crash"),
    (9.6, "[    1.200000] Kernel panic - not syncing: sysrq triggered crash"),
    (10.4, BOOTING),
    (10.9, BEGIN),
    (11.2, "@@GEN 4 0.06@@"),
    (13.0, "@@TANDEM-EXEC-END status=0@@"),
]
SECURE = """\
[     2.000000] rtos/0: 2 s | core0: 2000 jobs, 0 missed | core1: 2000 jobs, 0 missed
[     3.050000] monitor/1: Linux asked to restart (core 1): stopping it on cores 0xf
[     3.070000] monitor/0: Linux restarts (generation 2); the RTOS ran on (core 0)
[     4.050000] monitor/0: Linux asked to restart (core 0): stopping it on cores 0xf
[     4.100000] monitor/0: Linux restarts (generation 3); the RTOS ran on (core 0)
[     5.000000] monitor/2: Linux asked to restart (core 2): stopping it on cores 0xf
[     5.040000] monitor/0: Linux restarts (generation 4); the RTOS ran on (core 0)
[     6.000000] rtos/0: 6 s | core0: 6000 jobs, 0 missed | core1: 5999 jobs, 1 missed
"""


def _check(options: BootOptions, script: str, timeout_s: float, panics: bool) -> None:
    assert "@@REQUEST $g@@" in script and "sleep 0.3" in script and panics
    assert timeout_s == 120 + 60 * 3


def test_a_run_is_summarized_from_the_hosts_times_kept_in_raw_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    monkeypatch.setattr(hostmarks, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(units, "run_exec", fake_run_exec(tmp_path, CONSOLE, _check, SECURE, now))
    monkeypatch.setattr(provenance, "collect", lambda boots, jobs, inputs=None: {"commit": "c"})
    out = exp.run("restart", True, {}, out_root=tmp_path / "r")
    summary = json.loads((out / "summary.json").read_text())
    assert [r["method"] for r in summary["restarts"]] == list(METHODS)
    assert [(r["host_s"], r["host_stop_s"], r["host_boot_s"]) for r in summary["restarts"]] == [
        (1.5, 0.5, 1.0),
        (1.0, 0.2, 0.8),
        (1.7, 0.9, 0.8),
    ]
    assert [r["monitor_ms"] for r in summary["restarts"]] == [20.0, 50.0, 40.0]
    assert [r["linux_uptime_s"] for r in summary["restarts"]] == [0.05, 0.05, 0.06]
    assert (summary["restart_median_s"], summary["restart_max_s"]) == (1.5, 1.7)
    assert summary["phases"]["host_stop_s"] == {"median": 0.5, "max": 0.9}
    assert summary["rtos_missed_total"] == 1 and summary["rtos_seconds"] == 6
    assert summary["rtos_jobs"] == {"0": 6000, "1": 5999}
    assert summary["count"] == 3 and summary["timing"] == "percore"
    assert summary["load"] == "hackbench -g 2, from 0.3 s before each request"
    assert summary["experiment"] == summary["benchmark"] == "restart"
    with (out / "restarts.csv").open() as f:
        assert [r["host_s"] for r in csv.DictReader(f)] == ["1.5", "1.0", "1.7"]
    text = (out / "report.md").read_text()
    assert "Reproduce: `./tandem exp run restart --quick`." in text
    assert "**3 of 3**" in text and "target < 1.5 s: **not met**" in text
    assert "| `echo c > /proc/sysrq-trigger` | 1 | 1.7 | 0.9 | 0.8 |" in text
    assert (out / "restart.png").stat().st_size > 0
    # The raw archive keeps the host's times with their lines: the summary
    # is made again from it alone, the same.
    measured = Measured(out)
    assert measured.host_lines(LABEL)[0] == (5.0, "@@GEN 1 2.50@@")
    assert len(measured.host_lines(LABEL)) == 10
    again = restart.summarize(exp.scenario.load("restart", restart.SCHEMA, quick=True),
                              tmp_path, measured)  # fmt: skip
    assert again["restarts"] == summary["restarts"] and again["phases"] == summary["phases"]
    # A panic among the commands' lines does not end their reading.
    assert "@@GEN 4 0.06@@" in measured.lines(LABEL, panics=True)
    assert "@@GEN 4 0.06@@" not in measured.lines(LABEL)


def test_a_record_without_the_lines_times_is_refused(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / f"{LABEL}.unit.json").write_text('{"host": {"name": "h"}}\n')
    with pytest.raises(TandemError, match="no times of its lines"):
        Measured(tmp_path).host_lines(LABEL)


@pytest.mark.parametrize(
    ("overrides", "jobs", "message"),
    [
        ({"reps": 2}, None, "reps must be 1"),
        ({}, 2, "--jobs 2: restart's boots measure the host's wall time"),
    ],
)
def test_a_restart_run_it_cannot_make_is_refused_before_the_boot(
    tmp_path: Path, overrides: dict[str, object], jobs: int | None, message: str
) -> None:
    with pytest.raises(TandemError, match=re.escape(message)):
        exp.run("restart", True, overrides, out_root=tmp_path, jobs=jobs)
    assert not (tmp_path / "restart").exists()
