"""Reading a `ctxsw` boot: the RTOS's record as the script printed it, the
time per hand-off, and the hand-off cycles in QEMU's execution log."""

from __future__ import annotations

import re
import struct
from collections import Counter

from tandem.errors import TandemError
from tandem.exp.ctxsw.script import DONE, RESULT
from tandem.instruments.switchcost import LOWER_SYNC, Log, Symbols

# Vector offsets: IRQ from S-EL1 and from S-EL0.
CURRENT_IRQ = 0x280
LOWER_IRQ = 0x480


def parse_record(lines: list[str], where: str) -> dict[str, int]:
    """The record the script printed, as named fields."""
    for line in lines:
        if line.startswith(RESULT):
            words = line[len(RESULT) :].split()
            if len(words) != 8:
                raise TandemError(f"{where}: record of {len(words)} words, want 8: {line!r}")
            try:
                raw = struct.pack("<8Q", *(int(w, 16) for w in words))
            except ValueError:
                raise TandemError(f"{where}: not a record: {line!r}") from None
            (
                state,
                mode,
                pages,
                batch,
                switches,
                ticks,
                best,
                faults,
                fault_task,
                fault_address,
                fault_esr,
            ) = struct.unpack("<IIIIQQQIIQQ", raw)
            if state != DONE or batch == 0 or switches < 2:
                raise TandemError(f"{where}: unfinished or malformed record: {line!r}")
            return {
                "mode": mode,
                "pages": pages,
                "batch": batch,
                "switches": switches,
                "ticks": ticks,
                "best_batch_ticks": best,
                "faults": faults,
                "fault_task": fault_task,
                "fault_address": fault_address,
                "fault_esr": fault_esr,
            }
    raise TandemError(f"{where}: no {RESULT} line in the output")


def per_switch(record: dict[str, int], counter_hz: int) -> tuple[float, float]:
    """Mean ns per hand-off over the whole run, and in the best batch."""
    ns_per_tick = 1e9 / counter_hz
    mean = record["ticks"] * ns_per_tick / (record["switches"] - 1)
    best = record["best_batch_ticks"] * ns_per_tick / record["batch"]
    return mean, best


def _short(name: str) -> str:
    """`tandem_rtos::sched::system_call::h0123456789abcdef` -> `sched::system_call`."""
    return "::".join(re.sub(r"::h[0-9a-f]{16}$", "", name).split("::")[-2:])


def hand_off_cycles(log: Log, symbols: Symbols, vectors: int) -> list[Counter[str]]:
    """Every hand-off cycle in QEMU's log: from one entry of the S-EL0
    synchronous vector (a task's `svc`) to the next, by function; cycles
    with an interrupt in them are left out."""
    sync = vectors + LOWER_SYNC
    irqs = {vectors + CURRENT_IRQ, vectors + LOWER_IRQ}
    cycles: list[Counter[str]] = []
    current: Counter[str] | None = None
    for i, pc in enumerate(log.executed):
        if pc == sync:
            if current is not None:
                cycles.append(current)
            current = Counter()
        if current is None:
            continue
        if pc in irqs:
            current = None
            continue
        block = log.run(i)
        if block is None:
            current = None
            continue
        for address, _ in block:
            current[_short(symbols.name(address))] += 1
    return cycles
