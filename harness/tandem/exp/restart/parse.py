"""Reading the `restart` boot: the host's wall time at its console's lines
(the unit's record: Boot.host_lines) into each restart's phases, the
monitor's counter time per restart from the secure log, and the medians.

Phases of one restart, in host wall time (what the acceptance asks) and in
guest time (what the machine did):
- stop: from the guest's line just before the request to the new Linux's
  first console line; Linux shutting down (for `reboot -f`), the monitor
  stopping it on every core and copying its images (guest: the monitor's
  counter time from the request to the restart);
- boot: from that line to the new Linux's first command (guest: Linux's
  uptime then)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tandem.errors import TandemError
from tandem.exp.restart.spec import BOOTING, MARK, METHODS, NAME, SECURE


def monitor_gaps_ms(secure_log: str) -> list[float]:
    """Counter time from each restart request the monitor saw to its
    restart of Linux, ms. The monitor writes these lines out after the
    fact, each core's in turn (docs/monitor.md, "The log"), so they are put
    back in the order of their time stamps first."""
    marks = sorted(
        (float(m.group(1)), m.group(2))
        for m in map(SECURE.match, secure_log.splitlines())
        if m is not None
    )
    asked: float | None = None
    out = []
    for at, what in marks:
        if what == "Linux asked to restart":
            asked = at
        elif asked is not None:
            out.append((at - asked) * 1000)
            asked = None
    return out


class Clock:
    """Host wall time of the marks on Linux's console, as they arrived."""

    def __init__(self) -> None:
        self.requested: dict[int, float] = {}
        self.booting: dict[int, float] = {}
        self.started: dict[int, float] = {}
        self.uptime_s: dict[int, float] = {}
        self._last_request = 0

    def line(self, line: str, now: float) -> int | None:
        """Notes one console line seen at `now`; the generation of a Linux
        that just ran its first command, else None."""
        text = line.strip()
        if BOOTING.match(text) and self._last_request:
            self.booting[self._last_request + 1] = now
            return None
        m = MARK.match(text)
        if not m:
            return None
        generation = int(m.group(2))
        if m.group(1) == "REQUEST":
            self.requested[generation] = now
            self._last_request = generation
            return None
        self.started[generation] = now
        if m.group(3) is not None:
            self.uptime_s[generation] = float(m.group(3))
        return generation


def clock(timed: Sequence[tuple[float, str]], count: int, where: str) -> Clock:
    """The Clock of the lines timed, read in the order they arrived, as the
    bench read them live; every generation must have started."""
    c = Clock()
    for now, line in timed:
        c.line(line, now)
    gens = sorted(c.started)
    if gens != list(range(1, count + 2)):
        raise TandemError(f"{NAME}: Linux generations {gens}, want 1..{count + 1} ({where})")
    return c


def restarts(clock: Clock, count: int, monitor_ms: list[float]) -> list[dict[str, object]]:
    """One row per restart: its method, host time in total and per phase,
    and the guest's own time for each phase."""
    rows: list[dict[str, object]] = []
    for g in range(1, count + 1):
        new = g + 1
        booting = clock.booting.get(new)
        if booting is None:
            raise TandemError(f"{NAME}: no boot line seen for Linux {new}")
        rows.append(
            {
                "generation": new,
                "method": METHODS[(g - 1) % 3],
                "host_s": round(clock.started[new] - clock.requested[g], 3),
                "host_stop_s": round(booting - clock.requested[g], 3),
                "host_boot_s": round(clock.started[new] - booting, 3),
                "monitor_ms": round(monitor_ms[g - 1], 3) if g <= len(monitor_ms) else None,
                "linux_uptime_s": clock.uptime_s.get(new),
            }
        )
    return rows


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def phase_stats(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Median and max of each measured column over all restarts."""
    out: dict[str, dict[str, float]] = {}
    for key in ("host_s", "host_stop_s", "host_boot_s", "monitor_ms", "linux_uptime_s"):
        values = [float(str(r[key])) for r in rows if r[key] is not None]
        if values:
            out[key] = _stats(values)
    return out
