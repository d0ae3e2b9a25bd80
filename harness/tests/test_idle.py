"""Linux idles through PSCI the standard way (docs/linux.md): the device
tree names the core's standby state, cpuidle's PSCI driver enters it with
CPU_SUSPEND, and Linux's own PSCI checker (`make psci-kernel`) passes its
hotplug and suspend tests under Tandem's monitor. QEMU tests (marker
`qemu`), per-core timing."""

from __future__ import annotations

import re

import pytest

from tandem.errors import TandemError
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import PSCI_KERNEL
from tandem.platform.timing import Timing

CPUIDLE = "/sys/devices/system/cpu/cpu{}/cpuidle"


@pytest.mark.qemu
def test_linux_enters_the_standby_state_through_cpu_suspend() -> None:
    script = (
        "sleep 0.2\n"
        "for c in 0 1; do d=" + CPUIDLE.format("$c") + "; "
        'echo "cpu$c $(cat $d/state0/name) $(cat $d/state1/desc) $(cat $d/state1/usage)"; done\n'
        "cat /sys/devices/system/cpu/cpuidle/current_driver\n"
    )
    r = run_exec(BootOptions(timing=Timing("percore"), smp=2), script, timeout_s=600)
    assert r.status == 0, r.output
    assert r.lines[-1] == "psci_idle", r.output
    for line in r.lines[:2]:
        _, state0, state1, usage = line.split()
        assert (state0, state1) == ("WFI", "standby"), r.output
        # An idle Linux core entered the standby state (CPU_SUSPEND) again
        # and again in those 0.2 s.
        assert int(usage) > 10, r.output


@pytest.mark.qemu
def test_without_idle_states_linux_keeps_to_wfi() -> None:
    r = run_exec(
        BootOptions(timing=Timing("percore"), smp=1, linux_idle="wfi"),
        "ls " + CPUIDLE.format(0) + " 2>&1 || echo none\n",
        timeout_s=600,
    )
    assert r.status == 0 and r.lines[-1] == "none", r.output


@pytest.mark.qemu
def test_linuxs_psci_checker_passes_its_hotplug_and_suspend_tests() -> None:
    """Linux's own PSCI checker (drivers/firmware/psci/psci_checker.c), on
    four cores: every CPU off and on again, then each into the standby
    state ten times; it logs a verdict for each part."""
    if not PSCI_KERNEL.is_file():
        raise TandemError(f"no {PSCI_KERNEL}: run `make psci-kernel` (make test builds it)")
    r = run_exec(
        BootOptions(timing=Timing("percore"), kernel=PSCI_KERNEL),
        "dmesg | grep psci_checker\n",
        timeout_s=600,
    )
    assert r.status == 0, r.output
    log = r.output
    assert "psci_checker: Hotplug tests passed OK" in log, log
    assert "psci_checker: Suspend tests passed OK" in log, log
    assert "cpuidle not available" not in log, log
    results = re.findall(
        r"CPU (\d) suspend test results: success (\d+), shallow states (\d+), errors (\d+)", log
    )
    assert sorted(c for c, *_ in results) == ["0", "1", "2", "3"], log
    for _, success, shallow, errors in results:
        assert (int(success), int(shallow), int(errors)) == (10, 0, 0), log


def test_bench_latency_counts_switches_and_standby_entries_per_phase() -> None:
    from tandem.exp.latency.parse import phase_counts, read_counts

    lines = [
        "@@COUNT start core 0 10 12",
        "@@COUNT start cpu 0 5",
        "noise",
        "@@COUNT idle core 0 110 112",
        "@@COUNT idle cpu 0 905",
    ]
    counts = read_counts(lines)
    assert phase_counts(counts, "start", "idle") == {
        "cores": {"0": {"to_rtos": 100, "to_linux": 100}},
        "cpus": {"0": {"standby_entries": 900}},
    }
