"""Board descriptions (boards/NAME.toml), shared with the firmware build."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.errors import TandemError
from tandem.paths import BOARDS


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
class Board:
    """What the harness needs of a board: memory map, boot addresses, QEMU machine."""

    name: str
    max_cores: int
    counter_hz: int
    normal_ram: Range
    shared: Range
    doorbell_spi: int
    kernel: int
    dtb: int
    initrd: int
    qemu_machine: str
    qemu_cpu: str
    qemu_memory: str


def _get(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise TandemError(f"{where}: missing key '{key}'")
    value = table[key]
    if not isinstance(value, kind):
        raise TandemError(f"{where}: '{key}' must be {kind.__name__}, got {value!r}")
    return value


def _range(table: dict[str, Any], key: str, where: str) -> Range:
    r = _get(table, key, dict, where)
    return Range(_get(r, "base", int, f"{where}.{key}"), _get(r, "size", int, f"{where}.{key}"))


def load_board(name: str = "qemu-virt", directory: Path = BOARDS) -> Board:
    """Reads and checks boards/NAME.toml."""
    path = directory / f"{name}.toml"
    if not path.exists():
        known = sorted(p.stem for p in directory.glob("*.toml"))
        raise TandemError(f"unknown board '{name}' (known: {', '.join(known)})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: {e}") from e
    where = str(path)
    board = _get(data, "board", dict, where)
    memory = _get(data, "memory", dict, where)
    interrupts = _get(data, "interrupts", dict, where)
    boot = _get(data, "boot", dict, where)
    qemu = _get(data, "qemu", dict, where)
    return Board(
        name=_get(board, "name", str, f"{where} [board]"),
        max_cores=_get(board, "max_cores", int, f"{where} [board]"),
        counter_hz=_get(board, "counter_hz", int, f"{where} [board]"),
        normal_ram=_range(memory, "normal_ram", f"{where} [memory]"),
        shared=_range(memory, "shared", f"{where} [memory]"),
        doorbell_spi=_get(interrupts, "doorbell_spi", int, f"{where} [interrupts]"),
        kernel=_get(boot, "kernel", int, f"{where} [boot]"),
        dtb=_get(boot, "dtb", int, f"{where} [boot]"),
        initrd=_get(boot, "initrd", int, f"{where} [boot]"),
        qemu_machine=_get(qemu, "machine", str, f"{where} [qemu]"),
        qemu_cpu=_get(qemu, "cpu", str, f"{where} [qemu]"),
        qemu_memory=_get(qemu, "memory", str, f"{where} [qemu]"),
    )
