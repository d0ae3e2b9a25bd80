"""Reading the `trace` boot: tandem-trace's dump of the monitor's per-core
world-switch rings, the window it covers, each core's worlds over it, and
(with `linux_sched`) Linux's tasks from its own tracer.

The rings hold switch times only; a core stays in a world from one switch to
the next, and in the last one until the dump (`# now`). The dump's time is
the counter just before tandem-trace read the first ring (`# read`: once it
had read them all), and it prints each ring's switches up to it: every ring
was read after that moment, so each is complete up to it however long a
loaded Linux kept the reader from running. The window ends at the dump and
may reach back only as far as every core's ring does: before a core's oldest
kept entry its world is unknown."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tandem.errors import TandemError
from tandem.exp.trace.script import END_MARK, RAW_MARK, SCHED_MARK, TEXT_MARK
from tandem.exp.trace.spec import EVENTS, WORLDS
from tandem.instruments import linuxsched, perfetto
from tandem.platform.abi_generated import MAX_CORES

_HEADER = re.compile(r"# counter_hz (\d+) cores (\d+)")
_NOW = re.compile(r"# now (\d+)")
_READ = re.compile(r"# read (\d+)")
_CORE = re.compile(r"# core (\d+) written (\d+)")
_ENTRY = re.compile(r"(\d+) (\d+) (\d+)")


@dataclass(frozen=True)
class Trace:
    """What tandem-trace printed: per core, its switches (counter ticks, world
    entered) oldest first, and how many the monitor ever wrote."""

    counter_hz: int
    cores: int
    now: int
    written: dict[int, int]
    switches: dict[int, list[tuple[int, str]]]
    # When tandem-trace had read every ring (None from a dump without it).
    read: int | None = None


@dataclass(frozen=True)
class Interval:
    """A stretch of one world on one core, in µs from the window's start."""

    core: int
    start_us: float
    end_us: float
    world: str


@dataclass(frozen=True)
class Window:
    """The window in counter ticks, and the cores it covers (those that ever
    switched)."""

    start: int
    end: int
    counter_hz: int
    cores: tuple[int, ...]

    @property
    def length_us(self) -> float:
        return (self.end - self.start) * 1e6 / self.counter_hz


def parse(lines: Iterable[str]) -> Trace:
    """Reads tandem-trace's output; anything unexpected is an error naming the
    line, since the region it came from is writable by Linux."""
    counter_hz = cores = 0
    now: int | None = None
    read: int | None = None
    written: dict[int, int] = {}
    switches: dict[int, list[tuple[int, str]]] = {}
    core: int | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()

        def bad(why: str, number: int = number, line: str = line) -> TandemError:
            return TandemError(f"trace line {number} ({line!r}): {why}")

        if number == 1:
            m = _HEADER.fullmatch(line)
            if not m:
                raise bad("expected '# counter_hz H cores C'")
            counter_hz, cores = int(m[1]), int(m[2])
            if counter_hz == 0 or not 1 <= cores <= MAX_CORES:
                raise bad(f"counter_hz must be > 0 and cores 1..{MAX_CORES}")
        elif line.startswith("# clock "):
            # Linux's raw clock beside the counter (tandem-trace --clock):
            # linuxsched's, not the rings'.
            continue
        elif m := _NOW.fullmatch(line):
            if now is not None:
                raise bad("second '# now'")
            now = int(m[1])
        elif m := _READ.fullmatch(line):
            if read is not None:
                raise bad("second '# read'")
            if now is None or int(m[1]) < now:
                raise bad("'# read' must follow '# now' and not be before it")
            read = int(m[1])
        elif m := _CORE.fullmatch(line):
            core = int(m[1])
            if core >= cores or core in written:
                raise bad(f"core must be new and below {cores}")
            written[core] = int(m[2])
            switches[core] = []
        elif m := _ENTRY.fullmatch(line):
            if core is None or int(m[1]) != core:
                raise bad("entry outside its core's section")
            ticks, event = int(m[2]), int(m[3])
            if event not in EVENTS:
                raise bad(f"unknown event {event}")
            mine = switches[core]
            if mine and ticks < mine[-1][0]:
                raise bad("time goes backwards")
            if now is not None and ticks > now:
                raise bad("switch after the dump time")
            if len(mine) == written[core]:
                raise bad(f"more entries than the {written[core]} written")
            mine.append((ticks, EVENTS[event]))
        else:
            raise bad("not a trace line")
    if counter_hz == 0:
        raise TandemError("empty trace")
    if now is None:
        raise TandemError("trace has no '# now' line")
    missing = sorted(set(range(cores)) - set(written))
    if missing:
        raise TandemError(f"trace has no section for core(s) {missing}")
    for c, mine in switches.items():
        if written[c] and not mine:
            raise TandemError(f"core {c}: {written[c]} switches written, none readable")
        if mine and mine[-1][0] > now:
            raise TandemError(f"core {c}: switch after the dump time")
    return Trace(counter_hz, cores, now, written, switches, read)


def window(trace: Trace, window_ms: float) -> Window:
    """The last `window_ms` before the dump, checked to lie within every
    traced core's ring."""
    if window_ms <= 0:
        raise TandemError(f"window must be positive, got {window_ms} ms")
    traced = tuple(c for c in range(trace.cores) if trace.switches[c])
    if not traced:
        raise TandemError("no core recorded a world switch")
    ticks = round(window_ms * trace.counter_hz / 1000)
    start = trace.now - ticks
    covered = max(trace.switches[c][0][0] for c in traced)
    if start < covered:
        have = (trace.now - covered) * 1000 / trace.counter_hz
        raise TandemError(
            f"the trace covers only the last {have:.3f} ms on every core; "
            f"ask for a window of at most that (got {window_ms} ms)"
        )
    return Window(start, trace.now, trace.counter_hz, traced)


def tick_spans(trace: Trace, win: Window) -> list[tuple[int, int, int, str]]:
    """Each covered core's worlds over the window as (core, start, end,
    world) in counter ticks, adjacent stretches of the same world merged."""
    out: list[tuple[int, int, int, str]] = []
    for core in win.cores:
        mine = trace.switches[core]
        ends = [t for t, _ in mine[1:]] + [win.end]
        spans: list[tuple[int, int, str]] = []
        for (begin, world), end in zip(mine, ends, strict=True):
            begin, end = max(begin, win.start), min(end, win.end)
            if end <= begin:
                continue
            if spans and spans[-1][2] == world and spans[-1][1] == begin:
                spans[-1] = (spans[-1][0], end, world)
            else:
                spans.append((begin, end, world))
        out.extend((core, b, e, w) for b, e, w in spans)
    return out


def us_since(win: Window, ticks: int) -> float:
    """Counter ticks as µs from the window's start."""
    return (ticks - win.start) * 1e6 / win.counter_hz


def intervals(trace: Trace, win: Window) -> list[Interval]:
    """Each covered core's worlds over the window, adjacent stretches of the
    same world merged, in µs from the window's start."""
    return [
        Interval(core, us_since(win, b), us_since(win, e), w)
        for core, b, e, w in tick_spans(trace, win)
    ]


def ns(ticks: int, counter_hz: int) -> int:
    """Counter ticks in ns since the counter started (Perfetto's time)."""
    return ticks * 1_000_000_000 // counter_hz


def perfetto_slices(
    trace: Trace,
    win: Window,
    tasks: list[linuxsched.TaskSpan] | None = None,
) -> list[perfetto.Slice]:
    """The window's worlds (depth 0) and Linux's tasks inside Linux's
    stretches (depth 1), per core track."""
    hz = trace.counter_hz
    out = [
        perfetto.Slice(
            perfetto.track_name(core), ns(b, hz), ns(e, hz), perfetto.WORLD_NAMES[w], 0, "world"
        )
        for core, b, e, w in tick_spans(trace, win)
    ]
    for t in tasks or []:
        start, end = ns(t.start, hz), ns(t.end, hz)
        if end > start:
            out.append(perfetto.Slice(perfetto.track_name(t.core), start, end, t.name, 1, "linux"))
    return out


def shares(spans: list[Interval], win: Window) -> dict[str, dict[str, float]]:
    """Per core, the fraction of the window spent in each world."""
    total = win.length_us
    result: dict[str, dict[str, float]] = {}
    for core in win.cores:
        time = dict.fromkeys(WORLDS, 0.0)
        for s in spans:
            if s.core == core:
                time[s.world] += s.end_us - s.start_us
        result[str(core)] = {w: round(t / total, 4) for w, t in time.items()}
    return result


def _section(lines: list[str], begin: str, end: str) -> list[str]:
    """The lines between two marker lines of the script's output."""
    try:
        a = lines.index(begin)
        b = lines.index(end, a + 1)
    except ValueError:
        raise TandemError(f"trace: the guest printed no {begin} ... {end} section") from None
    return lines[a + 1 : b]


@dataclass(frozen=True)
class Sched:
    """What `--linux-sched` gave: Linux's tasks per core (ticks, inside
    Linux's stretches), the clock conversion and how it checked out."""

    tasks: list[linuxsched.TaskSpan]
    clock: linuxsched.ClockMap
    switches: int
    lost: int
    # The clock marker's counter value and where the conversion put the
    # tracer's stamp of it (ticks), if the marker was recorded.
    marker: tuple[int, float] | None


def linux_sched(lines: list[str], trace: Trace, win: Window) -> Sched:
    """Linux's tasks over the window from the script's sched sections."""
    sched = _section(lines, SCHED_MARK, TEXT_MARK)
    rings = lines[: lines.index(SCHED_MARK)]
    clock = linuxsched.clock_map(rings + sched, trace.counter_hz)
    cores = linuxsched.cpu_cores(sched)
    ev = linuxsched.events(
        _section(lines, TEXT_MARK, RAW_MARK), _section(lines, RAW_MARK, END_MARK)
    )
    marker = None
    if ev.marker is not None:
        stamp, counter = ev.marker
        marker = (counter, clock.ticks(stamp))
    current = linuxsched.task_spans(ev, clock, cores, win.start, win.end)
    linux = [(c, a, b) for c, a, b, w in tick_spans(trace, win) if w == "linux"]
    return Sched(linuxsched.clip(current, linux), clock, len(ev.switches), ev.lost, marker)


def dump(lines: list[str], where: str) -> list[str]:
    """tandem-trace's lines among what the boot printed: from its header to
    the sched sections (if any)."""
    first = next((i for i, line in enumerate(lines) if line.startswith("# counter_hz")), None)
    if first is None:
        raise TandemError(f"trace: tandem-trace printed nothing ({where})")
    last = lines.index(SCHED_MARK) if SCHED_MARK in lines else len(lines)
    return lines[first:last]
