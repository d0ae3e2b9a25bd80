"""Boards as data (issue 37): both board files load, and what the harness
takes from them: serial ports, Linux's console, the tree's node paths, the
firmware a boot, a bench, gdb and a run's provenance use."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tandem import exp, provenance
from tandem.errors import TandemError
from tandem.exp import ctxsw, scenario
from tandem.platform import dtb, gdb, paths, qemu_command
from tandem.platform.board import _serials, boards, load_board
from tandem.platform.boot_inputs import bootargs
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import load_config
from tandem.platform.paths import FIRMWARE, firmware
from tandem.platform.timing import Timing, modes_words


def test_both_boards_load() -> None:
    assert {"qemu-virt", "imx8mp-evk"} <= set(boards())
    virt, imx = load_board("qemu-virt"), load_board("imx8mp-evk")
    assert virt.linux_dtb is None and virt.linux_console == "ttyAMA0"
    assert virt.secure_ram.base == 0x0E00_0000 and imx.secure_ram.base == 0x4000_0000
    assert imx.linux_dtb == "freescale/imx8mp-evk.dtb"
    assert imx.max_cores == 4 and imx.counter_hz == 8_000_000
    # Linux's RAM lies past the Secure-only window of QEMU patch 0008.
    assert imx.normal_ram.base >= 0x4100_0000
    assert imx.normal_ram.base <= imx.shared.base < imx.normal_ram.end


def test_serial_ports_follow_the_board() -> None:
    def serials(board: str) -> list[str]:
        argv = qemu_command.boot_argv(
            load_board(board), 4, Timing("percore"), Path("fw"), [], Path("s.log"), False
        )
        return [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"]

    assert serials("qemu-virt") == ["stdio", "file:s.log"]
    assert serials("imx8mp-evk") == ["null", "stdio", "null", "file:s.log"]


def test_serial_roles_checked() -> None:
    with pytest.raises(TandemError, match="one 'normal' and one 'secure'"):
        _serials({"serials": ["normal", "normal"]}, "x")
    with pytest.raises(TandemError, match="one 'normal' and one 'secure'"):
        _serials({"serials": ["normal", "secure", "spare"]}, "x")


def test_bootargs_name_the_boards_console() -> None:
    assert bootargs(BootOptions(), None).startswith("console=ttyAMA0 earlycon ")
    imx = bootargs(BootOptions(board=load_board("imx8mp-evk")), None)
    assert imx.startswith("console=ttymxc1 earlycon=ec_imx6q,0x30890000 ")


def test_firmware_per_board() -> None:
    assert firmware("qemu-virt") == FIRMWARE
    assert firmware("imx8mp-evk").parts[-3:] == ("boards", "imx8mp-evk", "tandem-firmware.bin")


def test_node_paths() -> None:
    dts = "\n".join(
        [
            "/dts-v1/;",
            "",
            "/ {",
            "\tmemory@40000000 {",
            "\t};",
            "\tsoc@0 {",
            "\t\tbus@30800000 {",
            "\t\t\tuart4: serial@30a60000 {",
            '\t\t\t\tstatus = "okay";',
            "\t\t\t};",
            "\t\t};",
            "\t};",
            "};",
        ]
    )
    paths = dtb.node_paths(dts)
    assert paths["memory@40000000"] == "/memory@40000000"
    assert paths["serial@30a60000"] == "/soc@0/bus@30800000/serial@30a60000"


def test_no_cpu_map_to_delete_where_the_tree_has_none() -> None:
    board = load_board("imx8mp-evk")
    with_map = dtb.tandem_fragment(board, 4, [0, 1, 2], "x", 16)
    without = dtb.tandem_fragment(board, 4, [0, 1, 2], "x", 16, cpu_map=False)
    assert "/delete-node/ &{/cpus/cpu-map};" in with_map
    assert "cpu-map" not in without
    assert "/delete-node/ &{/cpus/cpu@3};" in without


def _fake_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A build directory with a firmware image (and its ELFs) for each board,
    each image different."""
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    monkeypatch.setattr(paths, "FIRMWARE", tmp_path / "firmware" / "tandem-firmware.bin")
    images = {}
    for name in ("qemu-virt", "imx8mp-evk"):
        image = paths.firmware(name)
        image.parent.mkdir(parents=True)
        image.write_bytes(name.encode() * 64)
        for elf in ("tandem-monitor", "tandem-rtos"):
            paths.firmware_elf(name, elf).write_bytes(b"\x7fELF")
        images[name] = image
    return images


def test_provenance_digests_the_firmware_of_the_board_booted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = _fake_builds(tmp_path, monkeypatch)
    monkeypatch.setattr(provenance, "_qemu", lambda: {})
    for name, image in images.items():
        stamp = provenance.collect([BootOptions(board=load_board(name), timing=Timing("percore"))])
        assert stamp["board"] == name
        assert stamp["firmware_sha256"] == hashlib.sha256(image.read_bytes()).hexdigest()[:16]
    assert provenance.collect([BootOptions()])["board"] == "qemu-virt"


def test_a_runs_board_is_its_boots(tmp_path: Path) -> None:
    def boot(board: str) -> BootOptions:
        return BootOptions(board=load_board(board))

    assert provenance.board_of([boot("imx8mp-evk"), boot("imx8mp-evk")]).name == "imx8mp-evk"
    with pytest.raises(TandemError, match="on one board"):
        provenance.board_of([])
    with pytest.raises(TandemError, match="on one board"):
        provenance.board_of([boot("imx8mp-evk"), boot("qemu-virt")])


def test_bench_switch_boots_the_board_asked_with_its_firmwares_symbols(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch = exp.get("switch")
    s = scenario.load("switch", switch.schema, overrides={"board": "imx8mp-evk"})
    (unit,) = switch.units(s)
    assert unit.options.board.name == "imx8mp-evk" and unit.options.linux_idle == "wfi"
    assert unit.instrument is not None
    # Without the board's ELFs the boot is refused before QEMU starts.
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    with pytest.raises(TandemError, match=r"boards/imx8mp-evk/tandem-monitor\.elf missing"):
        unit.instrument()
    _fake_builds(tmp_path, monkeypatch)
    args = unit.instrument()
    # QEMU logs the EVK's monitor (its flash) and RTOS (its RAM), not virt's.
    d = args[args.index("-dfilter") + 1]
    assert d.startswith("0x8000000..") and "0x40100000.." in d, d


def test_gdb_loads_the_symbols_of_the_board_booted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_builds(tmp_path, monkeypatch)
    kernel = tmp_path / "linux" / "arch" / "arm64" / "boot" / "Image"
    gdb.vmlinux_for(kernel).parent.mkdir(parents=True)
    gdb.vmlinux_for(kernel).write_bytes(b"")
    files = gdb.symbol_files(kernel, False, "imx8mp-evk")
    assert files[:2] == [
        tmp_path / "boards" / "imx8mp-evk" / "tandem-monitor.elf",
        tmp_path / "boards" / "imx8mp-evk" / "tandem-rtos.elf",
    ]


def test_the_shell_takes_whichever_console_linux_has() -> None:
    """rootfs/inittab names no board's console: busybox's cttyhack opens
    the one Linux's console= names (ttyAMA0 on virt, ttymxc1 on the EVK)
    as the shell's controlling terminal."""
    text = (paths.ROOT / "rootfs" / "inittab").read_text()
    entries = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert [e for e in entries if ":respawn:" in e] == ["::respawn:/bin/cttyhack /bin/sh -l"]
    for name in boards():
        assert load_board(name).linux_console not in "\n".join(entries), name


def test_provenance_reads_the_timing_and_configurations_from_the_boots() -> None:
    host = BootOptions(timing=Timing("host"), config=load_config("linux-only"))
    percore = BootOptions(timing=Timing("percore", 1000))
    modelled = BootOptions(timing=Timing("percore", 5000, "a53"))
    assert provenance.timing_of([host]) == {"modes": ["host"]}
    assert provenance.timing_of([host, percore]) == {
        "modes": ["host", "percore"],
        "quantum_ns": 1000,
        "causal": "lamport",
        "memmodel": "none",
    }
    assert provenance.timing_of([percore, modelled]) == {
        "modes": ["percore"],
        "quantum_ns": [1000, 5000],
        "causal": "lamport",
        "memmodel": ["a53", "none"],
    }
    words = modes_words({"provenance": {"timing": provenance.timing_of([host, percore])}})
    assert words == "host, percore (Q = 1000 ns)"
    # The claims table names the memory profile beside the mode (issue 49).
    one = {"provenance": {"timing": provenance.timing_of([modelled])}}
    assert modes_words(one).endswith("), memory model a53")
    both = {"provenance": {"timing": provenance.timing_of([percore, modelled])}}
    assert modes_words(both).endswith("), memory models a53, none")
    # Runs stamped before: the scenario's keys named after timing.
    old = {"provenance": {"timing": {"timing": "percore", "quantum_ns": 1000}}}
    assert modes_words(old) == "percore (Q = 1000 ns)"


def test_an_experiment_runs_on_the_board_asked_or_is_refused_before_booting(
    tmp_path: Path,
) -> None:
    """`exp run NAME --board B`: the scenario's board, read once, is every
    boot's and what the experiment takes from a board (here ctxsw's QEMU
    log filter: the RTOS's RAM); a run whose boots cannot be made on the
    board is refused before the first, saying which and why."""
    evk = load_board("imx8mp-evk")
    s = scenario.load("ctxsw", exp.get("ctxsw").schema, quick=True, overrides={"board": evk.name})
    assert s.board == evk
    boots = exp.get("ctxsw").units(s)
    assert boots and all(b.options.board == evk for b in boots)
    exp.check_boots("ctxsw", s, boots)
    assert ctxsw.rtos_code(evk).startswith(f"{evk.rtos_ram.base:#x}..")
    with pytest.raises(TandemError, match="board = 'nowhere' is not allowed"):
        scenario.load("ctxsw", exp.get("ctxsw").schema, overrides={"board": "nowhere"})
    # The domains experiment's DualUnix needs the EL2 layer's partitions,
    # whose devices the EVK's board file does not have.
    d = scenario.load("domains", exp.get("domains").schema, overrides={"board": evk.name})
    with pytest.raises(TandemError, match=r"domains cannot run on board imx8mp-evk: its boot "):
        exp.check_boots("domains", d, exp.get("domains").units(d))
    with pytest.raises(TandemError, match="without an ITS"):
        load_config("dualunix").check_on(evk)
