"""The RTOS's boot-configured periodic workload in QEMU: deadlines, dispatch
accounting, and migration that survives whatever Linux writes into the
lock-state words (the RTOS trusts nothing Linux writes)."""

from __future__ import annotations

import json

import pytest

from tandem.errors import TandemError
from tandem.platform.abi import constants
from tandem.platform.apps import AppRun
from tandem.platform.board import load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

SYSFS = "/sys/bus/platform/devices/tandem"


def dispatch_report(lines: list[str]) -> dict[str, object]:
    report = json.loads(next(line for line in lines if line.startswith('{"tick_ns"')))
    assert isinstance(report, dict)
    return report


def test_periodic_static_meets_every_deadline_on_its_core() -> None:
    options = BootOptions(
        timing=Timing("virtual"), smp=2, workload=Workload(core=1, period_us=1000, work_us=200)
    )
    script = f"""
sleep 1.1
cat {SYSFS}/core1/deadline_misses
tandem-lat -d save /tmp/a
sleep 2
tandem-lat -d save /tmp/b
tandem-lat -d report /tmp/a /tmp/b
sleep 1.1
cat {SYSFS}/core1/rtos_releases {SYSFS}/core1/deadline_misses {SYSFS}/core0/rtos_releases
"""
    r = run_exec(options, script, timeout_s=600)
    assert r.status == 0, r.output
    misses_before = int(r.lines[0])
    releases, misses, core0 = (int(x) for x in r.lines[-3:])
    # Counted from a second after boot: see docs/rtos.md on releases missed
    # while Linux boots.
    assert releases >= 3000 and misses == misses_before and core0 == 0
    cores = dispatch_report(r.lines)["cores"]
    assert isinstance(cores, list)
    assert cores[0]["samples"] == 0 and cores[1]["samples"] >= 1900


def test_scribbled_lock_state_never_derails_the_rtos() -> None:
    """Linux writes random values (and zeros) into every core's lock-state
    words, including cores that do not exist; the migrating task must keep
    every deadline and start only on the two cores the RTOS has."""
    c = constants()
    base = load_board().shared.base
    records = base + c["SHM_CORE_RECORDS_OFFSET"]
    held = records + c["CORE_OFF_LINUX_LOCK_HELD"]
    waiting = records + c["CORE_OFF_LINUX_LOCK_WAITING"]
    stride = c["SHM_CORE_RECORD_STRIDE"]
    options = BootOptions(
        timing=Timing("virtual"),
        smp=2,
        workload=Workload(core=1, period_us=1000, work_us=100, dispatch="migrate"),
    )
    script = f"""
sleep 1.1
cat {SYSFS}/core1/deadline_misses
tandem-lat -d save /tmp/a
i=0; seed=12345
while [ $i -lt 3000 ]; do
	seed=$(( (seed * 1103515245 + 12345) & 2147483647 ))
	# high bits: an LCG's low bits repeat every few steps
	value=$seed; [ $(( (seed >> 16) & 1 )) -eq 0 ] && value=0
	core=$(( i % 8 ))
	devmem $(( {held} + core * {stride} )) 32 $value
	devmem $(( {waiting} + core * {stride} )) 32 $(( seed ^ 1515870810 ))
	i=$((i + 1))
done
tandem-lat -d save /tmp/b
tandem-lat -d report /tmp/a /tmp/b
sleep 1.1
cat {SYSFS}/core1/rtos_releases {SYSFS}/core1/deadline_misses
"""
    r = run_exec(options, script, timeout_s=600)
    assert r.status == 0, r.output
    misses_before = int(r.lines[0])
    releases, misses = (int(x) for x in r.lines[-2:])
    assert misses == misses_before, f"{misses - misses_before} deadline misses"
    report = dispatch_report(r.lines)
    cores = report["cores"]
    assert isinstance(cores, list) and len(cores) == 2
    started = [int(core["samples"]) for core in cores]
    assert all(n > 0 for n in started), f"the task never moved: {started}"
    assert sum(started) >= 1000 and sum(started) <= releases


def test_the_rtos_refuses_a_workload_its_application_cannot_run() -> None:
    """Each value is in its own range (the harness checks that), but work
    longer than the period is the application's to refuse: the RTOS says
    why and powers the machine off."""
    bad = AppRun.of("periodic", core=1, period_us=1000, work_us=2000)
    with pytest.raises(
        TandemError,
        match=r"refused to start: cannot start: workload refused: "
        r"periodic\.work_us = 2000: shorter than period_us",
    ):
        run_exec(BootOptions(timing=Timing("virtual"), smp=2, apps=(bad,)), "true\n", timeout_s=60)
