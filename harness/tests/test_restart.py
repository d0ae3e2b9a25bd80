"""Linux restarts, powers off and panics without touching the RTOS (issue 20):
the monitor stops Linux on every core, copies its images from secure flash
again and starts it on the boot core, while the RTOS's cyclic jobs run on.
In QEMU, per-core timing, so that a missed release would be the system's,
not the host's."""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path

import pytest

from tandem import exp
from tandem.errors import TandemError
from tandem.exp.restart.spec import METHODS
from tandem.platform import abi_generated as abi
from tandem.platform import flash, rtos_status
from tandem.platform.board import load_board
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import PlatformConfig, load_config
from tandem.platform.console import PROMPT, Console
from tandem.platform.timing import Timing

SYSFS = "/sys/bus/platform/devices/tandem"
HOSTILE = "/sys/kernel/debug/tandem-hostile"


def percore(**options: object) -> BootOptions:
    return BootOptions(timing=Timing("percore"), **options)  # type: ignore[arg-type]


def assert_rtos_ran_on(secure_log: str) -> None:
    """No release missed on any core, and none lost: the demo's 1 ms jobs
    number 1 000 per core per second of the RTOS's status."""
    rtos_status.check_ran_on(rtos_status.last(secure_log))


# --- on the host -------------------------------------------------------------


def test_flash_holds_the_firmware_config_and_linux_images(tmp_path: Path) -> None:
    board = load_board()
    images = (
        flash.Image("kernel", (b"K" * 100,), board.kernel),
        flash.Image("device tree", (b"D" * 10,), board.dtb),
        flash.Image("initramfs", (b"I" * 7, b"J" * 5), board.initrd),
    )
    out = flash.write(board, b"F" * 64, b"C" * 32, b"W" * 16, images, tmp_path / "f.bin")
    data = out.read_bytes()
    base = board.secure_flash.base
    assert data[:64] == b"F" * 64
    assert data[board.boot_config - base :][:32] == b"C" * 32
    assert data[board.boot_config - base + abi.WORKLOAD_OFFSET :][:16] == b"W" * 16
    header = data[board.linux_images - base :]
    magic, version, _ = struct.unpack_from("<QII", header)
    assert (magic, version) == (abi.LINUX_IMAGES_MAGIC, abi.LINUX_IMAGES_VERSION)
    parts = [
        struct.unpack_from("<QQQ", header, abi.LINUX_IMAGES_OFF_KERNEL + 24 * i) for i in range(3)
    ]
    assert [(size, load) for _, size, load in parts] == [
        (100, board.kernel),
        (10, board.dtb),
        (12, board.initrd),
    ]
    assert all(offset % 0x1000 == 0 for offset, _, _ in parts)
    assert header[parts[2][0] :][:12] == b"I" * 7 + b"J" * 5


def test_flash_refuses_what_does_not_fit(tmp_path: Path) -> None:
    board = load_board()
    small = (
        flash.Image("kernel", (b"K",), board.kernel),
        flash.Image("device tree", (b"D",), board.dtb),
        flash.Image("initramfs", (b"I",), board.initrd),
    )
    room = board.boot_config - board.secure_flash.base
    with pytest.raises(TandemError, match="the board leaves"):
        flash.write(board, bytes(room + 1), b"", b"", small, tmp_path / "f.bin")
    huge = (small[0], small[1], flash.Image("initramfs", (bytes(64 << 20),), board.initrd))
    with pytest.raises(TandemError, match=r"Linux's images need .* initramfs 64.0 MiB"):
        flash.write(board, b"F", b"", b"", huge, tmp_path / "f.bin")


def test_linux_off_policy_from_the_configuration(tmp_path: Path) -> None:
    def feature_bits(config: PlatformConfig, linux_off: str | None = None) -> int:
        blob = config.boot_blob(4, linux_off=linux_off)
        return int(struct.unpack_from("<I", blob, 24)[0])

    tandem = load_config("tandem")
    assert tandem.linux_off == "rtos-runs-on"
    assert feature_bits(tandem) == 0
    assert feature_bits(tandem, "machine-off") == 2
    assert load_config("linux-only").linux_off == "machine-off"
    with pytest.raises(TandemError, match="want one of"):
        feature_bits(tandem, "reboot")
    (tmp_path / "bad.toml").write_text('linux_off = "halt"\n')
    with pytest.raises(TandemError, match="linux_off 'halt'"):
        load_config("bad", tmp_path)


# --- in QEMU -----------------------------------------------------------------

GENERATION = f"""
g=$(cat {SYSFS}/linux_generation)
echo "generation $g boot $(cat {SYSFS}/boot_count) cores $(nproc)"
"""


@pytest.mark.qemu
def test_reboot_restarts_linux_alone_from_pristine_images() -> None:
    # The first Linux has freed and reused its initramfs's RAM and its
    # kernel's init sections by now: the second can only start from the
    # copies in secure flash.
    script = GENERATION + 'if [ "$g" = 1 ]; then sleep 1; reboot -f; fi\n'
    r = run_exec(percore(), script, timeout_s=600)
    assert r.reboots == 1, r.console_log
    assert r.lines == ["generation 1 boot 1 cores 4", "generation 2 boot 1 cores 4"]
    secure = r.secure_log.read_text()
    assert "Linux restarts (generation 2); the RTOS ran on" in secure
    assert secure.count("Tandem monitor") == 1, "the machine was not reset"
    assert_rtos_ran_on(secure)


@pytest.mark.qemu
def test_a_linux_that_scribbles_restarts_from_the_secure_copies() -> None:
    # A hostile Linux writes over its device tree in normal RAM (where the
    # monitor put it at cold boot) and tries the boot configuration's page
    # in secure flash, then reboots. The restart must come from flash: with
    # the RAM copy the new Linux would find no device tree; with a writable
    # configuration it would find junk (and the monitor would refuse it).
    board = load_board()
    junk = " ".join(["0xdeadbeef"] * 4)
    script = GENERATION + (
        'if [ "$g" = 1 ]; then\n'
        f"  i=0; for v in {junk}; do devmem $(({board.dtb:#x} + i)) 32 $v; i=$((i + 4)); done\n"
        f'  echo "dtb now $(devmem {board.dtb:#x} 32)"\n'
        f"  devmem {board.boot_config:#x} 32 0xdeadbeef\n"
        '  echo "config write status $?"\n'
        "  sleep 1; reboot -f\n"
        "fi\n"
        # The RTOS's next status line covers the restart.
        "sleep 1.2\n"
    )
    r = run_exec(percore(), script, timeout_s=600)
    assert "dtb now 0xDEADBEEF" in r.lines, r.lines
    assert "config write status 135" in r.lines, "secure flash must not be reachable (SIGBUS)"
    assert r.reboots == 1, r.console_log
    assert r.lines[-1] == "generation 2 boot 1 cores 4"
    secure = r.secure_log.read_text()
    assert "Linux restarts (generation 2); the RTOS ran on" in secure
    assert secure.count("Tandem monitor") == 1, "the machine was not reset"
    assert_rtos_ran_on(secure)


@pytest.mark.qemu
def test_a_disk_read_in_flight_at_a_restart_lands_before_the_images_are_copied() -> None:
    # A hostile Linux aims a virtio-blk read of its (blank) disk at the page
    # its device tree lies in, with the disk throttled to 16 KiB/s so that
    # the read waits in QEMU for some 15 s behind a 256 KiB one, and
    # restarts at once without shutting its devices down (sysrq b, as a
    # panic does; `reboot -f` resets them: Debian's 6.1 has the virtio
    # bus's shutdown). Unless the monitor resets the device before it
    # copies the images (QEMU then drains the read into the old Linux's
    # RAM, which the copy overwrites), the read lands in the new Linux's
    # device tree when that Linux's virtio driver resets the device: zeros
    # at its start.
    board = load_board()
    script = GENERATION + (
        'if [ "$g" = 1 ]; then\n'
        "  insmod /lib/modules/tandem_hostile.ko\n"
        f"  echo '{board.dtb:#x} 256' > {HOSTILE}/dma_read\n"
        '  echo "dma_read status $?"\n'
        "  echo b > /proc/sysrq-trigger\n"
        "fi\n"
        f'echo "dtb now $(devmem {board.dtb:#x} 32)"\n'
    )
    r = run_exec(percore(disk_mib=64, disk_bps=16384), script, timeout_s=600)
    assert "dma_read status 0" in r.lines, r.lines
    assert r.reboots == 1, r.console_log
    assert r.lines[-2:] == ["generation 2 boot 1 cores 4", "dtb now 0xEDFE0DD0"], r.lines
    secure = r.secure_log.read_text()
    assert "Linux: reset 1 virtio-mmio device(s) before copying its images" in secure
    assert secure.index("reset 1 virtio-mmio") < secure.index("Linux restarts (generation 2)")
    assert_rtos_ran_on(secure)


@pytest.mark.qemu
def test_a_panic_restarts_linux_and_exec_fails_on_one_it_did_not_expect() -> None:
    script = GENERATION + 'if [ "$g" = 1 ]; then sleep 1; echo c > /proc/sysrq-trigger; fi\n'
    r: ExecResult = run_exec(percore(), script, timeout_s=600, panics=True)
    assert r.reboots == 1
    assert r.lines[-1] == "generation 2 boot 1 cores 4"
    assert "Kernel panic - not syncing: sysrq triggered crash" in r.console_log.read_text()
    assert_rtos_ran_on(r.secure_log.read_text())
    with pytest.raises(TandemError, match=r"(?s)Linux panicked:.*sysrq triggered crash") as info:
        run_exec(percore(), "echo c > /proc/sysrq-trigger\nsleep 100\n", timeout_s=600)
    # At once, in guest time: the RTOS runs on after Linux's panic, so its
    # uptime when exec ended says how long exec waited (the host's time
    # moves with its load and is no measure of the guest).
    paths = re.search(r"\(console: (\S+), secure: (\S+)\)", str(info.value))
    assert paths, str(info.value)
    console = Path(paths[1]).read_text(errors="replace")
    panicked = re.search(r"\[\s*(\d+\.\d+)\] Kernel panic - not syncing", console)
    assert panicked, "no stamped panic line"
    # The RTOS prints its uptime once a second: none yet means exec ended
    # within the first second.
    statuses = rtos_status.parse(Path(paths[2]).read_text())
    ended = statuses[-1].seconds if statuses else 0
    assert ended - float(panicked[1]) <= 5.0, ("a panic must end exec at once", ended, panicked[0])


@pytest.mark.qemu
def test_poweroff_leaves_the_rtos_running_by_default_and_run_restarts_linux() -> None:
    with Console(percore()) as console:
        console.expect(PROMPT, 120)
        assert console.command(f"cat {SYSFS}/linux_generation").strip() == "1"
        console.send("reboot")
        console.expect("Booting Linux", 60)
        console.expect(PROMPT, 120)
        assert console.command(f"cat {SYSFS}/linux_generation").strip() == "2"
        assert console.command(f"cat {SYSFS}/boot_count").strip() == "1"
        console.send("poweroff")
        log = console.secure_expect("Linux asked to power off", 60)
        before = rtos_status.last(log).seconds
        # The RTOS runs on: its status keeps coming, with nothing missed.
        # (The host-time deadline only ends a hung wait; two guest seconds
        # of an idle machine take a few host seconds.)
        deadline = time.monotonic() + 600
        while rtos_status.last(console.secure_log.read_text()).seconds < before + 2:
            assert time.monotonic() < deadline, "the RTOS stopped with Linux"
            assert console.proc.poll() is None, "the machine powered off"
            time.sleep(0.5)
        assert_rtos_ran_on(console.secure_log.read_text())


@pytest.mark.qemu
def test_poweroff_can_end_the_machine() -> None:
    r = run_exec(percore(linux_off="machine-off"), "true", timeout_s=600)
    assert r.qemu_status == 0 and "system off" in r.secure_log.read_text()
    r = run_exec(percore(linux_off="rtos-runs-on"), "true", timeout_s=600)
    assert "Linux asked to power off" in r.secure_log.read_text()


@pytest.mark.qemu
def test_restart_bench_reports_every_restart(tmp_path: Path) -> None:
    """`bench restart` is `exp run restart` (issue 48): two restarts."""
    out = exp.run("restart", True, {"count": 2, "load_ms": 50}, out_root=tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert [r["method"] for r in summary["restarts"]] == list(METHODS[:2])
    assert summary["rtos_missed_total"] == 0
    for r in summary["restarts"]:
        assert 0 < r["host_stop_s"] < r["host_s"] and r["host_boot_s"] > 0
        assert r["monitor_ms"] > 0 and 0 < r["linux_uptime_s"] < 5
    assert summary["provenance"]["timing"] == {
        "modes": ["percore"],
        "quantum_ns": 1000,
        "causal": "lamport",
        "memmodel": "none",
    }
    for name in ("report.md", "restarts.csv", "restart.png", "raw.tar.xz"):
        assert (out / name).stat().st_size > 0, name
