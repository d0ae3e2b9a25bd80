"""Reading the `switch` experiment's boot: QEMU's execution log counted
into instructions per switch, each way, on the host that booted (the log
is hundreds of MB: Boot.reduce), and the counts checked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.switch.spec import DIRECTIONS, EXEC_LOG
from tandem.instruments import switchcost
from tandem.platform.paths import firmware_elf


def elves(board: str) -> tuple[Path, Path]:
    """The board's monitor and RTOS ELFs (each board's firmware is linked at
    its own addresses); an error naming the one missing."""
    monitor = firmware_elf(board, "tandem-monitor")
    rtos = firmware_elf(board, "tandem-rtos")
    for elf in (monitor, rtos):
        if not elf.exists():
            raise TandemError(f"switch: {elf} missing (run `make build`)")
    return monitor, rtos


def count_switches(log_dir: Path, board: str) -> dict[str, object]:
    """Both directions' instruction counts (switchcost.measure) from the
    boot's execution log, which is removed once counted."""
    monitor, rtos = elves(board)
    log_path = log_dir / EXEC_LOG
    with log_path.open() as f:
        log = switchcost.parse(f)
    log_path.unlink()
    symbols = switchcost.Symbols.load([monitor, rtos])
    monitor_vectors = switchcost.Symbols.load([monitor]).address("vectors")
    rtos_vectors = switchcost.Symbols.load([rtos]).address("vectors")
    return switchcost.measure(log, symbols, monitor_vectors, rtos_vectors)


def directions(counted: object, where: str) -> dict[str, dict[str, object]]:
    """Each direction's counts from what count_switches made; a direction
    with no switch is an error."""
    if not isinstance(counted, Mapping):
        raise TandemError(f"{where}: no switch counts in its record")
    out = {}
    for direction in DIRECTIONS:
        d = counted.get(direction)
        if not isinstance(d, dict) or not d.get("samples"):
            raise TandemError(f"{where}: no {direction} switch in QEMU's log")
        out[direction] = d
    return out
