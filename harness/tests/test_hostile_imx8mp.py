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
