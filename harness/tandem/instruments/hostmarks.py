"""What a boot costs the host between points its commands mark, and when
the host saw given lines of its console.

A guest script prints `MARK NAME` (e.g. `@@FIDELITY hackbench`) where a
part it wants timed on the host begins or ends; `HostMarks` reads, at each
such line, the host's wall clock and QEMU's user CPU time (from /proc while
QEMU runs: `platform.host_cpu`). The difference of two readings is what the
part between them cost, in host seconds: `bench fidelity`'s cost (e).

A reading is taken as run_exec passes the line on, so it is late by the
console's latency; both readings of a part are late alike, and the parts
measured are seconds long.

`HostLines` is the sibling for lines the commands cannot mark, or mark
again and again: at every console line matching a pattern (a new Linux's
first line after a restart, `@@GEN 3@@`), the host's wall clock and the
line itself, in order (`exp/restart`'s stop and boot phases).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from tandem.platform import host_cpu


@dataclass(frozen=True)
class Reading:
    """The host's clocks at one mark: wall seconds since QEMU started, and
    QEMU's user CPU seconds so far (None where /proc could not say)."""

    wall_s: float
    user_cpu_s: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"wall_s": self.wall_s, "user_cpu_s": self.user_cpu_s}

    @classmethod
    def of_json(cls, value: object) -> Reading | None:
        """A reading as a unit's record keeps it; None if it is not one."""
        if not isinstance(value, Mapping):
            return None
        wall, cpu = value.get("wall_s"), value.get("user_cpu_s")
        if not isinstance(wall, int | float) or not (cpu is None or isinstance(cpu, int | float)):
            return None
        return cls(float(wall), None if cpu is None else float(cpu))


@dataclass
class HostMarks:
    """Readings at the lines `MARK NAME` of one boot's commands, by NAME
    (the last, if a name is marked twice). `spawned` must be told QEMU's
    process id (run_exec's `spawned`), `see` every line the commands print
    (run_exec's `echo`)."""

    mark: str
    readings: dict[str, Reading] = field(default_factory=dict)
    _pid: int | None = None
    _started: float = field(default_factory=time.monotonic)

    def spawned(self, pid: int) -> None:
        self._pid = pid
        self._started = time.monotonic()

    def see(self, line: str) -> str | None:
        """Takes a reading if `line` is a mark; returns the mark's name."""
        words = line.split()
        if len(words) != 2 or words[0] != self.mark:
            return None
        cpu = None if self._pid is None else host_cpu.user_cpu_s(self._pid)
        self.readings[words[1]] = Reading(time.monotonic() - self._started, cpu)
        return words[1]

    def to_json(self) -> dict[str, dict[str, float | None]]:
        return {name: r.to_json() for name, r in self.readings.items()}


def between(readings: Mapping[str, Reading], start: str, end: str) -> Reading | None:
    """What the part from mark `start` to mark `end` cost (None without
    both; its CPU time None if either reading lacks one)."""
    a, b = readings.get(start), readings.get(end)
    if a is None or b is None:
        return None
    cpu = None if a.user_cpu_s is None or b.user_cpu_s is None else b.user_cpu_s - a.user_cpu_s
    return Reading(b.wall_s - a.wall_s, cpu)


@dataclass
class HostLines:
    """The host's wall clock (seconds since QEMU started) at every line
    matching `pattern` that a boot's commands' output passes (run_exec's
    `echo`), with the line, in the order seen.

    Not HostMarks: a mark is a line of the commands' own, `MARK NAME`, read
    once per name (the last kept) with QEMU's CPU time; `exp/restart` times
    lines Linux prints itself (its first console line after each restart)
    and marks that repeat with every generation, and needs every one of
    them, in order, and only the wall clock: reading /proc at each line
    would cost the host time the phases are measured in. The line is kept
    with its time so that the summary can be remade from the unit's record
    alone, by the same reading of the lines as when they arrived."""

    pattern: re.Pattern[str]
    seen: list[tuple[float, str]] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)

    def spawned(self, pid: int) -> None:
        self._started = time.monotonic()

    def see(self, line: str) -> bool:
        """Notes `line`'s time if it matches; whether it did."""
        now = time.monotonic()
        text = line.strip()
        if not self.pattern.match(text):
            return False
        self.seen.append((now - self._started, text))
        return True

    def to_json(self) -> list[dict[str, float | str]]:
        # Full floats (JSON keeps them exactly): the summary rounds
        # differences of them, as the bench rounded differences of its clock.
        return [{"wall_s": t, "line": text} for t, text in self.seen]


def lines_of_json(value: object) -> list[tuple[float, str]] | None:
    """HostLines' readings as a unit's record keeps them; None if they are
    not that."""
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if not isinstance(item, Mapping):
            return None
        wall, text = item.get("wall_s"), item.get("line")
        if isinstance(wall, bool) or not isinstance(wall, int | float) or not isinstance(text, str):
            return None
        out.append((float(wall), text))
    return out
