"""The Perfetto trace of `tandem trace` and Linux's own scheduler events on
it: the file read back with Perfetto's own protobuf classes gives the
slices meant, per core; Linux's tracer output is joined, put on the
counter's clock and cut at the RTOS's slices; and in QEMU (marker `qemu`)
a traced boot's file has a track per core with Linux's tasks on them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tandem import exp
from tandem.errors import TandemError
from tandem.exp.trace import rings as trace
from tandem.exp.trace.spec import TRACE_FILE
from tandem.instruments import linuxsched, perfetto

HZ = 1_000_000  # one tick per µs

RINGS = """\
# counter_hz 1000000 cores 2
# now 20000
# core 0 written 4
0 100 1
0 5000 2
0 12000 1
0 12500 2
# core 1 written 2
1 50 1
1 9000 2
"""


def _window() -> tuple[trace.Trace, trace.Window]:
    t = trace.parse(RINGS.splitlines())
    return t, trace.window(t, 10.0)  # ticks 10000..20000


def test_the_file_read_back_has_the_worlds_per_core_track() -> None:
    t, win = _window()
    data = perfetto.build(trace.perfetto_slices(t, win), win.cores)
    found = perfetto.slices(data)
    us = 1000  # ns per tick here
    assert found == [
        perfetto.Slice("core 0", 10000 * us, 12000 * us, "Linux", 0, "world"),
        perfetto.Slice("core 0", 12000 * us, 12500 * us, "RTOS", 0, "world"),
        perfetto.Slice("core 0", 12500 * us, 20000 * us, "Linux", 0, "world"),
        perfetto.Slice("core 1", 10000 * us, 20000 * us, "Linux", 0, "world"),
    ]
    assert perfetto.summary(found)[:2] == [
        ("core 0", 0, "Linux", 2, 9500.0),
        ("core 0", 0, "RTOS", 1, 500.0),
    ]


def test_tasks_nest_in_linux_slices_and_stop_where_the_rtos_starts() -> None:
    t, win = _window()
    linux = [(c, a, b) for c, a, b, w in trace.tick_spans(t, win) if w == "linux"]
    # Core 0's task ran 11000..13000 in Linux's eyes; the RTOS had the core
    # 12000..12500, so it ran 11000..12000 and 12500..13000.
    current = [linuxsched.TaskSpan(0, 11000, 13000, "hackbench", 7)]
    tasks = linuxsched.clip(current, linux)
    assert [(x.start, x.end) for x in tasks] == [(11000, 12000), (12500, 13000)]
    found = perfetto.slices(perfetto.build(trace.perfetto_slices(t, win, tasks), win.cores))
    nested = [s for s in found if s.depth == 1]
    assert [(s.name, s.start_ns, s.end_ns) for s in nested] == [
        ("hackbench 7", 11_000_000, 12_000_000),
        ("hackbench 7", 12_500_000, 13_000_000),
    ]
    # A task ending where its Linux slice ends closes first: still nested.
    edge = [linuxsched.TaskSpan(0, 10000, 12000, "a", 1)]
    found = perfetto.slices(
        perfetto.build(trace.perfetto_slices(t, win, linuxsched.clip(edge, linux)), win.cores)
    )
    assert [s.depth for s in found if s.name == "a 1"] == [1]


def test_bad_files_are_errors() -> None:
    with pytest.raises(TandemError, match="not a Perfetto trace"):
        perfetto.slices(b"\xff\xff\xff")
    good = perfetto.build([perfetto.Slice("core 0", 1, 5, "RTOS", 0, "world")], [0])
    assert perfetto.slices(good)[0].end_ns == 5
    with pytest.raises(TandemError, match="unknown track"):
        perfetto.build([perfetto.Slice("core 9", 1, 5, "RTOS", 0, "world")], [0])
    with pytest.raises(TandemError, match="empty or reversed"):
        perfetto.build([perfetto.Slice("core 0", 5, 5, "RTOS", 0, "world")], [0])


# Linux's tracer, as 6.1 prints sched_switch (text) and the same events with
# `options/raw` (pid, CPU, time in ns, the event's type).
TEXT = """\
# tracer: nop
#
          <idle>-0       [001] d..2.    12.000100: sched_switch: prev_comm=swapper/1 \
prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hack bench next_pid=210 next_prio=120
     tandem-trace-99     [000] .....    12.000151: tracing_mark_write: tandem_clock_marker 11
       hack bench-210     [001] d..2.    12.000300: sched_switch: prev_comm=hack bench \
prev_pid=210 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
"""
RAW = """\
0 1 12000100400 type: 317
99 0 12000150999 # ffff800008123456 tandem_clock_marker 11
210 1 12000300016 type: 317
"""


def test_linux_events_join_text_and_raw_and_land_on_the_counter() -> None:
    ev = linuxsched.events(TEXT.splitlines(), RAW.splitlines())
    assert [(s.cpu, s.ns, s.prev, s.next) for s in ev.switches] == [
        (1, 12000100400, ("swapper/1", 0), ("hack bench", 210)),
        (1, 12000300016, ("hack bench", 210), ("swapper/1", 0)),
    ]
    assert ev.marker == (12000150999, 11)
    # The raw clock is the counter (1 MHz here) from an origin 2 s earlier:
    # 12.0001004 s of raw clock is tick 10000100.4.
    samples = ["# clock 100 2000100500 101", "# clock 5000 2005000200 5001"]
    clock = linuxsched.clock_map(samples, HZ)
    assert clock.origin_ns == pytest.approx(2e9, abs=1000)
    # As the guest prints them: od's output starts with a space.
    cores = linuxsched.cpu_cores(["cpu0  00 00 00 00", "cpu1  00 00 00 03"])
    assert cores == {0: 0, 1: 3}
    spans = linuxsched.task_spans(ev, clock, cores, 10_000_000, 10_000_400)
    assert [(t.core, t.name) for t in spans] == [
        (3, "swapper/1 0"),
        (3, "hack bench 210"),
        (3, "swapper/1 0"),
    ]
    assert spans[1].start == round(clock.ticks(12000100400))


@pytest.mark.parametrize(
    ("text", "raw", "why"),
    [
        (TEXT, RAW.replace("0 1 12000100400", "0 0 12000100400"), "disagree"),
        (TEXT, RAW.replace("12000100400", "12000200400"), "disagree"),
        (TEXT, "\n".join(RAW.splitlines()[:2]), "not the same buffer"),
        (TEXT.replace("==>", "->"), RAW, "not understood"),
        ("garbage\n", "0 0 1 type: 3\n", "not an event"),
    ],
)
def test_tracer_outputs_that_do_not_agree_are_errors(text: str, raw: str, why: str) -> None:
    with pytest.raises(TandemError, match=why):
        linuxsched.events(text.splitlines(), raw.splitlines())


def test_clocks_that_are_not_one_clock_are_an_error() -> None:
    # Two samples a second apart whose raw readings moved 1.1 s: not the counter.
    with pytest.raises(TandemError, match="no common origin"):
        linuxsched.clock_map(["# clock 0 5000 1", "# clock 1000000 1100005000 1000001"], HZ)
    with pytest.raises(TandemError, match="no '# clock'"):
        linuxsched.clock_map([], HZ)


def test_query_without_trace_processor_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(perfetto.TRACE_PROCESSOR, raising=False)
    with pytest.raises(TandemError, match="needs the network"):
        perfetto.query(tmp_path / "x", perfetto.WORLDS_QUERY)


@pytest.mark.skipif(
    not os.environ.get(perfetto.TRACE_PROCESSOR),
    reason=f"no trace_processor_shell (set {perfetto.TRACE_PROCESSOR}; the perfetto package "
    "would download one, and this machine has no network)",
)
def test_trace_processor_reads_the_slices(tmp_path: Path) -> None:
    t, win = _window()
    tasks = [linuxsched.TaskSpan(0, 11000, 12000, "hackbench", 7)]
    path = tmp_path / TRACE_FILE
    path.write_bytes(perfetto.build(trace.perfetto_slices(t, win, tasks), win.cores))
    rows = perfetto.query(path, perfetto.WORLDS_QUERY)
    got = [(r["track"], r["depth"], r["name"], r["slices"]) for r in rows]
    assert got == [
        (a, b, c, d) for a, b, c, d, _ in perfetto.summary(perfetto.slices(path.read_bytes()))
    ]


@pytest.mark.qemu
def test_a_traced_boot_has_four_core_tracks_with_linuxs_tasks_on_them(tmp_path: Path) -> None:
    out = exp.run("trace", False, {"window_us": 5000, "linux_sched": True}, out_root=tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    sched = summary["linux_sched"]
    assert sched["sched_switches"] > 0 and sched["lost_events"] == 0, sched
    # The clock conversion: within a few ticks, and the tracer's own stamp
    # of a marker written right after a counter read lands just after it.
    assert sched["clock_uncertainty_ns"] < 200, sched
    marker = sched["marker"]
    assert marker is not None
    assert 0 <= marker["tracer_stamp_ticks"] - marker["counter"] < 62_500 // 10, marker
    found = perfetto.slices((out / TRACE_FILE).read_bytes())
    tracks = sorted({s.track for s in found})
    assert tracks == ["core 0", "core 1", "core 2", "core 3"]
    worlds = [s for s in found if s.depth == 0]
    tasks = [s for s in found if s.depth == 1]
    assert {s.name for s in worlds} <= {"RTOS", "Linux", "idle"}
    assert {s.track for s in tasks} == set(tracks), "Linux's tasks on every core"
    assert any(s.name.startswith("hackbench ") for s in tasks)
    # Every task slice lies in a Linux slice of its core.
    for s in tasks:
        assert any(
            w.track == s.track
            and w.name == "Linux"
            and w.start_ns <= s.start_ns
            and s.end_ns <= w.end_ns
            for w in worlds
        ), s
    assert (out / "tasks.csv").read_text().startswith("core,start_us,end_us,comm,pid\n")
    if shutil.which("trace_processor_shell") or os.environ.get(perfetto.TRACE_PROCESSOR):
        rows = perfetto.query(out / TRACE_FILE, perfetto.WORLDS_QUERY)
        assert {r["track"] for r in rows} == set(tracks)
