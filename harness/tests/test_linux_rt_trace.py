"""Experiment `linux-rt-trace` (`tandem exp kernel-trace`) on the host: a run
made by `exp run` from a stand-in for QEMU on the tracing kernel,
summarized from its raw data and redrawn by `exp report` (issue 48)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_qemu import Check, fake_run_exec

from tandem import exp, provenance
from tandem.exp import units
from tandem.exp.linux_rt_trace.spec import TRACE_KERNEL
from tandem.platform.boot_options import BootOptions
from tandem.platform.commands_output import BEGIN

# What one boot's script printed: two windows, then cyclictest's result.
WINDOWS = [
    "@@WINDOW 3.41 612000 222 0@@",
    "# latency: 222 us, #4/4, CPU#0 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:1)",
    "#    | task: stress-ng-shm-52 (uid:0 nice:0 policy:0 rt_prio:0)",
    "#  => started at: free_pcppages_bulk",
    "#  => ended at:   free_pcppages_bulk",
    " => free_pcppages_bulk",
    " => free_unref_page_commit",
    "@@WINDOW 3.61 700000 12 1@@",
    "# latency: 12 us, #4/4, CPU#0 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:1)",
    "@@CYCLICTEST@@",
    "# Min Latencies: 00015",
    "# Avg Latencies: 00019",
    "# Max Latencies: 00034",
]


def _checked(smps: list[int]) -> Check:
    """Checks each boot is on the tracing kernel, noting its cores."""

    def check(options: BootOptions, script: str, timeout_s: float, panics: bool) -> None:
        assert options.kernel == TRACE_KERNEL and options.config.name == "linux-only"
        assert "preemptirqsoff" in script and options.timing.mode == "percore"
        smps.append(options.smp)

    return check


def test_a_run_is_summarized_per_core_count_and_redrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    smps: list[int] = []
    console = [(0.0, line) for line in [BEGIN, *WINDOWS, "@@TANDEM-EXEC-END status=0@@"]]
    monkeypatch.setattr(units, "run_exec", fake_run_exec(tmp_path, console, _checked(smps)))
    monkeypatch.setattr(provenance, "collect", lambda boots, jobs, inputs=None: {"commit": "c"})
    out = exp.run("linux-rt-trace", False, {"cores": [1, 4]}, out_root=tmp_path / "r", jobs=1)
    assert smps == [1, 4]
    summary = json.loads((out / "summary.json").read_text())
    assert [b["cores"] for b in summary["boots"]] == [1, 4]
    first = summary["boots"][0]
    assert first["cyclictest_us"] == {"min": 15, "avg": 19, "max": 34}
    assert [w["latency_us"] for w in first["windows"]] == [222, 12]
    assert first["windows"][0]["stack"] == ["free_pcppages_bulk", "free_unref_page_commit"]
    text = (out / "report.md").read_text()
    assert "Reproduce: `make trace-kernel && ./tandem exp run linux-rt-trace --set" in text
    assert "| `free_pcppages_bulk < free_unref_page_commit` | 1 | 1 | 222 | 222 |" in text
    assert "## 4 core(s)" in text
    assert (out / "sections.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _, redrawn = exp.report("linux-rt-trace", out.name, out_root=tmp_path / "r")
    assert redrawn == text
