"""Reading a `capacity` boot's output: the benchmarks' times, Linux's
cpu_capacity, and the steal and irq shares from /proc/stat."""

from __future__ import annotations

import re

from tandem.errors import TandemError
from tandem.exp.capacity.script import STAT_MARK

HACKBENCH_TIME = re.compile(r"^Time: ([0-9.]+)$")
SYSBENCH_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s$")
CAPACITY_LINE = re.compile(r"^@@CAPACITY@@((?: \d+)+)$")


def bench_time(lines: list[str], bench: str, label: str) -> float:
    """The one time a benchmark printed."""
    pattern = HACKBENCH_TIME if bench == "hackbench" else SYSBENCH_TIME
    got = [float(m.group(1)) for line in lines if (m := pattern.match(line.strip()))]
    if len(got) != 1:
        raise TandemError(f"{label}: expected one {bench} time, found {len(got)}")
    return got[0]


def capacities(lines: list[str], label: str) -> list[int]:
    """Linux's cpu_capacity per core, as the boot saw it before the benchmarks."""
    for line in lines:
        if m := CAPACITY_LINE.match(line.strip()):
            return [int(x) for x in m.group(1).split()]
    raise TandemError(f"{label}: no cpu_capacity line")


def cpu_shares(lines: list[str], label: str) -> dict[str, list[float]]:
    """Per core, the fraction of the benchmarks' time /proc/stat counted as
    steal and as irq (Linux charges time the RTOS takes during an interrupt
    handler to irq when it does not know about steal)."""
    marks = [i for i, line in enumerate(lines) if line.strip() == STAT_MARK]
    if len(marks) != 2:
        raise TandemError(f"{label}: /proc/stat snapshots missing")

    def snap(start: int, end: int) -> list[list[int]]:
        rows = [line.split() for line in lines[start:end] if line.startswith("cpu")]
        try:
            return [[int(x) for x in row[1:9]] for row in rows]
        except ValueError:
            raise TandemError(f"{label}: bad /proc/stat line") from None

    before = snap(marks[0] + 1, marks[1])
    after = snap(marks[1] + 1, len(lines))
    if len(before) != len(after) or not before:
        raise TandemError(f"{label}: /proc/stat snapshots disagree")
    steal: list[float] = []
    irq: list[float] = []
    for a, b in zip(before, after, strict=True):
        delta = [y - x for x, y in zip(a, b, strict=True)]
        total = sum(delta) or 1
        # user nice system idle iowait irq softirq steal
        irq.append(round(delta[5] / total, 4))
        steal.append(round(delta[7] / total, 4))
    return {"steal": steal, "irq": irq}
