"""Capacity-aware Linux (paper 000 §4): static capacities in the device tree,
stolen time through the monitor's Arm PV time. Host tests of the harness side;
QEMU tests (marker `qemu`) that Linux sees both."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tandem import cli
from tandem.errors import TandemError
from tandem.platform import capacity, dtb
from tandem.platform.board import load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload
from tandem.platform.timing import Timing

HALF_ON_1 = Workload(core=1, period_us=1000, work_us=500)

BASE_DTS = """/dts-v1/;
/ {
	#address-cells = <2>;
	#size-cells = <2>;
	cpus {
		#address-cells = <1>;
		#size-cells = <0>;
		cpu-map { cluster0 { core0 { cpu = <&c0>; }; core1 { cpu = <&c1>; };
			core2 { cpu = <&c2>; }; }; };
		c0: cpu@0 { device_type = "cpu"; reg = <0>; };
		c1: cpu@1 { device_type = "cpu"; reg = <1>; };
		c2: cpu@2 { device_type = "cpu"; reg = <2>; };
	};
	chosen { };
};
"""


def test_static_capacity_is_what_the_rtos_leaves() -> None:
    assert capacity.static_capacities(HALF_ON_1, [0, 1, 2, 3]) == {
        0: 1024,
        1: 512,
        2: 1024,
        3: 1024,
    }
    assert capacity.static_capacities(None, [0, 1]) == {0: 1024, 1: 1024}, "demo: 1024"
    alternating = Workload(core=0, period_us=1000, work_us=200, alt_work_us=800, alt_every_ms=50)
    assert capacity.static_capacities(alternating, [0]) == {0: 205}, "the larger work"
    nearly_all = Workload(core=0, period_us=100_000, work_us=99_999)
    assert capacity.static_capacities(nearly_all, [0]) == {0: 1}, "never 0"


def test_modes() -> None:
    assert [m for m in capacity.MODES if capacity.uses_static(m)] == ["static", "both"]
    assert [m for m in capacity.MODES if capacity.uses_steal(m)] == ["steal", "both"]
    with pytest.raises(TandemError, match="--capacity must be one of"):
        capacity.check("dynamic")
    args = cli.parser().parse_args(["exec", "--capacity", "both", "--workload", "1:1000:500"])
    assert args.capacity == "both" and args.workload == HALF_ON_1
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["exec", "--workload", "1:1000"])


def _merged(tmp_path: Path, fragment: str) -> str:
    source = tmp_path / "t.dts"
    source.write_text(BASE_DTS + fragment)
    blob = tmp_path / "t.dtb"
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", blob, source], check=True)
    return subprocess.run(
        ["dtc", "-q", "-I", "dtb", "-O", "dts", blob], capture_output=True, check=True
    ).stdout.decode()


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_capacities_reach_the_cpu_nodes(tmp_path: Path) -> None:
    caps = {0: 1024, 1: 512, 2: 1024}
    text = _merged(tmp_path, dtb.tandem_fragment(load_board(), 3, [0, 1, 2], "x", 16, caps))
    found = re.findall(r"cpu@(\d) \{[^}]*?capacity-dmips-mhz = <(0x[0-9a-f]+)>", text)
    assert {int(c): int(v, 16) for c, v in found} == caps
    assert text.count("core2 {") == 1, "QEMU's topology map kept"


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_capacities_get_a_topology_map_when_cores_are_removed(tmp_path: Path) -> None:
    # Linux reads capacities only while walking cpu-map: removing core 1
    # (RTOS only) must leave a map of cores 0 and 2, pointing at them.
    caps = {0: 1024, 2: 512}
    text = _merged(tmp_path, dtb.tandem_fragment(load_board(), 3, [0, 2], "x", 16, caps))
    assert "cpu@1" not in text
    assert "cpu-map" in text and "core1 {" in text and "core2 {" not in text
    phandles = dict(re.findall(r"(cpu@\d) \{[^}]*?phandle = <(0x[0-9a-f]+)>", text))
    mapped = re.findall(r"core\d \{\s*cpu = <(0x[0-9a-f]+)>", text)
    assert mapped == [phandles["cpu@0"], phandles["cpu@2"]]
    with pytest.raises(TandemError, match="capacities for cores"):
        dtb.tandem_fragment(load_board(), 3, [0, 2], "x", 16, {0: 1024})


# --- QEMU -----------------------------------------------------------------------

# Seconds of CPU-bound Linux load on core 1 while steal is measured.
LOAD_S = 2

# /proc/stat cpu lines (jiffies: USER_HZ 100) and the RTOS's busy time over
# 1 s of Linux idle, then over a CPU-bound loop pinned on core 1. Virtual
# timing: 1 instruction = 1 ns, so the RTOS meets every release and nothing
# but the RTOS steals.
STEAL_SCRIPT = f"""
snap() {{
  grep '^cpu[0-9]' /proc/stat
  for c in 0 1; do echo "busy$c $(cat /sys/bus/platform/devices/tandem/core$c/rtos_busy_us)"; done
  echo "uptime $(cut -d' ' -f1 /proc/uptime)"
}}
sleep 1
echo @@idle; snap
sleep 1
echo @@idle-end; snap
taskset -c 1 sh -c 'while :; do :; done' &
LOOP=$!
sleep 1
echo @@before; snap
sleep {LOAD_S}
echo @@after; snap
kill $LOOP
"""


def _snapshot(text: str) -> dict[str, float]:
    """steal jiffies per cpu, RTOS busy µs per core, uptime, from one snap."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if re.fullmatch(r"cpu\d", fields[0]):
            # user nice system idle iowait irq softirq steal ...
            out[f"steal{fields[0][3:]}"] = float(fields[8])
            out[f"total{fields[0][3:]}"] = float(sum(int(f) for f in fields[1:9]))
        elif fields[0].startswith("busy") or fields[0] == "uptime":
            out[fields[0]] = float(fields[1])
    return out


def _steal_run(mode: str) -> list[dict[str, float]]:
    """Snapshots: idle start, idle end, load start, load end."""
    r = run_exec(
        BootOptions(timing=Timing("virtual"), smp=2, workload=HALF_ON_1, capacity=mode),
        STEAL_SCRIPT,
        timeout_s=600,
    )
    assert r.status == 0, r.output
    parts = re.split(r"@@(?:idle|idle-end|before|after)\n", r.output)[1:]
    assert len(parts) == 4, r.output
    return [_snapshot(p) for p in parts]


def _fractions(before: dict[str, float], after: dict[str, float], core: int) -> tuple[float, float]:
    """(steal fraction from /proc/stat, RTOS busy fraction) over the interval."""
    wall_us = (after["uptime"] - before["uptime"]) * 1e6
    steal = (after[f"steal{core}"] - before[f"steal{core}"]) / (
        after[f"total{core}"] - before[f"total{core}"]
    )
    busy = (after[f"busy{core}"] - before[f"busy{core}"]) / wall_us
    return steal, busy


@pytest.mark.qemu
def test_static_capacity_in_sysfs() -> None:
    r = run_exec(
        BootOptions(timing=Timing("virtual"), workload=HALF_ON_1, capacity="static"),
        "cat /sys/devices/system/cpu/cpu[0-3]/cpu_capacity",
        timeout_s=600,
    )
    assert r.status == 0, r.output
    assert r.output.split() == ["1024", "512", "1024", "1024"]


@pytest.mark.qemu
def test_steal_follows_the_rtos_load() -> None:
    idle, idle_end, before, after = _steal_run("steal")
    steal1, busy1 = _fractions(before, after, 1)
    steal0, _ = _fractions(before, after, 0)
    idle_steal1, idle_busy1 = _fractions(idle, idle_end, 1)
    print(
        f"loaded core 1: steal {steal1:.3f}, RTOS busy {busy1:.3f}; core 0: steal "
        f"{steal0:.3f}; idle core 1: steal {idle_steal1:.3f}, RTOS busy {idle_busy1:.3f}"
    )
    assert 0.4 < busy1 < 0.6, "the workload takes half of core 1"
    assert abs(steal1 - busy1) <= 0.05
    assert steal0 <= 0.01, "no RTOS load on core 0, no steal"
    # The RTOS takes as much of an idle core, but Linux had nothing to run.
    assert idle_busy1 > 0.4
    assert idle_steal1 <= 0.01, "nothing stolen from an idle Linux"


@pytest.mark.qemu
def test_no_steal_when_off() -> None:
    _, _, before, after = _steal_run("static")
    assert after["steal0"] == after["steal1"] == 0
    _, busy1 = _fractions(before, after, 1)
    assert busy1 > 0.4, "the RTOS still ran"
