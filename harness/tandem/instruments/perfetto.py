"""The world timeline as a Perfetto trace (`tandem trace`'s
`trace.perfetto-trace`), for ui.perfetto.dev and trace_processor.

One track per core ("core N"); on it a slice per stretch of a world (RTOS,
Linux, idle: the monitor waiting, neither world having work) and, nested in
Linux's slices (depth 1), Linux's tasks as its scheduler ran them
(`--linux-sched`), so a task cut by an RTOS slice is the one the RTOS
preempted. Timestamps are the generic counter's ticks in nanoseconds since
the counter started (the trace's one clock; Perfetto takes them as its
default clock).

Written with the `perfetto` package's protobuf classes (the Trace and
TracePacket messages of Perfetto's own trace format); `slices` reads a file
back with the same classes, so a test can compare what a viewer will show
with what was meant. `query` runs SQL in trace_processor when a
trace_processor_shell binary is at hand (TRACE_PROCESSOR): the `perfetto`
package downloads one on first use, which needs the network.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TracePacket, TrackEvent

from tandem.errors import TandemError

# The one sequence every packet belongs to, and the cores' track ids.
SEQUENCE = 1
TRACK_BASE = 1000
WORLD_NAMES = {"rtos": "RTOS", "linux": "Linux", "idle": "idle"}
# Where `query` finds trace_processor_shell: this variable, else none (no
# download is attempted).
TRACE_PROCESSOR = "TANDEM_TRACE_PROCESSOR"


@dataclass(frozen=True)
class Slice:
    """A slice on a track, in ns: its name, depth (0: a world; 1: a Linux
    task in it) and category."""

    track: str
    start_ns: int
    end_ns: int
    name: str
    depth: int
    category: str


def track_name(core: int) -> str:
    return f"core {core}"


def build(slices: Iterable[Slice], cores: Iterable[int]) -> bytes:
    """The trace: a track descriptor per core, then each slice as a begin
    and an end event, in time order per track (ends before begins at the
    same time; a nested slice inside its parent)."""
    trace = Trace()
    uuids = {track_name(c): TRACK_BASE + c for c in cores}
    first = True
    for name, uuid in uuids.items():
        p = trace.packet.add()
        p.trusted_packet_sequence_id = SEQUENCE
        if first:
            p.sequence_flags = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            first = False
        p.track_descriptor.uuid = uuid
        p.track_descriptor.name = name
    # (time, order, ...): at one time, ends (deepest first) come before
    # begins (shallowest first), so nesting holds.
    events: list[tuple[int, int, int, str, Slice]] = []
    for s in slices:
        if s.track not in uuids:
            raise TandemError(f"slice on unknown track {s.track!r}")
        if s.end_ns <= s.start_ns:
            raise TandemError(f"empty or reversed slice {s}")
        events.append((s.start_ns, 1, s.depth, "B", s))
        events.append((s.end_ns, 0, -s.depth, "E", s))
    events.sort(key=lambda e: (e[4].track, e[0], e[1], e[2]))
    for ts, _, _, kind, s in events:
        p = trace.packet.add()
        p.trusted_packet_sequence_id = SEQUENCE
        p.timestamp = ts
        ev = p.track_event
        ev.track_uuid = uuids[s.track]
        if kind == "B":
            ev.type = TrackEvent.TYPE_SLICE_BEGIN
            ev.name = s.name
            ev.categories.append(s.category)
        else:
            ev.type = TrackEvent.TYPE_SLICE_END
    return bytes(trace.SerializeToString())


def slices(data: bytes) -> list[Slice]:
    """A trace's slices as a viewer builds them: per track, each begin
    matched with the next end on that track (a stack), the depth its
    nesting. An error for an end without a begin, a begin never ended, or
    an event on a track never described."""
    trace = Trace()
    try:
        trace.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError has no public base class
        raise TandemError(f"not a Perfetto trace: {e}") from None
    names: dict[int, str] = {}
    open_: dict[int, list[tuple[int, str, str]]] = {}
    out: list[Slice] = []
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            names[p.track_descriptor.uuid] = p.track_descriptor.name
            continue
        if not p.HasField("track_event"):
            continue
        ev = p.track_event
        if ev.track_uuid not in names:
            raise TandemError(f"event on undescribed track {ev.track_uuid}")
        stack = open_.setdefault(ev.track_uuid, [])
        if ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            stack.append((p.timestamp, ev.name, ev.categories[0] if ev.categories else ""))
        elif ev.type == TrackEvent.TYPE_SLICE_END:
            if not stack:
                raise TandemError(f"{names[ev.track_uuid]}: end without a begin at {p.timestamp}")
            start, name, category = stack.pop()
            out.append(Slice(names[ev.track_uuid], start, p.timestamp, name, len(stack), category))
        else:
            raise TandemError(f"unexpected track event type {ev.type}")
    for uuid, stack in open_.items():
        if stack:
            raise TandemError(f"{names[uuid]}: {len(stack)} slice(s) never ended")
    return sorted(out, key=lambda s: (s.track, s.start_ns, s.depth))


def summary(found: list[Slice]) -> list[tuple[str, int, str, int, float]]:
    """Per track, depth and name: the slices' count and time (µs), as the
    query in docs/harness.md gives them."""
    acc: dict[tuple[str, int, str], tuple[int, int]] = {}
    for s in found:
        n, t = acc.get((s.track, s.depth, s.name), (0, 0))
        acc[(s.track, s.depth, s.name)] = (n + 1, t + s.end_ns - s.start_ns)
    return [(k[0], k[1], k[2], n, t / 1000) for k, (n, t) in sorted(acc.items())]


# The query docs/harness.md shows: slices per core track and world.
WORLDS_QUERY = """
select t.name as track, s.depth, s.name, count(*) as slices, sum(s.dur) / 1000.0 as us
from slice s join track t on s.track_id = t.id
group by t.name, s.depth, s.name order by t.name, s.depth, s.name
"""


def query(path: Path, sql: str, binary: str | None = None) -> list[dict[str, object]]:
    """Rows of `sql` over the trace, in Perfetto's trace_processor (the
    `perfetto` package's API on trace_processor_shell at `binary`, or
    $TANDEM_TRACE_PROCESSOR). No binary: an error saying why (the package
    would download one, and this needs no network)."""
    binary = binary or os.environ.get(TRACE_PROCESSOR)
    if not binary:
        raise TandemError(
            f"no trace_processor_shell: set {TRACE_PROCESSOR} to one (the perfetto package "
            "downloads its prebuilt binary from Google's servers on first use, which needs the "
            "network; Debian has no package of it)"
        )
    from perfetto.trace_processor.api import TraceProcessor, TraceProcessorConfig

    tp = TraceProcessor(trace=str(path), config=TraceProcessorConfig(bin_path=binary))
    # Typed here: the package's own functions carry no annotations.
    close: Callable[[], None] = tp.close
    try:
        return [dict(vars(row)) for row in tp.query(sql)]
    finally:
        close()


def main(path: Path, sql: str | None) -> int:
    """`tandem perfetto FILE`: the file's slices per track, depth and name
    (read back with Perfetto's own protobuf classes: the columns the docs'
    query gives); with --sql, that query in trace_processor."""
    if not path.is_file():
        raise TandemError(f"no such file: {path}")
    if sql is not None:
        rows = query(path, sql)
        for row in rows:
            print("\t".join(str(v) for v in row.values()))
        return 0
    print("track\tdepth\tname\tslices\tus")
    for track, depth, name, count, us in summary(slices(path.read_bytes())):
        print(f"{track}\t{depth}\t{name}\t{count}\t{us:.3f}")
    return 0
