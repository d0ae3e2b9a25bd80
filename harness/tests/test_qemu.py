"""Boots Tandem on QEMU and checks it as a user would (needs `make build`)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tandem import exp
from tandem.errors import TandemError
from tandem.platform import rtos_status
from tandem.platform.abi import constants
from tandem.platform.board import load_board
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import PlatformConfig, load_config
from tandem.platform.console import PROMPT, Console
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

SMC = "tandem-smc call"
NOT_SUPPORTED = -1
INVALID_PARAMETERS = -2
INVALID_ADDRESS = -9


def run(script: str, timeout_s: float = 300, **options: object) -> ExecResult:
    result = run_exec(BootOptions(**options), script, timeout_s=timeout_s)  # type: ignore[arg-type]
    assert result.qemu_status == 0, f"QEMU exited {result.qemu_status} ({result.console_log})"
    return result


def x0(line: str) -> int:
    return int(line.split()[0])


def test_exec_reports_output_and_status() -> None:
    assert run("nproc").output == "4"
    assert run("false").status != 0
    assert run("exit 7").status == 7
    assert run("nproc", smp=2).output == "2"


def test_firmware_is_detected_and_all_cores_start_at_el1() -> None:
    r = run("dmesg")
    assert "psci: PSCIv1.1 detected in firmware." in r.output
    assert "psci: SMC Calling Convention v1.1" in r.output
    assert "CPU: All CPU(s) started at EL1" in r.output
    assert "smp: Brought up 1 node, 4 CPUs" in r.output
    assert "tandem tandem: shared region" in r.output
    secure = r.secure_log.read_text()
    assert "Tandem monitor" in secure and "Linux at 0x40200000" in secure


def test_hackbench_and_cpu_hotplug() -> None:
    script = """
set -e
hackbench -g 4 -l 100
for i in 1 2 3 4 5 6 7 8 9 10; do
    echo 0 > /sys/devices/system/cpu/cpu3/online
    test "$(cat /sys/devices/system/cpu/online)" = 0-2
    echo 1 > /sys/devices/system/cpu/cpu3/online
done
cat /sys/devices/system/cpu/online
nproc
cat /sys/bus/platform/devices/tandem/core3/cpu_offs
"""
    r = run(script)
    assert r.status == 0, r.output
    assert re.search(r"^Time: \d+\.\d+$", r.output, re.M), r.output
    assert r.lines[-3:] == ["0-3", "4", "10"], "ten CPU_OFFs of core 3, counted by the monitor"


def test_reading_secure_ram_fails_without_harm() -> None:
    board = load_board()
    script = f"""
devmem {board.secure_ram.base:#x} 32
echo "devmem status $?"
{SMC} 0xc2000000
{SMC} 0x84000000
nproc
"""
    r = run(script)
    assert "devmem status 135" in r.output, "SIGBUS expected"
    assert x0(r.lines[-3]) == constants()["ABI_VERSION"], "SiP VERSION still answered"
    assert x0(r.lines[-2]) == 0x1_0001, "PSCI VERSION still answered"
    assert r.lines[-1] == "4"


def test_smc_fuzz_of_10000_calls() -> None:
    r = run("tandem-smc fuzz 10000 0x5eed && tandem-smc call 0x84000000 && cat /proc/uptime")
    assert r.status == 0, r.output
    assert "fuzz: 10000 calls returned" in r.output and ", 0 failures" in r.output
    assert x0(r.lines[-2]) == 0x1_0001


def test_malformed_and_invalid_smcs() -> None:
    script = f"""
{SMC} 0xc4000003 3 0x0 0
{SMC} 0xc4000003 7 0x40200000 0
{SMC} 0xc4000003 0x100000000003 0x40200000 0
{SMC} 0xc4000004 7 0
{SMC} 0xc4000004 3 1
{SMC} 0xc4000004 3 0
{SMC} 0x8400000a 0xc4000001
{SMC} 0x8400000a 0x80000000
{SMC} 0xc4000000
{SMC} 0x84010000
{SMC} 0x04000000
{SMC} 0xc2000001
{SMC} 0xc4000001 0
{SMC} 0xc4000001 0x10000
echo junk > /sys/kernel/debug/tandem/smc; echo "junk status $?"
echo 1 2 3 4 5 6 7 8 9 > /sys/kernel/debug/tandem/smc; echo "nine status $?"
"""
    r = run(script)
    codes = [x0(line) for line in r.lines[:14]]
    assert codes == [
        INVALID_ADDRESS,  # CPU_ON to entry 0 (flash)
        INVALID_PARAMETERS,  # CPU_ON to core 7 (absent with -smp 4)
        INVALID_PARAMETERS,  # CPU_ON, junk above the affinity fields
        INVALID_PARAMETERS,  # AFFINITY_INFO of an absent core
        INVALID_PARAMETERS,  # AFFINITY_INFO level 1
        0,  # AFFINITY_INFO: core 3 is on
        0,  # PSCI_FEATURES(CPU_SUSPEND): original power_state format
        0,  # PSCI_FEATURES(SMCCC_VERSION)
        NOT_SUPPORTED,  # PSCI_VERSION with the SMC64 bit
        NOT_SUPPORTED,  # reserved bits set
        NOT_SUPPORTED,  # yielding call
        0,  # SHM_INFO
        0,  # CPU_SUSPEND to standby: back after Linux's next interrupt
        INVALID_PARAMETERS,  # CPU_SUSPEND to a power-down state: none offered
    ]
    board = load_board()
    assert r.lines[11].split()[1:3] == [hex(board.shared.base), hex(board.shared.size)]
    assert "junk status 1" in r.output and "nine status 1" in r.output


def test_driver_shows_the_shared_region_header() -> None:
    board = load_board()
    attrs = "magic abi_version region_base region_size core_count boot_count"
    r = run(f"cd /sys/bus/platform/devices/tandem && cat {attrs}")
    assert r.lines == [
        "0x4d444e54",
        hex(constants()["ABI_VERSION"]),
        f"0x{board.shared.base:016x}",
        str(board.shared.size),
        "4",
        "1",
    ]


def test_monitor_refuses_a_bad_boot_configuration_and_powers_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def stale(
        self: PlatformConfig,
        smp: int,
        steal_time: bool = False,
        rpc_cores: tuple[int, ...] | None = None,
        linux_off: str | None = None,
    ) -> bytes:
        # A harness older than the firmware: layout version 1.
        blob = bytearray(good(self, smp, linux_off=linux_off))
        blob[8:12] = (1).to_bytes(4, "little")
        return bytes(blob)

    good = PlatformConfig.boot_blob
    monkeypatch.setattr(PlatformConfig, "boot_blob", stale)
    # The refusal ends the machine: a hang would end in run_exec's time-out,
    # whose error does not match.
    with pytest.raises(TandemError, match=r"refused to start: cannot start: .*Version\(1\)"):
        run_exec(BootOptions(), "true\n", timeout_s=60)


def test_reboot_runs_the_commands_again_in_a_new_linux() -> None:
    script = """
cd /sys/bus/platform/devices/tandem
n=$(cat linux_generation)
echo "linux $n boot $(cat boot_count)"
if [ "$n" = 1 ]; then reboot -f; fi
"""
    r = run(script)
    assert r.reboots == 1
    assert r.lines == ["linux 1 boot 1", "linux 2 boot 1"], "Linux restarted, not the machine"


# A kernel message on the console (in host timing, a loaded host makes
# Linux say "hrtimer: interrupt took ... ns") can land inside a command's
# output, on a line of its own or after the start of one ("2[    4.379366]
# hrtimer: ...", seen on 29 Nov): it runs from its time stamp to the line's end.
KERNEL_MESSAGE = re.compile(r"\[\s*\d+\.\d+\] .*$")


def answer(console: Console, command: str) -> str:
    """A command's output on the interactive console, without kernel messages."""
    lines = console.command(command).splitlines()
    return "\n".join(KERNEL_MESSAGE.sub("", line) for line in lines).strip()


def test_interactive_console_reboot_and_poweroff() -> None:
    with Console(BootOptions(linux_off="machine-off")) as console:
        console.expect(PROMPT, 60)
        # rootfs/inittab names no console: cttyhack opens console='s.
        assert answer(console, "tty") == "/dev/ttyAMA0"
        assert answer(console, "nproc") == "4"
        console.send("reboot")
        console.expect("reboot: Restarting system", 30)
        console.expect("Booting Linux", 30)
        console.expect(PROMPT, 60)
        sysfs = "/sys/bus/platform/devices/tandem"
        assert answer(console, f"cat {sysfs}/linux_generation") == "2"
        assert answer(console, f"cat {sysfs}/boot_count") == "1"
        assert answer(console, "nproc") == "4"
        # Promptly, in guest time (Linux's own clock, printk's stamps): the
        # host's time moves with its load and is no measure of the guest.
        console.send("echo tandem-poweroff > /dev/kmsg; poweroff")
        asked = console.expect(re.compile(r"\[\s*(\d+\.\d+)\] tandem-poweroff"), 30)
        down = console.expect(re.compile(r"\[\s*(\d+\.\d+)\] reboot: Power down"), 60)
        assert float(down.group(1)) - float(asked.group(1)) <= 5.0, (asked[0], down[0])
        assert console.wait_exit(60) == 0


def test_rtos_runs_first_on_every_core_beside_linux() -> None:
    r = run("sleep 2; nproc", timing=Timing("virtual"))
    assert r.output == "4"
    secure = r.secure_log.read_text()
    assert "core policies: [Shared, Shared, Shared, Shared]" in secure
    status = rtos_status.last(secure)
    second, cores = status.seconds, status.cores
    assert sorted(cores) == [0, 1, 2, 3]
    for jobs, missed in cores.values():
        assert jobs >= 1000 * second - 5 and missed == 0, cores
    assert re.search(r"handoffs [1-9]\d* \(0 late\)", secure), "PING/PONG hand-offs"


def test_rtos_meets_every_deadline_while_linux_runs_hackbench() -> None:
    r = run("hackbench -g 8 -l 200; sleep 1", timing=Timing("virtual"))
    assert r.status == 0 and "Time:" in r.output
    status = rtos_status.last(r.secure_log.read_text())
    second, cores = status.seconds, status.cores
    assert second >= 2 and sorted(cores) == [0, 1, 2, 3]
    assert all(missed == 0 and jobs >= 1000 * second - 5 for jobs, missed in cores.values()), cores


def rtos_keeps_its_deadlines_after_linux_panics(options: BootOptions) -> None:
    """Linux panics; the RTOS's status keeps coming, every core, no release
    missed (test_qemu_imx8mp.py runs it on the second board)."""
    with Console(options) as console:
        console.expect(PROMPT, 120)
        console.command("sleep 1")
        before = rtos_status.last(console.secure_log.read_text()).seconds
        console.send("echo c > /proc/sysrq-trigger")
        console.expect("Kernel panic", 60)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            status = rtos_status.last(console.secure_log.read_text())
            if status.seconds >= before + 3:
                break
            time.sleep(0.5)
        assert status.seconds >= before + 3, "RTOS status stopped after the panic"
        assert sorted(status.cores) == [0, 1, 2, 3]
        assert all(missed == 0 for _, missed in status.cores.values()), status.cores


def test_rtos_keeps_its_deadlines_after_linux_panics() -> None:
    rtos_keeps_its_deadlines_after_linux_panics(BootOptions(timing=Timing("virtual")))


def test_heteroos_gives_linux_three_cores_and_the_rtos_core_3() -> None:
    script = """
sleep 1
nproc
cat /sys/devices/system/cpu/online
cd /sys/bus/platform/devices/tandem/core3
cat policy switches_to_linux rtos_releases
"""
    r = run(script, config=load_config("heteroos"), timing=Timing("virtual"))
    assert r.lines[:4] == ["3", "0-2", "rtos", "0"], "core 3 never ran Linux"
    assert int(r.lines[4]) >= 900
    secure = r.secure_log.read_text()
    assert "core policies: [Linux, Linux, Linux, Rtos]" in secure
    assert list(rtos_status.last(secure).cores) == [3]


def test_linux_only_runs_no_rtos() -> None:
    r = run("nproc", config=load_config("linux-only"))
    assert r.output == "4"
    secure = r.secure_log.read_text()
    assert "core policies: [Linux, Linux, Linux, Linux]" in secure
    assert "rtos/" not in secure


def test_linux_sees_rtos_statistics_in_sysfs_and_tandem_top() -> None:
    script = """
sleep 2
cd /sys/bus/platform/devices/tandem
for d in core?; do echo "$d"; done
for f in policy rtos_releases deadline_misses switches_to_rtos switches_to_linux rtos_busy_us; do
    echo "$f $(cat core1/$f)"
done
tandem-top -n 1
"""
    r = run(script, timing=Timing("virtual"))
    assert r.lines[:4] == ["core0", "core1", "core2", "core3"]
    values = dict(line.split() for line in r.lines[4:10])
    assert values["policy"] == "shared"
    assert int(values["rtos_releases"]) >= 1900 and int(values["deadline_misses"]) == 0
    assert int(values["switches_to_rtos"]) >= 1000 and int(values["switches_to_linux"]) >= 1000
    assert 0 < int(values["rtos_busy_us"]) < 1_000_000
    assert r.lines[10] == "Linux generation 1 (0 restarts while the RTOS ran on)"
    top = r.lines[11:]
    assert top[0].split()[:3] == ["core", "policy", "rtos-load"]
    assert len(top) == 5 and all(row.split()[1] == "shared" for row in top[1:])
    assert all(990 <= float(row.split()[3]) <= 1010 for row in top[1:]), top


def test_bench_latency_single_core_is_the_bare_path(tmp_path: Path) -> None:
    """One core, virtual timing: Linux idle or busy, the RTOS's timer
    interrupt reaches its handler in the same few hundred instructions."""
    settings = {"smp": 1, "idle_seconds": 1, "hackbench_loops": 60, "min_samples": 500}
    out = exp.run("latency", False, {"timing": "virtual", **settings}, out_root=tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmark"] == "latency" and summary["timing"] == "virtual"
    idle, loaded = summary["phases"]
    assert (idle["load"], loaded["load"]) == ("idle", "hackbench")
    for phase in (idle, loaded):
        assert phase["samples"] >= 500
        assert 0 < phase["min_us"] <= phase["avg_us"] <= phase["max_us"] <= 5.0
        assert phase["beyond_histogram"] == 0
    assert loaded["max_us"] <= 2 * idle["max_us"]
    rows = (out / "histograms.csv").read_text().splitlines()
    assert rows[0] == "load,latency_ns,count" and len(rows) >= 3


def test_bench_switch_counts_both_directions_within_110_instructions(tmp_path: Path) -> None:
    # Issue 50's bound, each way: the YIELD fast path, EL1 registers moved
    # in pairs, the RTOS's settings saved off the switch's path
    # (docs/monitor.md, "What a switch costs").
    out = exp.run("switch", False, {"timing": "virtual", "smp": 1}, out_root=tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    for direction in ("linux_to_rtos", "rtos_to_linux"):
        d = summary[direction]
        assert d["samples"] >= 500, d
        assert 50 <= d["median_instructions"] <= 110, d
        assert sum(d["median_path"].values()) == d["median_instructions"]


def _children(pid: int) -> list[int]:
    """The direct children of `pid`, from /proc."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found


def test_sigterm_of_the_harness_takes_qemu_with_it() -> None:
    root = Path(__file__).resolve().parents[2]
    harness = subprocess.Popen(
        [str(root / "tandem"), "exec", "--timing", "virtual", "--", "sleep 600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    qemu: list[int] = []
    deadline = time.monotonic() + 300
    while not qemu and time.monotonic() < deadline:
        time.sleep(0.5)
        # ./tandem is a shell script that execs Python: the harness's own pid.
        qemu = [
            c
            for c in _children(harness.pid)
            if "qemu-system" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")
        ]
    assert qemu, "QEMU never started"
    time.sleep(2)
    harness.send_signal(signal.SIGTERM)
    assert harness.wait(timeout=30) == 130
    time.sleep(0.5)
    assert not Path(f"/proc/{qemu[0]}").exists(), "QEMU outlived the harness"
