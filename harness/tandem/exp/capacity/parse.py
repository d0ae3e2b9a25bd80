"""Reading a `capacity` boot's output: the benchmarks' times, Linux's
cpu_capacity, what /proc/stat counted on each core while each benchmark
ran, and the RTOS's own counts."""

from __future__ import annotations

import re

from tandem.errors import TandemError
from tandem.exp.capacity.script import RTOS_MARK, SNAP_MARK

HACKBENCH_TIME = re.compile(r"^Time: ([0-9.]+)$")
SYSBENCH_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s$")
CAPACITY_LINE = re.compile(r"^@@CAPACITY@@((?: \d+)+)$")
STAT_LINE = re.compile(r"^cpu(\d+)((?: \d+){8,})$")
RTOS_LINE = re.compile(rf"^{RTOS_MARK} (\d+) (\d+) (\d+) (\d+)$")

# The first eight /proc/stat columns, in USER_HZ ticks (10 ms).
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


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


def _snapshots(lines: list[str], label: str) -> list[tuple[str, list[list[int]]]]:
    """Every /proc/stat snapshot: its name, and per core the STAT_FIELDS."""
    out: list[tuple[str, list[list[int]]]] = []
    for line in (x.strip() for x in lines):
        if line.startswith(SNAP_MARK):
            out.append((line[len(SNAP_MARK) :].strip(), []))
        elif (m := STAT_LINE.match(line)) and out:
            rows = out[-1][1]
            if int(m.group(1)) != len(rows):
                raise TandemError(f"{label}: /proc/stat line out of order: {line}")
            rows.append([int(x) for x in m.group(2).split()[: len(STAT_FIELDS)]])
    return out


def cpu_ticks(lines: list[str], bench: str, label: str) -> list[dict[str, int]]:
    """Per core, what /proc/stat counted while `bench` ran (ticks of 10 ms
    in each of STAT_FIELDS), from the snapshots before and after it."""
    snaps = [rows for name, rows in _snapshots(lines, label) if name == bench]
    if len(snaps) != 2:
        raise TandemError(f"{label}: expected two /proc/stat snapshots around {bench}")
    before, after = snaps
    if len(before) != len(after) or not before:
        raise TandemError(f"{label}: /proc/stat snapshots around {bench} disagree")
    out = []
    for a, b in zip(before, after, strict=True):
        delta = [y - x for x, y in zip(a, b, strict=True)]
        if any(d < 0 for d in delta):
            raise TandemError(f"{label}: /proc/stat went backwards around {bench}")
        out.append(dict(zip(STAT_FIELDS, delta, strict=True)))
    return out


def rtos_counts(lines: list[str], cores: int, label: str) -> list[dict[str, int]]:
    """Per core of `cores`, the RTOS's releases, deadline misses and busy µs
    since boot (as last published: the RTOS publishes them once a second)."""
    found: dict[int, dict[str, int]] = {}
    for line in lines:
        if m := RTOS_LINE.match(line.strip()):
            found[int(m.group(1))] = {
                "releases": int(m.group(2)),
                "deadline_misses": int(m.group(3)),
                "busy_us": int(m.group(4)),
            }
    if sorted(found) != list(range(cores)):
        raise TandemError(f"{label}: the RTOS's per-core counts are missing")
    return [found[c] for c in sorted(found)]
