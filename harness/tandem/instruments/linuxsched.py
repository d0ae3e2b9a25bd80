"""Linux's own scheduler events beside the monitor's world switches
(`tandem trace --linux-sched`): Linux's tracer records every sched_switch,
stamped with its raw monotonic clock (`trace_clock` mono_raw); the harness
puts them on the generic counter's clock and onto each core's track.

Three things come from the guest:

- `tandem-trace clock`: samples of the counter, Linux's raw clock, the
  counter again. Both clocks count the same counter (the raw clock is the
  counter scaled, from an origin of its own), so each sample bounds the
  origin's offset; all samples together bound it to within the shortest
  sample (tens of ns);
- the tracer's text output (`trace`): each event's CPU and fields, but its
  time only to the microsecond;
- the same output in raw form (`options/raw`): each event's time to the
  nanosecond, but no fields. The two list the same events in the same
  order (the buffer is read twice with tracing stopped); each pair is
  checked to agree on CPU and microsecond.

Linux's CPU numbers are logical: each CPU's core is its device tree node's
`reg` (MPIDR Aff0), which the guest prints.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tandem.errors import TandemError

_CLOCK = re.compile(r"# clock (\d+) (\d+) (\d+)")
_MARKER = re.compile(r"# clock-marker (\d+) (\d+)")
_CPU = re.compile(r"cpu(\d+)\s+((?:[0-9a-f]{2}\s*)+)")
_TEXT = re.compile(
    r"^\s*(?P<task>.+?)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<secs>\d+)\.(?P<usecs>\d{6}): "
    r"(?P<event>\w+): (?P<body>.*)$"
)
_SWITCH = re.compile(
    r"prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev_pid>-?\d+) prev_prio=-?\d+ "
    r"prev_state=(?P<prev_state>\S+) ==> next_comm=(?P<next_comm>.*) "
    r"next_pid=(?P<next_pid>-?\d+) next_prio=-?\d+$"
)
_MARKER_EVENT = re.compile(r"tandem_clock_marker (\d+)$")
_RAW = re.compile(r"^(\d+) (\d+) (\d+) ")
_LOST = re.compile(r"CPU:(\d+) \[LOST (\d+) EVENTS\]")


@dataclass(frozen=True)
class ClockMap:
    """Linux's raw clock as counter ticks: ticks = (ns - origin_ns) * hz /
    1e9, the origin known to within ± uncertainty_ns."""

    counter_hz: int
    origin_ns: float
    uncertainty_ns: float
    samples: int

    def ticks(self, ns: int) -> float:
        """A raw-clock time in counter ticks."""
        return (ns - self.origin_ns) * self.counter_hz / 1e9

    def ns(self, ticks: float) -> float:
        """Counter ticks as a raw-clock time."""
        return ticks * 1e9 / self.counter_hz + self.origin_ns


def clock_map(lines: Iterable[str], counter_hz: int) -> ClockMap:
    """The raw clock's origin from `tandem-trace clock` samples: the
    counter at the raw reading lay between BEFORE and AFTER, so the origin
    lies in [raw - AFTER·T, raw - BEFORE·T] for each (T: the tick in ns);
    the samples' intervals must overlap, or the two are not one clock."""
    tick = 1e9 / counter_hz
    low, high, n = float("-inf"), float("inf"), 0
    for line in lines:
        m = _CLOCK.fullmatch(line.strip())
        if not m:
            continue
        before, raw, after = (int(g) for g in m.groups())
        if after < before:
            raise TandemError(f"clock sample {line.strip()!r}: the counter went backwards")
        low = max(low, raw - after * tick)
        high = min(high, raw - before * tick)
        n += 1
    if n == 0:
        raise TandemError("no '# clock' samples from tandem-trace clock")
    if low > high:
        raise TandemError(
            f"Linux's raw clock and the counter disagree: the {n} samples give no common "
            f"origin (by {low - high:.0f} ns); they are not one clock scaled"
        )
    return ClockMap(counter_hz, (low + high) / 2, (high - low) / 2, n)


def cpu_cores(lines: Iterable[str]) -> dict[int, int]:
    """Linux CPU -> core, from `cpuN BYTES` lines (the CPU node's `reg`,
    big-endian bytes; the core is MPIDR Aff0, its last byte)."""
    out: dict[int, int] = {}
    for line in lines:
        m = _CPU.fullmatch(line.strip())
        if m:
            reg = bytes.fromhex("".join(m.group(2).split()))
            out[int(m.group(1))] = reg[-1]
    if not out:
        raise TandemError("no 'cpuN REG' lines: which core is each Linux CPU?")
    return out


@dataclass(frozen=True)
class Switch:
    """One sched_switch: on Linux CPU `cpu` at `ns` (raw clock), `prev`
    stopped (in state `prev_state`) and `next` started; tasks as
    (comm, pid)."""

    cpu: int
    ns: int
    prev: tuple[str, int]
    prev_state: str
    next: tuple[str, int]


@dataclass(frozen=True)
class Events:
    """What the tracer recorded: the switches, oldest first, and the
    clock marker's time (raw clock) and counter value if it was seen."""

    switches: list[Switch]
    marker: tuple[int, int] | None
    lost: int


def events(text: Iterable[str], raw: Iterable[str]) -> Events:
    """The tracer's text and raw outputs joined event by event (see the
    module's docstring); an error naming the first line that does not
    agree."""
    text_events: list[tuple[int, int, str, str]] = []
    lost = 0
    for line in text:
        if not line.strip() or line.startswith("#"):
            continue
        if m := _LOST.search(line):
            lost += int(m.group(2))
            continue
        m = _TEXT.match(line)
        if not m:
            raise TandemError(f"tracer output: not an event: {line!r}")
        usecs = int(m["secs"]) * 1_000_000 + int(m["usecs"])
        text_events.append((int(m["cpu"]), usecs, m["event"], m["body"]))
    raw_events: list[tuple[int, int]] = []
    for line in raw:
        if not line.strip() or line.startswith("#") or _LOST.search(line):
            continue
        m = _RAW.match(line)
        if not m:
            raise TandemError(f"tracer raw output: not an event: {line!r}")
        raw_events.append((int(m.group(2)), int(m.group(3))))
    if len(text_events) != len(raw_events):
        raise TandemError(
            f"the tracer's text and raw outputs list {len(text_events)} and "
            f"{len(raw_events)} events: not the same buffer"
        )
    switches: list[Switch] = []
    marker: tuple[int, int] | None = None
    for (cpu, usecs, event, body), (raw_cpu, ns) in zip(text_events, raw_events, strict=True):
        # The text rounds to the nearest µs (ns2usecs adds 500 first).
        if cpu != raw_cpu or (ns + 500) // 1000 != usecs:
            raise TandemError(
                f"tracer outputs disagree: CPU {cpu} at {usecs} µs against CPU {raw_cpu} at "
                f"{ns} ns ({event}: {body})"
            )
        if event == "sched_switch":
            s = _SWITCH.match(body)
            if not s:
                raise TandemError(f"sched_switch not understood: {body!r}")
            switches.append(
                Switch(
                    cpu,
                    ns,
                    (s["prev_comm"], int(s["prev_pid"])),
                    s["prev_state"],
                    (s["next_comm"], int(s["next_pid"])),
                )
            )
        elif event in ("tracing_mark_write", "print") and (mk := _MARKER_EVENT.search(body)):
            marker = (ns, int(mk.group(1)))
    for a, b in itertools.pairwise(switches):
        if b.ns < a.ns:
            raise TandemError(f"tracer events out of order at {b.ns} ns")
    return Events(switches, marker, lost)


@dataclass(frozen=True)
class TaskSpan:
    """A Linux task running on a core, in counter ticks: Linux current
    there and the core in Linux's world (the caller clips it to that)."""

    core: int
    start: int
    end: int
    comm: str
    pid: int

    @property
    def name(self) -> str:
        return f"{self.comm} {self.pid}"


def task_spans(
    ev: Events, clock: ClockMap, cores: dict[int, int], start: int, end: int
) -> list[TaskSpan]:
    """Per core, which task Linux had current from `start` to `end`
    (ticks): the first switch's previous task from `start`, then each
    switch's next. A CPU without a switch in the window has no spans (its
    task is not known)."""
    by_cpu: dict[int, list[Switch]] = {}
    for s in ev.switches:
        by_cpu.setdefault(s.cpu, []).append(s)
    out: list[TaskSpan] = []
    for cpu, switches in sorted(by_cpu.items()):
        if cpu not in cores:
            raise TandemError(f"sched_switch on Linux CPU {cpu}, whose core is not known")
        core = cores[cpu]
        times = [round(clock.ticks(s.ns)) for s in switches]
        tasks = [switches[0].prev] + [s.next for s in switches]
        bounds = [start, *times, end]
        for (comm, pid), a, b in zip(tasks, bounds, bounds[1:], strict=False):
            a, b = max(a, start), min(b, end)
            if b > a:
                out.append(TaskSpan(core, a, b, comm, pid))
    return out


def clip(tasks: list[TaskSpan], linux: list[tuple[int, int, int]]) -> list[TaskSpan]:
    """The task spans within the cores' Linux spans `(core, start, end)`:
    where the RTOS (or the idle monitor) had the core, no task of Linux
    ran, whichever was current."""
    out: list[TaskSpan] = []
    for t in tasks:
        for core, a, b in linux:
            if core == t.core and a < t.end and t.start < b:
                out.append(TaskSpan(t.core, max(a, t.start), min(b, t.end), t.comm, t.pid))
    return sorted(out, key=lambda t: (t.core, t.start))
