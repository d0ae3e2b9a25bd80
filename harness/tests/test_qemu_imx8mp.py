"""Tandem on the second board, QEMU's i.MX 8M Plus EVK with patch 0008
(issue 37): a short set, as a user would check it (needs `make build`):
the boot, CPU hotplug, the Secure-only DRAM window (patch 0008's model of
a TZASC region) and PSCI entries in it, Linux restarted alone, the
interactive shell on the EVK's console, and the RTOS after Linux panics.
The hostile tests' set for this board is test_hostile_imx8mp.py."""

from __future__ import annotations

import re

import pytest
from test_qemu import rtos_keeps_its_deadlines_after_linux_panics

from tandem.platform import rtos_status
from tandem.platform.board import load_board
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.console import PROMPT, Console
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

BOARD = "imx8mp-evk"
SMC = "tandem-smc call"
INVALID_ADDRESS = -9
ALREADY_ON = -4


def run(script: str, timeout_s: float = 300, **options: object) -> ExecResult:
    options.setdefault("timing", Timing("percore"))
    result = run_exec(BootOptions(board=load_board(BOARD), **options), script, timeout_s=timeout_s)  # type: ignore[arg-type]
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


def test_secure_ram_is_out_of_linuxs_reach() -> None:
    # Linux reads and writes the monitor's and the RTOS's RAM (the first
    # 16 MiB of DRAM, Secure-only by patch 0008) through /dev/mem: a bus
    # error each (SIGBUS, 135), and the RTOS runs on. A CPU_ON into that
    # RAM is refused; one into Linux's own RAM is not (core 3 is on).
    board = load_board(BOARD)
    monitor, rtos = board.secure_ram.base, board.rtos_ram.base
    script = f"""
devmem {monitor:#x} 32; echo "read monitor: $?"
devmem {rtos:#x} 32; echo "read rtos: $?"
devmem {rtos:#x} 32 0; echo "write rtos: $?"
{SMC} 0xc4000003 3 {rtos:#x} 0
{SMC} 0xc4000003 3 {board.normal_ram.base - 4:#x} 0
{SMC} 0xc4000003 3 {board.kernel:#x} 0
sleep 1.2
"""
    r = run(script)
    for what in ("read monitor", "read rtos", "write rtos"):
        assert f"{what}: 135" in r.lines, (what, r.output)
    calls = [int(line.split()[0]) for line in r.lines if re.match(r"^-?\d+ ", line)]
    assert calls == [INVALID_ADDRESS, INVALID_ADDRESS, ALREADY_ON], r.output
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))


def test_reboot_restarts_linux_alone() -> None:
    script = """
cd /sys/bus/platform/devices/tandem
n=$(cat linux_generation)
echo "linux $n boot $(cat boot_count) cores $(nproc)"
if [ "$n" = 1 ]; then reboot -f; fi
"""
    r = run(script)
    assert r.reboots == 1
    assert r.lines == ["linux 1 boot 1 cores 4", "linux 2 boot 1 cores 4"]


def answer(console: Console, command: str) -> str:
    """A command's output on the interactive console, without kernel messages."""
    lines = console.command(command).splitlines()
    return "\n".join(line for line in lines if not re.match(r"^\[\s*\d+\.\d+\] ", line)).strip()


def test_interactive_shell_on_the_evks_console() -> None:
    # rootfs/inittab names no console: cttyhack gives the shell the one
    # Linux's console= names, here the EVK's UART2 (ttymxc1), as its
    # controlling terminal, so Ctrl-C stops a command.
    with Console(
        BootOptions(board=load_board(BOARD), timing=Timing("percore"), linux_off="machine-off")
    ) as c:
        c.expect(PROMPT, 120)
        assert answer(c, "tty") == "/dev/ttymxc1"
        assert answer(c, "nproc") == "4"
        # Ctrl-C once the command runs: the shell has given the terminal
        # back its signals (its line editor reads with ISIG off, and a ^C
        # sent before would be a character for the next line). "started"
        # comes from the child, which the shell has made the terminal's
        # foreground group before it runs: from the shell itself, a ^C
        # right after it could reach the shell before it forked the sleep,
        # which then ran its 100 s (make fresh-test, 27 Nov, on a loaded host).
        c.send("sh -c 'echo started; exec sleep 100'; echo slept")
        c.expect("\nstarted\n", 30)
        c.send("\x03")
        interrupted = c.expect(PROMPT, 30)
        assert "\nslept\n" not in c.transcript[: interrupted.start()], "Ctrl-C ended the sleep"
        c.send("reboot")
        c.expect("reboot: Restarting system", 30)
        c.expect(PROMPT, 120)
        assert answer(c, "cat /sys/bus/platform/devices/tandem/linux_generation") == "2"
        c.send("poweroff")
        assert c.wait_exit(30) == 0


def test_rtos_keeps_its_deadlines_after_linux_panics() -> None:
    rtos_keeps_its_deadlines_after_linux_panics(
        BootOptions(board=load_board(BOARD), timing=Timing("percore"))
    )
