"""Boards as data (issue 37): both board files load, and what the harness
takes from them: serial ports, Linux's console, the tree's node paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import dtb, qemu_command
from tandem.platform.board import _serials, boards, load_board
from tandem.platform.boot import BootOptions, bootargs
from tandem.platform.paths import FIRMWARE, firmware
from tandem.platform.timing import Timing


def test_both_boards_load() -> None:
    assert {"qemu-virt", "imx8mp-evk"} <= set(boards())
    virt, imx = load_board("qemu-virt"), load_board("imx8mp-evk")
    assert virt.linux_dtb is None and virt.linux_console == "ttyAMA0"
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
    imx = bootargs(BootOptions(board="imx8mp-evk"), None)
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
