"""Board descriptions (boards/NAME.toml), shared with the firmware build."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform.paths import BOARDS


@dataclass(frozen=True)
class Range:
    """A physical address range."""

    base: int
    size: int

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.base + self.size


@dataclass(frozen=True)
class Device:
    """A normal-world device a partition may be given: its MMIO (whole
    pages), its SPIs (SPI numbers, INTID - 32), QEMU's device tree node and
    whether it masters the bus (DMA: a virtio transport, fw_cfg's DMA
    interface), which no stage 2 confines."""

    name: str
    base: int
    size: int
    spis: tuple[int, ...]
    node: str
    dma: bool
    # The QEMU serial port a UART is (-serial's order), else None.
    serial: int | None = None


@dataclass(frozen=True)
class IdleState:
    """An idle state Linux's cpuidle may enter through PSCI CPU_SUSPEND
    (`arm,idle-state`): its power_state argument and latencies in µs."""

    name: str
    psci_suspend_param: int
    entry_latency_us: int
    exit_latency_us: int
    min_residency_us: int


@dataclass(frozen=True)
class Board:
    """What the harness needs of a board: memory map, boot addresses, QEMU machine."""

    name: str
    max_cores: int
    counter_hz: int
    secure_flash: Range
    # Secure RAM, the monitor's and the RTOS's (Linux's accesses fault).
    secure_ram: Range
    rtos_ram: Range
    normal_ram: Range
    shared: Range
    hyp_ram: Range
    gicd: int
    gicr: int
    doorbell_spi: int
    rtos_image: int
    boot_config: int
    linux_images: int
    kernel: int
    dtb: int
    initrd: int
    qemu_machine: str
    # The machine with EL2, for configurations with partitions.
    qemu_machine_el2: str
    qemu_cpu: str
    qemu_memory: str
    # QEMU's serial ports in -serial's order, by role: "normal" (Linux's
    # console), "secure" (the monitor's and the RTOS's) or "null".
    qemu_serials: tuple[str, ...]
    # Linux's console device and earlycon argument ("earlycon" alone: from
    # the tree's stdout-path).
    linux_console: str
    linux_earlycon: str
    # Linux's device tree: None for QEMU's own (dumped), else a tree built
    # from Debian's kernel source (a path under arch/arm64/boot/dts/).
    linux_dtb: str | None
    # Nodes of that tree Linux must not use: the secure world's devices.
    secure_nodes: tuple[str, ...]
    partition_devices: dict[str, Device]
    # Linux's idle states beside WFI ([linux_idle.NAME]), deepest last.
    idle_states: tuple[IdleState, ...] = ()


def _value(table: dict[str, object], key: str, where: str) -> object:
    if key not in table:
        raise TandemError(f"{where}: missing key '{key}'")
    return table[key]


def _int(table: dict[str, object], key: str, where: str) -> int:
    value = _value(table, key, where)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TandemError(f"{where}: '{key}' must be an integer, got {value!r}")
    return value


def _str(table: dict[str, object], key: str, where: str) -> str:
    value = _value(table, key, where)
    if not isinstance(value, str):
        raise TandemError(f"{where}: '{key}' must be a string, got {value!r}")
    return value


def _table(table: dict[str, object], key: str, where: str) -> dict[str, object]:
    value = _value(table, key, where)
    if not isinstance(value, dict):
        raise TandemError(f"{where}: '{key}' must be a table, got {value!r}")
    return value


def _range(table: dict[str, object], key: str, where: str) -> Range:
    r = _table(table, key, where)
    return Range(_int(r, "base", f"{where}.{key}"), _int(r, "size", f"{where}.{key}"))


def _devices(data: dict[str, object], where: str) -> dict[str, Device]:
    table = data.get("partition_devices", {})
    if not isinstance(table, dict):
        raise TandemError(f"{where}: [partition_devices] must be a table")
    out: dict[str, Device] = {}
    for name, value in table.items():
        at = f"{where} [partition_devices.{name}]"
        if not isinstance(value, dict):
            raise TandemError(f"{at}: must be a table")
        spis = _value(value, "spis", at)
        if not isinstance(spis, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 988 for s in spis
        ):
            raise TandemError(f"{at}: 'spis' must be a list of SPI numbers (0..987)")
        # Said of every device, never assumed: a device that does DMA
        # reaches all memory (configs.check_no_dma).
        dma = value.get("dma")
        if not isinstance(dma, bool):
            raise TandemError(
                f"{at}: 'dma' must be true or false (does the device master the bus?), got {dma!r}"
            )
        out[name] = Device(
            name,
            _int(value, "base", at),
            _int(value, "size", at),
            tuple(spis),
            _str(value, "node", at),
            dma,
            _int(value, "serial", at) if "serial" in value else None,
        )
    return out


# The power_state of each idle state the monitor offers (CPU_SUSPEND,
# original format: StateID 0, standby, level 0; monitor/core/src/services.rs).
PSCI_STATES = {"standby": 0}


def _idle_states(data: dict[str, object], where: str) -> tuple[IdleState, ...]:
    table = data.get("linux_idle", {})
    if not isinstance(table, dict):
        raise TandemError(f"{where}: [linux_idle] must be a table")
    out: list[IdleState] = []
    for name, value in table.items():
        at = f"{where} [linux_idle.{name}]"
        if name not in PSCI_STATES:
            raise TandemError(
                f"{at}: the monitor offers no such state (known: {', '.join(PSCI_STATES)})"
            )
        if not isinstance(value, dict):
            raise TandemError(f"{at}: must be a table")
        extra = set(value) - {"entry_latency_us", "exit_latency_us", "min_residency_us"}
        if extra:
            raise TandemError(f"{at}: unknown key(s) {', '.join(sorted(extra))}")
        times = [
            _int(value, key, at)
            for key in ("entry_latency_us", "exit_latency_us", "min_residency_us")
        ]
        if any(t < 0 for t in times):
            raise TandemError(f"{at}: latencies must not be negative")
        out.append(IdleState(name, PSCI_STATES[name], *times))
    return tuple(out)


_SERIAL_ROLES = ("normal", "secure", "null")


def _strings(table: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = _value(table, key, where)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TandemError(f"{where}: '{key}' must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def _serials(qemu: dict[str, object], where: str) -> tuple[str, ...]:
    serials = _strings(qemu, "serials", where)
    if sorted(r for r in serials if r != "null") != ["normal", "secure"] or any(
        r not in _SERIAL_ROLES for r in serials
    ):
        raise TandemError(
            f"{where}: 'serials' must name one 'normal' and one 'secure' port "
            f"(the others 'null'), got {list(serials)}"
        )
    return serials


DEFAULT_BOARD = "qemu-virt"


def load_board(name: str = DEFAULT_BOARD, directory: Path = BOARDS) -> Board:
    """Reads and checks boards/NAME.toml."""
    path = directory / f"{name}.toml"
    if not path.exists():
        known = boards(directory)
        raise TandemError(f"unknown board '{name}' (known: {', '.join(known)})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: {e}") from e
    where = str(path)
    board = _table(data, "board", where)
    memory = _table(data, "memory", where)
    interrupts = _table(data, "interrupts", where)
    devices = _table(data, "devices", where)
    boot = _table(data, "boot", where)
    qemu = _table(data, "qemu", where)
    linux = _table(data, "linux", where)
    dtb = linux.get("dtb")
    if dtb is not None and not isinstance(dtb, str):
        raise TandemError(f"{where} [linux]: 'dtb' must be a string, got {dtb!r}")
    return Board(
        name=_str(board, "name", f"{where} [board]"),
        max_cores=_int(board, "max_cores", f"{where} [board]"),
        counter_hz=_int(board, "counter_hz", f"{where} [board]"),
        secure_flash=_range(memory, "secure_flash", f"{where} [memory]"),
        secure_ram=_range(memory, "secure_ram", f"{where} [memory]"),
        rtos_ram=_range(memory, "rtos_ram", f"{where} [memory]"),
        normal_ram=_range(memory, "normal_ram", f"{where} [memory]"),
        shared=_range(memory, "shared", f"{where} [memory]"),
        hyp_ram=_range(memory, "hyp_ram", f"{where} [memory]"),
        gicd=_int(devices, "gicd", f"{where} [devices]"),
        gicr=_int(devices, "gicr", f"{where} [devices]"),
        doorbell_spi=_int(interrupts, "doorbell_spi", f"{where} [interrupts]"),
        rtos_image=_int(boot, "rtos_image", f"{where} [boot]"),
        boot_config=_int(boot, "config", f"{where} [boot]"),
        linux_images=_int(boot, "linux_images", f"{where} [boot]"),
        kernel=_int(boot, "kernel", f"{where} [boot]"),
        dtb=_int(boot, "dtb", f"{where} [boot]"),
        initrd=_int(boot, "initrd", f"{where} [boot]"),
        qemu_machine=_str(qemu, "machine", f"{where} [qemu]"),
        qemu_machine_el2=_str(qemu, "machine_el2", f"{where} [qemu]"),
        qemu_cpu=_str(qemu, "cpu", f"{where} [qemu]"),
        qemu_memory=_str(qemu, "memory", f"{where} [qemu]"),
        qemu_serials=_serials(qemu, f"{where} [qemu]"),
        linux_console=_str(linux, "console", f"{where} [linux]"),
        linux_earlycon=_str(linux, "earlycon", f"{where} [linux]"),
        linux_dtb=dtb,
        secure_nodes=_strings(linux, "secure_nodes", f"{where} [linux]")
        if "secure_nodes" in linux
        else (),
        partition_devices=_devices(data, where),
        idle_states=_idle_states(data, where),
    )


def boards(directory: Path = BOARDS) -> list[str]:
    """The boards there are (boards/*.toml but the crate's Cargo.toml)."""
    return sorted(p.stem for p in directory.glob("*.toml") if p.stem != "Cargo")
