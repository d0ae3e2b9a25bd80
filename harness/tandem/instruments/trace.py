"""`tandem trace`: which world ran on each core over a window, from the
monitor's per-core world-switch trace rings, dumped in Linux by tandem-trace.

The rings hold switch times only; a core stays in a world from one switch to
the next, and in the last one until the dump (`# now`). The window ends at the
dump and may reach back only as far as every core's ring does: before a
core's oldest kept entry its world is unknown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform.abi_generated import MAX_CORES
from tandem.platform.boot import BootOptions, run_exec
from tandem.platform.paths import RESULTS
from tandem.results import PartialRun

# Trace event values (abi/src/shm.rs TRACE_TO_*) and the world each enters.
EVENTS = {1: "rtos", 2: "linux", 3: "idle"}
WORLDS = ("rtos", "linux", "idle")
COLOURS = {"rtos": "#d62728", "linux": "#1f77b4", "idle": "#c7c7c7"}
LOADS = ("none", "hackbench")

_HEADER = re.compile(r"# counter_hz (\d+) cores (\d+)")
_NOW = re.compile(r"# now (\d+)")
_CORE = re.compile(r"# core (\d+) written (\d+)")
_ENTRY = re.compile(r"(\d+) (\d+) (\d+)")

# Linux's load starts, runs this long before the dump (plus the window), so
# the window shows it in full swing, and is stopped after the dump.
SETTLE_MS = 300
SCRIPT = """
set -e
{start}
usleep {sleep_us}
tandem-trace > /tmp/trace.txt
{stop}
cat /tmp/trace.txt
"""
LOAD_COMMANDS = {
    "none": ("", ""),
    "hackbench": (
        "hackbench -g 4 -l 1000000 > /dev/null 2>&1 &\nload=$!",
        "kill $load 2> /dev/null || true",
    ),
}


@dataclass(frozen=True)
class Trace:
    """What tandem-trace printed: per core, its switches (counter ticks, world
    entered) oldest first, and how many the monitor ever wrote."""

    counter_hz: int
    cores: int
    now: int
    written: dict[int, int]
    switches: dict[int, list[tuple[int, str]]]


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
        elif m := _NOW.fullmatch(line):
            if now is not None:
                raise bad("second '# now'")
            now = int(m[1])
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
    return Trace(counter_hz, cores, now, written, switches)


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


def intervals(trace: Trace, win: Window) -> list[Interval]:
    """Each covered core's worlds over the window, adjacent stretches of the
    same world merged, in µs from the window's start."""

    def us(ticks: int) -> float:
        return (ticks - win.start) * 1e6 / win.counter_hz

    out: list[Interval] = []
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
        out.extend(Interval(core, us(b), us(e), w) for b, e, w in spans)
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


def plot(spans: list[Interval], win: Window, title: str, path: Path) -> None:
    """One horizontal track per core, a colour per world."""
    # The object API with the Agg canvas: no pyplot state, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fig = Figure(figsize=(12, 1.2 + 0.6 * len(win.cores)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for row, core in enumerate(win.cores):
        for world in WORLDS:
            bars = [
                (s.start_us, s.end_us - s.start_us)
                for s in spans
                if s.core == core and s.world == world
            ]
            if bars:
                ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=COLOURS[world], linewidth=0)
    ax.set_yticks(range(len(win.cores)), [f"core {c}" for c in win.cores])
    ax.invert_yaxis()
    ax.set_xlim(0, win.length_us)
    ax.set_xlabel("time in the window (\u00b5s)")
    ax.set_title(title)
    ax.legend(
        handles=[Patch(color=COLOURS[w], label=w) for w in WORLDS],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(options: BootOptions, window_ms: float, load: str, out_root: Path = RESULTS) -> Path:
    """Boots, runs `load` in Linux, dumps the trace rings while it runs, and
    writes trace.csv, summary.json, timeline.png and the raw dump (rings.txt)
    to out_root/trace/<run-id>."""
    if load not in LOADS:
        raise TandemError(f"load must be one of {', '.join(LOADS)}, got '{load}'")
    if window_ms <= 0:
        raise TandemError(f"--window-ms must be positive, got {window_ms}")
    start, stop = LOAD_COMMANDS[load]
    sleep_us = round((SETTLE_MS + window_ms) * 1000)
    script = SCRIPT.format(start=start, sleep_us=sleep_us, stop=stop)
    print(
        f"trace: booting ({options.config}, {options.timing.words()}, {options.smp} cores, "
        f"load {load})",
        file=sys.stderr,
    )
    result = run_exec(options, script, timeout_s=900)
    if result.status != 0:
        raise TandemError(
            f"trace: run failed with status {result.status}: {result.output[-500:]} "
            f"(console: {result.console_log})"
        )
    lines = result.lines
    first = next((i for i, line in enumerate(lines) if line.startswith("# counter_hz")), None)
    if first is None:
        raise TandemError(f"trace: tandem-trace printed nothing (console: {result.console_log})")
    trace = parse(lines[first:])
    win = window(trace, window_ms)
    spans = intervals(trace, win)
    per_core = shares(spans, win)
    summary = {
        "command": "trace",
        "timing": options.timing.mode,
        "quantum_ns": options.timing.quantum,
        "config": options.config,
        "smp": options.smp,
        "load": load,
        "window_ms": window_ms,
        "window_ticks": [win.start, win.end],
        "counter_hz": trace.counter_hz,
        "cores_traced": list(win.cores),
        "switches_written": {str(c): n for c, n in trace.written.items()},
        "share": per_core,
    }
    title = (
        f"config {options.config}, {options.timing.words()}: world per core, "
        f"last {window_ms:g} ms (Linux load: {load})"
    )
    run_dir = PartialRun(out_root / "trace")
    try:
        out = run_dir.dir
        (out / "rings.txt").write_text("\n".join(lines[first:]) + "\n")
        with (out / "trace.csv").open("w") as f:
            f.write("core,start_us,end_us,world\n")
            for s in spans:
                f.write(f"{s.core},{s.start_us:.3f},{s.end_us:.3f},{s.world}\n")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        plot(spans, win, title, out / "timeline.png")
    except BaseException:
        run_dir.discard()
        raise
    final = run_dir.finish()
    for core, share in per_core.items():
        parts = ", ".join(f"{w} {share[w] * 100:5.1f}%" for w in WORLDS)
        print(f"core {core}: {parts}")
    print(f"results: {final}")
    return final


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `tandem trace` beyond the boot options."""
    parser.add_argument(
        "--window-ms",
        type=float,
        default=10.0,
        help="the last this many ms before the dump (default 10)",
    )
    parser.add_argument(
        "--load",
        choices=LOADS,
        default="hackbench",
        help="what Linux runs meanwhile (default hackbench)",
    )


def main(args: argparse.Namespace, options: BootOptions) -> int:
    """Runs `tandem trace` for parsed arguments; returns the exit status."""
    run(options, args.window_ms, args.load)
    return 0
