"""The hostile tests (test_hostile.py) on the second board, QEMU's i.MX 8M
Plus EVK with patch 0008 (issue 37): the same attacks and checks, with
shorter settings (`SHORT`) so `make test` stays quick. None of them needs a
device of virt's: the attacks are SMCs, the GIC's Group 0 registers, the
shared region, PSCI and Linux's restarts, and the parked interrupt is an
SPI the EVK wires to nothing (test_hostile.PARKED_SPI). With them, RPMsg's
hostile rings and floods (test_rpmsg.py).

The latency checks read the EVK's 8 MHz counter, 125 ns a tick against 16 ns
on virt: they allow one tick (test_hostile.within_twice). A file of its own
so that `make test`'s workers (one test file each) run it beside
test_hostile.py."""

from __future__ import annotations

import pytest
from test_hostile import (
    PARKED_ON,
    Settings,
    attacks_on_a_shared_core,
    concurrent_fuzz_with_hotplug,
    cpu_ons_racing_resets,
    floods_and_storms,
    hotplug_under_rpc,
    interrupt_parked,
    requests_rewritten,
    stub_rewritten,
)
from test_rpmsg import hostile_rings_and_floods

from tandem.platform import rtos_status
from tandem.platform.board import load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

BOARD = "imx8mp-evk"
# One second a phase, a fifth of the fuzz, three races (virt's `make test`:
# 2 s, 1 s on the shared core, 40 000 calls, 12 races, 3 s of scribbling).
SHORT = Settings(attack_s=1, quiet_s=1, shared_attack_s=1, fuzz_calls=8000, races=3, scribble_s=1)


def test_floods_and_storms_from_three_cores_do_not_cost_the_rtos_a_release() -> None:
    floods_and_storms(BOARD, SHORT)


def test_attacks_on_a_core_the_rtos_shares_with_linux_cost_it_nothing() -> None:
    attacks_on_a_shared_core(BOARD, SHORT)


def test_concurrent_fuzz_with_hotplug_answers_every_call_and_costs_the_rtos_nothing() -> None:
    concurrent_fuzz_with_hotplug(BOARD, SHORT)


def test_hotplug_under_rpc_steal_time_and_migrate_dispatch() -> None:
    hotplug_under_rpc(BOARD)


def test_requests_rewritten_while_the_server_reads_them_get_only_answers_it_can_give() -> None:
    requests_rewritten(BOARD, SHORT)


def test_cpu_ons_racing_resets_leave_no_old_linux_and_every_restart_brings_up_every_core() -> None:
    cpu_ons_racing_resets(BOARD, SHORT)


def test_a_stub_rewritten_before_a_reboot_is_written_again() -> None:
    stub_rewritten(BOARD)


@pytest.mark.parametrize(("config", "core", "offline"), PARKED_ON)
def test_an_interrupt_parked_on_a_core_without_linux_does_not_keep_it_awake(
    config: str, core: int, offline: bool
) -> None:
    interrupt_parked(BOARD, config, core, offline)


def test_hostile_rpmsg_rings_and_floods_cost_the_rtos_nothing() -> None:
    hostile_rings_and_floods(BOARD)


# The secure world's devices, Secure-only behind the SoC's CSU (patch 0008
# models the CSU as the firmware sets it): each write would stop, reset or
# impersonate the secure world were it let through.
SECURE_DEVICE_WRITES = (
    # SNVS_LP LPCR = DP_EN | TOP: the machine powers off.
    ("snvs", 0x3037_0038, 32, 0x60),
    # WDOGn WCR = 0 (SRS and WDA low): an immediate reset, the RTOS with it.
    ("wdog1", 0x3028_0000, 16, 0),
    ("wdog2", 0x3029_0000, 16, 0),
    ("wdog3", 0x302A_0000, 16, 0),
    # UART4 UTXD: a character in the secure console, which tests parse.
    ("uart4", 0x30A6_0040, 32, ord("#")),
)


def test_linux_cannot_reach_the_secure_worlds_devices() -> None:
    """Issue 46, hole 2: SNVS, the three watchdogs and UART4 (the secure
    console) were plain Non-secure devices in QEMU's EVK, only disabled in
    Linux's tree: `devmem` powered the machine off, reset it or forged
    lines in the secure log. Now every read and write of them is a bus
    error (SIGBUS, 135) for Linux, which goes on; the secure log shows one
    monitor banner, no forged character, and no release missed."""
    lines = []
    for name, address, width, value in SECURE_DEVICE_WRITES:
        lines.append(f'devmem {address:#x} {width}; echo "read {name}: $?"')
        lines.append(f'devmem {address:#x} {width} {value:#x}; echo "write {name}: $?"')
    script = "\n".join(lines) + "\nsleep 1.2\necho alive\n"
    r = run_exec(
        BootOptions(board=load_board(BOARD), timing=Timing("percore")), script, timeout_s=600
    )
    assert r.qemu_status == 0, f"QEMU exited {r.qemu_status} ({r.console_log})"
    for name, *_ in SECURE_DEVICE_WRITES:
        for access in ("read", "write"):
            assert f"{access} {name}: 135" in r.lines, (access, name, r.output)
    assert r.lines[-1] == "alive", r.output
    secure = r.secure_log.read_text()
    assert secure.count("Tandem monitor 0.1.0 on imx8mp-evk") == 1, "one boot, no reset"
    assert "#" not in secure, "no character of Linux's in the secure console"
    status = rtos_status.last(secure)
    rtos_status.check_ran_on(status)
