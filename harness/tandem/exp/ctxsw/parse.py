"""Reading a `ctxsw` boot: the hand-off cycles in QEMU's execution log
(the RTOS's record and the time per hand-off: instruments/handoffs.py)."""

from __future__ import annotations

import re
from collections import Counter

from tandem.instruments.switchcost import LOWER_SYNC, Log, Symbols

# Vector offsets: IRQ from S-EL1 and from S-EL0.
CURRENT_IRQ = 0x280
LOWER_IRQ = 0x480


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
