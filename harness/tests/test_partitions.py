"""Host tests of partitions (DualUnix, docs/hyp.md): the configuration, the
partition table the monitor and the EL2 layer read, each Linux's device
tree, the flash with several Linux's images, QEMU's command line."""

from __future__ import annotations

import dataclasses
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import abi_generated as abi
from tandem.platform import dtb, flash, qemu_command
from tandem.platform.board import load_board
from tandem.platform.configs import load_config
from tandem.platform.paths import ROOT
from tandem.platform.timing import Timing

BOARD = load_board()
HEADER = abi.PARTITIONS_HEADER_SIZE
SIZE = abi.PARTITION_SIZE


def _entry(table: bytes, index: int) -> bytes:
    return table[HEADER + index * SIZE : HEADER + (index + 1) * SIZE]


def _word(entry: bytes, offset: int, fmt: str = "<I") -> int:
    value: int = struct.unpack_from(fmt, entry, offset)[0]
    return value


def test_dualunix_partitions_and_their_table() -> None:
    config = load_config("dualunix")
    a, b = config.partitions_for(4)
    assert (a.name, a.cores, b.name, b.cores) == ("A", (0, 1, 2), "B", (3,))
    assert a.spis(BOARD) == [1, BOARD.doorbell_spi] and b.spis(BOARD) == [48]
    assert b.load(BOARD, BOARD.kernel) == 0x6020_0000
    table = config.partition_table(BOARD, 4, {"A": 0, "B": 0x100}, "B")
    assert len(table) == HEADER + abi.PARTITIONS_MAX * SIZE
    assert struct.unpack_from("<QII", table) == (abi.PARTITIONS_MAGIC, abi.PARTITIONS_VERSION, 2)
    ea, eb = _entry(table, 0), _entry(table, 1)
    assert (ea[0], eb[0], eb[1]) == (ord("A"), ord("B"), 3), "names, B's boot core"
    assert _word(ea, abi.PARTITION_OFF_CORES) == 0b0111
    assert _word(eb, abi.PARTITION_OFF_CORES) == 0b1000
    flags_a, flags_b = (
        _word(ea, abi.PARTITION_OFF_CORES + 4),
        _word(eb, abi.PARTITION_OFF_CORES + 4),
    )
    assert flags_a == abi.PARTITION_FLAG_SHARED_REGION | abi.PARTITION_FLAG_TANDEM
    assert flags_b == abi.PARTITION_FLAG_SHARED_REGION | abi.PARTITION_FLAG_OFF_STOPS_MACHINE
    assert struct.unpack_from("<QQ", eb, abi.PARTITION_OFF_RAM) == (0x6000_0000, 0x1FC0_0000)
    assert _word(eb, abi.PARTITION_OFF_IMAGES, "<Q") == 0x100
    assert struct.unpack_from("<QQ", eb, abi.PARTITION_OFF_DEVICES) == (0x090C_0000, 0x1000)

    def owns(entry: bytes, intid: int) -> bool:
        return bool(_word(entry, abi.PARTITION_OFF_SPIS + intid // 32 * 4) >> (intid % 32) & 1)

    assert owns(ea, 33) and owns(ea, 32 + BOARD.doorbell_spi) and not owns(ea, 80)
    assert owns(eb, 80) and not owns(eb, 33)
    assert config.partition_table(BOARD, 4, {"A": 0, "B": 0x100}, None) != table
    assert load_config("tandem").partition_table(BOARD, 4, {}, None) == b""


def test_rpc_servers_run_on_the_partition_with_tandems_driver() -> None:
    """Issue 46, hole 3: in dualunix-rtos the default server core was core 3,
    B's only core: A's calls and doorbells took it from B. The default is
    A's highest core now, and a server on B's core is refused."""
    config = load_config("dualunix-rtos")
    assert config.default_rpc_cores(4) == (2,)
    assert config.default_rpc_cores(3) == (2,)
    config.check_rpc_cores(4, (0, 1, 2))
    with pytest.raises(TandemError, match="RPC server core 3: with partitions"):
        config.check_rpc_cores(4, (3,))
    with pytest.raises(TandemError, match="RPC server core 3"):
        config.boot_blob(4, rpc_cores=(2, 3))
    mask = struct.unpack_from("<QII8BII", config.boot_blob(4))[-1]
    assert mask == 0b0100
    # Without partitions nothing changes: the highest RTOS core.
    assert load_config("tandem").default_rpc_cores(4) == (3,)
    assert load_config("heteroos").default_rpc_cores(4) == (3,)


def test_partitions_are_refused_on_a_machine_whose_gic_has_an_its() -> None:
    """Issue 31, hole 8c: an ITS would make LPIs, which the EL2 layer hides
    from partitions; QEMU's virt machine has one unless told its=off."""
    config = load_config("dualunix")
    for machine in ("virt,secure=on,virtualization=on,gic-version=3", "virt,its=on"):
        board = dataclasses.replace(BOARD, qemu_machine_el2=machine)
        with pytest.raises(TandemError, match="partitions need a GIC without an ITS"):
            config.partition_table(board, 4, {"A": 0, "B": 0x100}, None)
    assert "its=off" in BOARD.qemu_machine_el2
    assert (
        load_config("tandem").partition_table(
            dataclasses.replace(BOARD, qemu_machine_el2="virt"), 4, {}, None
        )
        == b""
    ), "no partitions: nothing to refuse"


def test_partitions_must_fit_the_machine() -> None:
    config = load_config("dualunix")
    with pytest.raises(TandemError, match="partition B is on cores"):
        config.partitions_for(2)
    assert config.partition(4, "B") is not None
    with pytest.raises(TandemError, match="no partition C"):
        config.partition(4, "C")
    with pytest.raises(TandemError, match="has no partitions"):
        load_config("tandem").partition(4, "B")
    hyp = load_config("tandem-hyp")
    assert hyp.partitions_for(1)[0].cores == (0,), "one core: the partition shrinks"


RAM = "ram = { base = 0x40000000, size = 0x200000 }"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (f"[partitions.a]\ncores = [0]\n{RAM}", "capital"),
        (f"[partitions.A]\ncores = [0, 2]\n{RAM}", "contiguous"),
        ("[partitions.A]\ncores = [0]\nram = { base = 0x40100000, size = 0x200000 }", "2 MiB"),
        (f'[partitions.A]\ncores = [0]\n{RAM}\ndevices = ["x"]', "no device"),
        (f'[partitions.A]\ncores = [0]\n{RAM}\nshared = "yes"', "shared"),
        (f"[partitions.A]\ncores = [0]\n{RAM}\nspis = [3]", "unknown key"),
        (
            f"[partitions.A]\ncores = [0]\n{RAM}\n"
            "[partitions.B]\ncores = [0]\nram = { base = 0x40200000, size = 0x200000 }",
            "another partition",
        ),
    ],
)
def test_bad_partitions_are_refused_with_the_reason(
    tmp_path: Path, table: str, message: str
) -> None:
    (tmp_path / "bad.toml").write_text('default_policy = "linux"\n' + table + "\n")
    with pytest.raises(TandemError, match=message):
        # What needs no board is refused when read, the rest on the board.
        load_config("bad", tmp_path).check_on(BOARD)


# Devices that master the bus, as QEMU's virt machine has them: a virtio
# transport and fw_cfg (its DMA interface), each said to be one (dma).
BUS_MASTERS = """
[partition_devices.virtio0]
base = 0x0A00_0000
size = 0x1000
spis = [16]
node = "virtio_mmio@a000000"
dma = true
[partition_devices.fwcfg]
base = 0x0902_0000
size = 0x1000
spis = []
node = "fw-cfg@9020000"
dma = true
"""


@pytest.mark.parametrize("device", ["virtio0", "fwcfg"])
def test_a_device_that_masters_the_bus_is_refused_in_a_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    """Issue 46, hole 5d: a device that does DMA writes wherever it is told,
    past every stage 2, and the EL2 layer has no SMMU to confine it
    (docs/hyp.md): given to a partition it would reach every other's RAM.
    Refused when the configuration is checked on the board (every boot
    does, before writing anything) and again when its table is made."""
    boards = tmp_path / "boards"
    boards.mkdir()
    text = (ROOT / "boards" / "qemu-virt.toml").read_text()
    (boards / "qemu-virt.toml").write_text(text + BUS_MASTERS)
    board = load_board(directory=boards)
    configs = tmp_path / "configs"
    configs.mkdir()
    dualunix = (ROOT / "configs" / "dualunix.toml").read_text()
    assert 'devices = ["uart2"]' in dualunix
    (configs / "dma.toml").write_text(
        dualunix.replace('devices = ["uart2"]', f'devices = ["uart2", "{device}"]')
    )
    why = f"partition.* device '{device}' masters the bus .*no SMMU"
    with pytest.raises(TandemError, match=why):
        load_config("dma", configs).check_on(board)
    # A configuration let through elsewhere, on a board that has the device.
    config = load_config("dualunix")
    a, b = config.partitions
    config = dataclasses.replace(
        config, partitions=(a, dataclasses.replace(b, devices=("uart2", device)))
    )
    with pytest.raises(TandemError, match=why):
        config.partition_table(board, 4, {"A": 0, "B": 0x100}, None)
    assert board.partition_devices[device].dma and not board.partition_devices["uart2"].dma
    # Said of every device, never assumed.
    (boards / "qemu-virt.toml").write_text(text + BUS_MASTERS.replace("dma = true\n", ""))
    with pytest.raises(TandemError, match=r"virtio0\]: 'dma' must be true or false"):
        load_board(directory=boards)


# The top-level nodes of QEMU's virt tree that matter here, as it dumps them
# (with patch 0005's second Non-secure UART).
QEMU_LIKE = """/dts-v1/;
/ {
\t#address-cells = <2>;
\t#size-cells = <2>;
\tpl011@90c0000 {
\t\treg = <0x00 0x90c0000 0x00 0x1000>;
\t};
\tpl011@9040000 {
\t\treg = <0x00 0x9040000 0x00 0x1000>;
\t};
\tpl011@9000000 {
\t\treg = <0x00 0x9000000 0x00 0x1000>;
\t};
\tpl061@9030000 {
\t\tphandle = <0x8003>;
\t\treg = <0x00 0x9030000 0x00 0x1000>;
\t};
\tgpio-keys {
\t\tpoweroff {
\t\t\tgpios = <0x8003 0x03 0x00>;
\t\t};
\t};
\tintc@8000000 {
\t\treg = <0x00 0x8000000 0x00 0x10000 0x00 0x80a0000 0x00 0xf60000>;
\t};
\tmemory@40000000 {
\t\treg = <0x00 0x40000000 0x00 0x40000000>;
\t};
\tcpus {
\t\t#address-cells = <1>;
\t\t#size-cells = <0>;
\t\tcpu-map { };
\t\tcpu@0 { reg = <0>; };
\t\tcpu@1 { reg = <1>; };
\t\tcpu@2 { reg = <2>; };
\t\tcpu@3 { reg = <3>; };
\t};
\taliases {
\t\tserial2 = "/pl011@90c0000";
\t\tserial1 = "/pl011@9040000";
\t\tserial0 = "/pl011@9000000";
\t};
\tchosen {
\t\tstdout-path = "/pl011@9000000";
\t};
};
"""


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_each_linux_gets_a_tree_of_its_own_partition(tmp_path: Path) -> None:
    config = load_config("dualunix")
    _, b = config.partitions_for(4)
    source = tmp_path / "b.dts"
    source.write_text(QEMU_LIKE + dtb.partition_fragment(BOARD, QEMU_LIKE, 4, b, "x", 4096))
    text = subprocess.run(
        ["dtc", "-q", "-I", "dts", "-O", "dts", source], capture_output=True, check=True
    ).stdout.decode()
    assert "pl011@90c0000" in text and "pl011@9000000" not in text, "its UART only"
    assert "pl011@9040000" not in text and "pl061" not in text and "gpio-keys" not in text
    assert "reg = <0x00 0x60000000 0x00 0x1fc00000>;" in text, "its RAM"
    assert "reg = <0x00 0x8000000 0x00 0x10000 0x00 0x8100000 0x00 0x20000>;" in text
    assert "cpu@3" in text and "cpu@0" not in text and "cpu-map" not in text
    assert 'serial0 = "/pl011@90c0000";' in text and "serial1" not in text
    assert 'stdout-path = "/pl011@90c0000";' in text
    assert 'bootargs = "x tandem_partition=B";' in text
    assert "tandem-shm@" in text and 'compatible = "tandem,tandem"' not in text
    assert f"linux,initrd-start = <{b.load(BOARD, BOARD.initrd):#x}>;" in text
    # A's tree: Tandem's driver, told its own cores' parts of the region only.
    a_frag = dtb.partition_fragment(BOARD, QEMU_LIKE, 4, config.partitions_for(4)[0], "x", 4096)
    assert 'compatible = "tandem,tandem";' in a_frag
    assert "tandem,cores = <0 1 2>;" in a_frag
    with pytest.raises(TandemError, match="does not fit"):
        dtb.partition_fragment(BOARD, QEMU_LIKE, 4, b, "x", b.ram.size)
    with pytest.raises(TandemError, match="no /pl011@90c0000"):
        dtb.partition_fragment(BOARD, QEMU_LIKE.replace("pl011@90c0000", "uart@1"), 4, b, "x", 1)


def test_partitions_share_the_kernel_and_initramfs_in_flash(tmp_path: Path) -> None:
    kernel, initrd = (b"K" * 5000,), (b"I" * 3000,)
    sets = [
        (
            flash.Image("kernel", kernel, base + 0x20_0000),
            flash.Image("device tree", (name * 100,), base + 0x800_0000),
            flash.Image("initramfs", initrd, base + 0x810_0000),
        )
        for name, base in ((b"A", 0x4000_0000), (b"B", 0x6000_0000))
    ]
    out = flash.write(BOARD, b"fw", b"boot", b"wl", sets, tmp_path / "f.bin", b"table")
    data = out.read_bytes()
    at = BOARD.linux_images - BOARD.secure_flash.base
    parts = []
    for n in range(2):
        h = at + flash.header_offset(n)
        assert struct.unpack_from("<Q", data, h)[0] == abi.LINUX_IMAGES_MAGIC
        parts.append([struct.unpack_from("<QQQ", data, h + 16 + 24 * i) for i in range(3)])
        for (offset, size, _), image in zip(parts[n], sets[n], strict=True):
            blob = data[h + offset : h + offset + size]
            assert blob == b"".join(image.chunks)
    # The same kernel bytes for both, each loaded into its own RAM.
    assert parts[0][0][0] == parts[1][0][0] + flash.header_offset(1)
    assert (parts[0][0][2], parts[1][0][2]) == (0x4020_0000, 0x6020_0000)
    config_at = BOARD.boot_config - BOARD.secure_flash.base + abi.PARTITIONS_OFFSET
    assert data[config_at : config_at + 5] == b"table"


def test_partitions_boot_with_el2_and_a_console_each() -> None:
    argv = qemu_command.boot_argv(
        BOARD,
        4,
        Timing("percore"),
        Path("fw"),
        [],
        Path("secure.log"),
        interactive=False,
        consoles=(Path("a.log"), None),
    )
    machine = argv[argv.index("-machine") + 1]
    assert machine == BOARD.qemu_machine_el2 and "virtualization=on" in machine
    serials = [argv[i + 1] for i, x in enumerate(argv) if x == "-serial"]
    assert serials == ["file:a.log", "file:secure.log", "stdio"]
    with pytest.raises(TandemError, match="one Linux console on stdio"):
        qemu_command.boot_argv(
            BOARD, 4, Timing("percore"), Path("fw"), [], Path("s"), False, consoles=(None, None)
        )
    dump = qemu_command.dump_dtb_argv(BOARD, 4, Path("fw"), Path("o"), el2=True)
    assert [dump[i + 1] for i, x in enumerate(dump) if x == "-serial"] == ["null"] * 3
    plain = qemu_command.boot_argv(BOARD, 4, Timing("percore"), Path("fw"), [], Path("s"), False)
    assert "virtualization=off" in plain[plain.index("-machine") + 1], "others: no EL2"
