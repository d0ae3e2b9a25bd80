"""Reading an `lhp` boot's output: benchmark times, the JSON reports after
their markers, spin-wait histograms and the RTOS's hand-off counts."""

from __future__ import annotations

import json
import re

from tandem.errors import TandemError
from tandem.exp.lhp.script import HANDOFF_RESULT

HACKBENCH_TIME = re.compile(r"^Time: ([0-9.]+)$")
SYSBENCH_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s$")


def json_after(lines: list[str], marker: str, label: str) -> dict[str, object]:
    """The JSON report on the line after `marker` (tandem-spin's or tandem-lat's)."""
    for i, line in enumerate(lines):
        if line.strip() == marker and i + 1 < len(lines):
            try:
                obj = json.loads(lines[i + 1])
            except json.JSONDecodeError as e:
                raise TandemError(f"{label}: bad {marker} result: {e}") from None
            if isinstance(obj, dict):
                return obj
    raise TandemError(f"{label}: no {marker} result")


def slowest(histogram: dict[float, int], n: int) -> list[float]:
    """The `n` largest samples of a histogram (bucket starts), largest first."""
    out: list[float] = []
    for us in sorted(histogram, reverse=True):
        out += [us] * min(histogram[us], n - len(out))
        if len(out) == n:
            break
    return out


def handoff_waits(lines: list[str], label: str) -> tuple[int, int, int, int]:
    """The RTOS's cross-core hand-offs of its periodic task since boot, from
    the core records: (count, longest wait in ticks, sum of waits in ticks,
    deadline misses), over all cores."""
    for line in lines:
        if line.startswith(HANDOFF_RESULT + " "):
            try:
                values = [int(x) for x in line.split()[1:]]
            except ValueError:
                break
            if not values or len(values) % 4:
                break
            cores = [values[i : i + 4] for i in range(0, len(values), 4)]
            return (
                sum(c[0] for c in cores),
                max(c[1] for c in cores),
                sum(c[2] for c in cores),
                sum(c[3] for c in cores),
            )
    raise TandemError(f"{label}: no (or a malformed) {HANDOFF_RESULT} line")


def preemptions(lines: list[str], before: str, after: str, label: str) -> dict[str, object]:
    """What the periodic task's jobs preempted between the two marker lines:
    starts, and how many found Linux holding or spinning for a lock, over
    all cores, and the starts per core (the counters are u32s that wrap)."""

    def counts(marker: str) -> list[int]:
        for line in lines:
            if line.startswith(marker + " "):
                try:
                    values = [int(x) for x in line.split()[1:]]
                except ValueError:
                    break
                if values and len(values) % 3 == 0:
                    return values
                break
        raise TandemError(f"{label}: no (or a malformed) {marker} line")

    a, b = counts(before), counts(after)
    if len(a) != len(b):
        raise TandemError(f"{label}: {before} and {after} name different cores")
    diff = [(y - x) % (1 << 32) for x, y in zip(a, b, strict=True)]
    return {
        "starts": sum(diff[0::3]),
        "holding": sum(diff[1::3]),
        "waiting": sum(diff[2::3]),
        "starts_per_core": diff[0::3],
    }


LONGEST_HEAD = re.compile(r"^cpu(\d+) ticks (\d+) lock (\S+) irqs (\d+)$")


def longest_waits(
    lines: list[str], begin: str, end: str, tick_us: float, label: str
) -> list[dict[str, object]]:
    """Each CPU's longest spin wait between the markers (debugfs
    tandem_spin_longest): its CPU, µs, lock, the interrupts the CPU took
    while it spun, and the waiter's stack; longest first."""
    try:
        first = lines.index(begin)
        last = lines.index(end, first)
    except ValueError:
        raise TandemError(f"{label}: no {begin} ... {end} block") from None
    out: list[dict[str, object]] = []
    stack: list[str] = []
    for line in lines[first + 1 : last]:
        if m := LONGEST_HEAD.match(line.strip()):
            stack = []
            out.append(
                {
                    "cpu": int(m.group(1)),
                    "us": round(int(m.group(2)) * tick_us, 3),
                    "lock": m.group(3),
                    "irqs": int(m.group(4)),
                    "stack": stack,
                }
            )
        elif line.startswith("  ") and out:
            stack.append(line.strip())
        elif line.strip():
            raise TandemError(f"{label}: unexpected line in {begin} block: {line!r}")
    return sorted(out, key=lambda w: -float(w["us"]))  # type: ignore[arg-type]


def long_spin_us(hist: dict[float, int], threshold_us: float) -> float:
    """Time spent in spin waits longer than the threshold (bucket starts,
    so a lower bound), µs."""
    return sum(us * n for us, n in hist.items() if us > threshold_us)


def spin_histogram(obj: dict[str, object], label: str) -> dict[float, int]:
    """tandem-spin's report: bucket start (µs) -> contended acquires."""
    raw = obj.get("histogram")
    if not isinstance(raw, list):
        raise TandemError(f"{label}: spin report without histogram")
    out: dict[float, int] = {}
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and all(isinstance(x, int | float) for x in item)
        ):
            raise TandemError(f"{label}: bad spin histogram entry {item!r}")
        out[float(item[0])] = int(item[1])
    return out


def long_waits(hist: dict[float, int], threshold_us: float) -> int:
    """Spin waits in buckets above the longest Linux alone showed."""
    return sum(n for us, n in hist.items() if us > threshold_us)


def bench_times(lines: list[str], pattern: re.Pattern[str], label: str, want: int) -> list[float]:
    """The `want` times a benchmark printed (lines matching `pattern`); fewer or
    more is an error."""
    got = [float(m.group(1)) for line in lines if (m := pattern.match(line.strip()))]
    if len(got) != want:
        raise TandemError(f"{label}: expected {want} benchmark times, found {len(got)}")
    return got
