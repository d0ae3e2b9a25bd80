"""World-switch cost in instructions, from QEMU's own execution log.

QEMU (`-d in_asm,exec,nochain`, filtered to the monitor's and the RTOS's code)
logs every translated block with its instructions and every block executed.
Replaying the executed blocks gives the exact instructions on each path, and
the firmware's symbols say where they go:

- Linux -> RTOS: from the monitor's lower-EL FIQ vector (an RTOS interrupt
  trapped while Linux ran) to the first instruction of the RTOS's IRQ vector.
- RTOS -> Linux: from the RTOS's YIELD `smc` through the monitor's
  lower-EL synchronous vector to the `eret` that resumes Linux.
"""

from __future__ import annotations

import bisect
import re
import statistics
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

TRACE = re.compile(r"^Trace \d+: (0x[0-9a-f]+) \[[0-9a-f]+/([0-9a-f]+)/")
# QEMU logs a block's Trace line before it runs it, and this line when it
# then did not run it after all (an interrupt or the instruction budget
# stopped the chain first): the block runs again next, so the first Trace
# must not count.
STOPPED = re.compile(r"^Stopped execution of TB chain before 0x[0-9a-f]+ \[([0-9a-f]+)\]")
INSN = re.compile(r"^0x([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)")

# Offsets in an AArch64 vector table.
LOWER_SYNC = 0x400
LOWER_FIQ = 0x500
CURRENT_IRQ = 0x280


Block = list[tuple[int, str]]


@dataclass
class Log:
    """What QEMU logged: each block's instructions (its latest translation),
    the blocks run, and the instructions each of those runs executed."""

    blocks: dict[int, Block]
    executed: list[int]
    # Per entry of `executed`: the translation that ran. QEMU may translate
    # the same address more than once, with different lengths (in icount
    # mode a block that touches a device is translated again to end there),
    # so the latest translation of an address need not be the one run.
    runs: list[Block | None] = field(default_factory=list)

    def run(self, i: int) -> Block | None:
        """The instructions the `i`th executed block ran."""
        if self.runs:
            return self.runs[i]
        return self.blocks.get(self.executed[i])

    def slice(self, start: int, end: int) -> Log:
        """The executed blocks `start..end`."""
        return Log(self.blocks, self.executed[start:end], self.runs[start:end])


def parse(lines: Iterable[str]) -> Log:
    """Reads an `in_asm,exec,nochain` log. Each translation is bound to the
    host code QEMU made for it (the first Trace line of its address after
    it), so every run counts the instructions of the translation that ran."""
    blocks: dict[int, Block] = {}
    fresh: dict[int, Block] = {}
    bound: dict[str, Block] = {}
    executed: list[int] = []
    runs: list[Block | None] = []
    current: Block | None = None
    for line in lines:
        if line.startswith("IN:"):
            current = []
            continue
        if current is not None:
            m = INSN.match(line)
            if m:
                current.append((int(m.group(1), 16), m.group(2)))
                continue
            if current:
                blocks[current[0][0]] = fresh[current[0][0]] = current
            current = None
        m = TRACE.match(line)
        if m:
            host, pc = m.group(1), int(m.group(2), 16)
            if pc in fresh:
                bound[host] = fresh.pop(pc)
            executed.append(pc)
            runs.append(bound.get(host, blocks.get(pc)))
            continue
        m = STOPPED.match(line)
        if m and executed and executed[-1] == int(m.group(1), 16):
            executed.pop()
            runs.pop()
    if current:
        blocks[current[0][0]] = current
    return Log(blocks, executed, runs)


@dataclass(frozen=True)
class Symbols:
    """Addresses to function names, from `nm -n` of the firmware ELFs."""

    addresses: list[int]
    names: list[str]

    @staticmethod
    def load(elves: list[Path]) -> Symbols:
        """Text symbols of `elves`, sorted by address."""
        pairs: list[tuple[int, str]] = []
        for elf in elves:
            out = subprocess.run(
                ["aarch64-linux-gnu-nm", "-n", "-C", str(elf)],
                capture_output=True,
                check=True,
                text=True,
            ).stdout
            for line in out.splitlines():
                parts = line.split(maxsplit=2)
                if len(parts) == 3 and parts[1] in "tT":
                    pairs.append((int(parts[0], 16), parts[2]))
        pairs.sort()
        return Symbols([a for a, _ in pairs], [n for _, n in pairs])

    def address(self, name: str) -> int:
        """The address of the first symbol called `name`."""
        return self.addresses[self.names.index(name)]

    def name(self, address: int) -> str:
        """The function containing `address`."""
        i = bisect.bisect_right(self.addresses, address) - 1
        return self.names[i] if i >= 0 else f"{address:#x}"


def _short(name: str) -> str:
    """`tandem_monitor::trap::lower_fiq` -> `trap::lower_fiq`."""
    parts = re.sub(r"::h[0-9a-f]{16}$", "", name).split("::")
    return "::".join(parts[-2:])


@dataclass
class Traversal:
    """One traversal of a switch path: instructions, and where they went."""

    instructions: int
    by_function: Counter[str]


def _walk(log: Log, symbols: Symbols, start: int, stop: int, until_eret: bool) -> list[Traversal]:
    """Every run of executed blocks from `start` up to (not including)
    `stop`, or, with `until_eret`, up to and including the block whose last
    instruction is an `eret` leaving the monitor (`stop` then bounds it)."""
    found: list[Traversal] = []
    i = 0
    executed = log.executed
    while i < len(executed):
        if executed[i] != start:
            i += 1
            continue
        count: Counter[str] = Counter()
        total = 0
        j = i
        done = False
        while j < len(executed):
            pc = executed[j]
            if pc == stop and not until_eret:
                done = True
                break
            block = log.run(j)
            if block is None:
                break
            for address, _ in block:
                count[_short(symbols.name(address))] += 1
            total += len(block)
            j += 1
            if until_eret and block[-1][1] == "eret":
                done = True
                break
        if done:
            found.append(Traversal(total, count))
        i = j + 1
    return found


def measure(
    log: Log, symbols: Symbols, monitor_vectors: int, rtos_vectors: int
) -> dict[str, object]:
    """Both directions: samples, median/min/max instructions, and the median
    traversal's instructions per function."""
    to_rtos = _walk(log, symbols, monitor_vectors + LOWER_FIQ, rtos_vectors + CURRENT_IRQ, False)
    # RTOS -> Linux begins with the RTOS's smc; the monitor's side starts at
    # the synchronous vector, which Linux's own SMCs use too: keep only those
    # entered right after a block of the RTOS's that ends in smc.
    to_linux: list[Traversal] = []
    sync = monitor_vectors + LOWER_SYNC
    for k in range(1, len(log.executed)):
        if log.executed[k] != sync:
            continue
        before = log.run(k - 1)
        if not before or before[-1][1] != "smc" or before[-1][0] < rtos_vectors & ~0xFFFFF:
            continue
        sub = log.slice(k, k + 400)
        paths = _walk(sub, symbols, sync, -1, True)
        if paths:
            first = paths[0]
            first.instructions += 1
            first.by_function["hw::yield_to_linux (smc)"] += 1
            to_linux.append(first)

    def summary(paths: list[Traversal]) -> dict[str, object]:
        if not paths:
            return {"samples": 0}
        counts = sorted(p.instructions for p in paths)
        median = statistics.median_low(counts)
        typical = next(p for p in paths if p.instructions == median)
        return {
            "samples": len(paths),
            "median_instructions": median,
            "min_instructions": counts[0],
            "max_instructions": counts[-1],
            "median_path": dict(typical.by_function.most_common()),
        }

    return {"linux_to_rtos": summary(to_rtos), "rtos_to_linux": summary(to_linux)}
