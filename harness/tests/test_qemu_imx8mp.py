"""Tandem on the second board, QEMU's i.MX 8M Plus EVK with patch 0008
(issue 37): a short set, as a user would check it (needs `make build`)."""

from __future__ import annotations

import pytest

from tandem.platform.boot import BootOptions, ExecResult, run_exec
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

BOARD = "imx8mp-evk"


def run(script: str, timeout_s: float = 300, **options: object) -> ExecResult:
    options.setdefault("timing", Timing("percore"))
    result = run_exec(BootOptions(board=BOARD, **options), script, timeout_s=timeout_s)  # type: ignore[arg-type]
    assert result.qemu_status == 0, f"QEMU exited {result.qemu_status} ({result.console_log})"
    return result


def test_linux_has_every_core_and_the_rtos_runs_first() -> None:
    r = run("nproc; dmesg")
    assert r.output.splitlines()[0] == "4"
    assert "psci: PSCIv1.1 detected in firmware." in r.output
    assert "CPU: All CPU(s) started at EL1" in r.output
    assert "smp: Brought up 1 node, 4 CPUs" in r.output
    secure = r.secure_log.read_text()
    assert "Tandem monitor 0.1.0 on imx8mp-evk" in secure
    assert "Tandem RTOS 0.1.0 up on cores 0xf" in secure


def test_cpu_hotplug() -> None:
    script = (
        "echo 0 > /sys/devices/system/cpu/cpu3/online; nproc; "
        "echo 1 > /sys/devices/system/cpu/cpu3/online; nproc"
    )
    assert run(script).output.split() == ["3", "4"]
