"""`tandem trace`: which world ran on each core over a window, from the
monitor's per-core world-switch trace rings, dumped in Linux by tandem-trace.

The rings hold switch times only; a core stays in a world from one switch to
the next, and in the last one until the dump (`# now`). The dump's time is
the counter just before tandem-trace read the first ring (`# read`: once it
had read them all), and it prints each ring's switches up to it: every ring
was read after that moment, so each is complete up to it however long a
loaded Linux kept the reader from running. The window ends at the dump and
may reach back only as far as every core's ring does: before a core's oldest
kept entry its world is unknown.

Every run also writes the timeline as a Perfetto trace (instruments/perfetto.py);
with `--linux-sched`, Linux's own sched_switch events (instruments/linuxsched.py)
put Linux's tasks on the same tracks, on the counter's clock.
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
from tandem.instruments import linuxsched, perfetto
from tandem.platform.abi_generated import MAX_CORES
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import RESULTS
from tandem.results import PartialRun

# Trace event values (abi/src/shm.rs TRACE_TO_*) and the world each enters.
EVENTS = {1: "rtos", 2: "linux", 3: "idle"}
WORLDS = ("rtos", "linux", "idle")
COLOURS = {"rtos": "#d62728", "linux": "#1f77b4", "idle": "#c7c7c7"}
LOADS = ("none", "hackbench")
# The Perfetto trace in every run directory.
TRACE_FILE = "trace.perfetto-trace"

_HEADER = re.compile(r"# counter_hz (\d+) cores (\d+)")
_NOW = re.compile(r"# now (\d+)")
_READ = re.compile(r"# read (\d+)")
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
# With --linux-sched: Linux's tracer records sched_switch, on its raw
# clock, from just before the window to the end of the dump; then the
# clock samples, each CPU's core, the tracer's output in text and raw form.
TRACEFS = "/sys/kernel/tracing"
SCHED_BUFFER_KB = 8192
SCHED_SCRIPT = r"""
set -e
T={tracefs}
[ -d $T/events ] || mount -t tracefs tracefs $T
echo 0 > $T/tracing_on
echo mono_raw > $T/trace_clock
echo {buffer_kb} > $T/buffer_size_kb
echo > $T/trace
echo 1 > $T/events/sched/sched_switch/enable
{start}
usleep {settle_us}
echo 1 > $T/tracing_on
usleep {window_us}
tandem-trace --clock > /tmp/trace.txt
tandem-trace clock 64 > /tmp/clock.txt
echo 0 > $T/tracing_on
{stop}
cat /tmp/trace.txt
echo "{sched}"
cat /tmp/clock.txt
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	echo "${{c##*/}} $(od -An -tx1 $c/of_node/reg)"
done
# Only the events from {margin_us} µs before the window to as long after
# its end (the tracer ran from the settle's end to after the dump, and a
# busy Linux wakes the shell late), and the clock marker: the raw clock
# at the dump's time (`# now`, before the rings were read), in µs, gives
# the bounds.
at=$(awk '/^# clock / {{ print int($4 / 1000); exit }}' /tmp/trace.txt)
since=$((at - {window_us} - {margin_us}))
until=$((at + {margin_us}))
echo "{text}"
grep -v '^#' $T/trace | awk -v t="$since" -v u="$until" '
	/LOST|tandem_clock_marker/ {{ print; next }}
	{{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]:$/) {{
		split($i, a, /[.:]/); us = a[1] * 1000000 + a[2]
		if (us >= t && us <= u) print
		break
	}} }}' || true
echo 1 > $T/options/raw
echo "{raw}"
# A time rounds to the µs in the text above: the same events by ns here.
grep -v '^#' $T/trace | awk -v t="$since" -v u="$until" '
	/LOST|tandem_clock_marker/ {{ print; next }}
	$3 >= t * 1000 - 500 && $3 < u * 1000 + 500' || true
echo 0 > $T/options/raw
echo "{end}"
"""
# Events kept from this long before the window (µs).
SCHED_MARGIN_US = 1000
SCHED_MARK = "@@TANDEM-SCHED@@"
TEXT_MARK = "@@TANDEM-SCHED-TEXT@@"
RAW_MARK = "@@TANDEM-SCHED-RAW@@"
END_MARK = "@@TANDEM-SCHED-END@@"
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


def _task_colour(name: str) -> str:
    """A stable colour per task (its name's digest into a 20-colour map)."""
    import hashlib

    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    k = int.from_bytes(hashlib.sha256(name.encode()).digest()[:2], "big") % 20
    return str(to_hex(colormaps["tab20"](k)))


def plot(
    spans: list[Interval],
    win: Window,
    title: str,
    path: Path,
    tasks: list[tuple[int, float, float, str]] | None = None,
) -> None:
    """One horizontal track per core, a colour per world; with `tasks`
    (core, start µs, end µs, name), Linux's tasks in a band under each
    core's worlds, named where there is room."""
    # The object API with the Agg canvas: no pyplot state, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fig = Figure(figsize=(12, 1.2 + (0.9 if tasks is not None else 0.6) * len(win.cores)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    world_band = (-0.4, 0.45) if tasks is not None else (-0.4, 0.8)
    for row, core in enumerate(win.cores):
        for world in WORLDS:
            bars = [
                (s.start_us, s.end_us - s.start_us)
                for s in spans
                if s.core == core and s.world == world
            ]
            if bars:
                ax.broken_barh(
                    bars,
                    (row + world_band[0], world_band[1]),
                    facecolors=COLOURS[world],
                    linewidth=0,
                )
        for c, a, b, name in tasks or []:
            if c != core:
                continue
            ax.broken_barh(
                [(a, b - a)], (row + 0.1, 0.3), facecolors=_task_colour(name), linewidth=0
            )
            if b - a > win.length_us * 0.05:
                ax.text(
                    (a + b) / 2,
                    row + 0.25,
                    name,
                    ha="center",
                    va="center",
                    fontsize=6,
                    clip_on=True,
                )
    ax.set_yticks(range(len(win.cores)), [f"core {c}" for c in win.cores])
    ax.invert_yaxis()
    ax.set_xlim(0, win.length_us)
    ax.set_xlabel("time in the window (\u00b5s)")
    ax.set_title(title)
    handles = [Patch(color=COLOURS[w], label=w) for w in WORLDS]
    if tasks is not None:
        handles.append(Patch(color="#bcbd22", label="Linux task (band below)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


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


def run(
    options: BootOptions,
    window_ms: float,
    load: str,
    out_root: Path = RESULTS,
    sched: bool = False,
) -> Path:
    """Boots, runs `load` in Linux, dumps the trace rings while it runs, and
    writes trace.csv, summary.json, timeline.png, the Perfetto trace
    (trace.perfetto-trace) and the raw dump (rings.txt) to
    out_root/trace/<run-id>; with `sched`, Linux's sched_switch events
    too (tasks.csv, Linux's tasks in the PNG and the Perfetto trace)."""
    if load not in LOADS:
        raise TandemError(f"load must be one of {', '.join(LOADS)}, got '{load}'")
    if window_ms <= 0:
        raise TandemError(f"--window-ms must be positive, got {window_ms}")
    start, stop = LOAD_COMMANDS[load]
    if sched:
        script = SCHED_SCRIPT.format(
            tracefs=TRACEFS,
            buffer_kb=SCHED_BUFFER_KB,
            start=start,
            stop=stop,
            settle_us=round(SETTLE_MS * 1000),
            window_us=round(window_ms * 1000),
            margin_us=SCHED_MARGIN_US,
            sched=SCHED_MARK,
            text=TEXT_MARK,
            raw=RAW_MARK,
            end=END_MARK,
        )
    else:
        sleep_us = round((SETTLE_MS + window_ms) * 1000)
        script = SCRIPT.format(start=start, sleep_us=sleep_us, stop=stop)
    print(
        f"trace: booting ({options.config.name}, {options.timing.words()}, {options.smp} cores, "
        f"load {load}{', Linux sched_switch' if sched else ''})",
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
    last = lines.index(SCHED_MARK) if sched and SCHED_MARK in lines else len(lines)
    trace = parse(lines[first:last])
    win = window(trace, window_ms)
    spans = intervals(trace, win)
    per_core = shares(spans, win)
    linux = linux_sched(lines, trace, win) if sched else None
    slices = perfetto_slices(trace, win, linux.tasks if linux else None)
    summary: dict[str, object] = {
        "command": "trace",
        "timing": options.timing.mode,
        "quantum_ns": options.timing.quantum,
        "config": options.config.name,
        "smp": options.smp,
        "load": load,
        "linux_idle": options.linux_idle,
        "window_ms": window_ms,
        "window_ticks": [win.start, win.end],
        "counter_hz": trace.counter_hz,
        "cores_traced": list(win.cores),
        "switches_written": {str(c): n for c, n in trace.written.items()},
        # How long tandem-trace took to read the rings after the dump's time.
        "read_us": None
        if trace.read is None
        else round((trace.read - trace.now) * 1e6 / trace.counter_hz, 1),
        "share": per_core,
    }
    if linux is not None:
        summary["linux_sched"] = {
            "sched_switches": linux.switches,
            "lost_events": linux.lost,
            "clock_origin_ns": round(linux.clock.origin_ns, 1),
            "clock_uncertainty_ns": round(linux.clock.uncertainty_ns, 1),
            "clock_samples": linux.clock.samples,
            "marker": None
            if linux.marker is None
            else {"counter": linux.marker[0], "tracer_stamp_ticks": round(linux.marker[1], 1)},
            "task_slices": len(linux.tasks),
        }
    title = (
        f"config {options.config.name}, {options.timing.words()}: world per core, "
        f"last {window_ms:g} ms (Linux load: {load})"
    )
    run_dir = PartialRun(out_root / "trace")
    try:
        out = run_dir.dir
        (out / "rings.txt").write_text("\n".join(lines[first:last]) + "\n")
        with (out / "trace.csv").open("w") as f:
            f.write("core,start_us,end_us,world\n")
            for s in spans:
                f.write(f"{s.core},{s.start_us:.3f},{s.end_us:.3f},{s.world}\n")
        task_rows: list[tuple[int, float, float, str]] | None = None
        if linux is not None:
            (out / "sched.txt").write_text("\n".join(lines[last:]) + "\n")
            task_rows = [
                (t.core, us_since(win, t.start), us_since(win, t.end), t.name) for t in linux.tasks
            ]
            with (out / "tasks.csv").open("w") as f:
                f.write("core,start_us,end_us,comm,pid\n")
                for t in linux.tasks:
                    a, b = us_since(win, t.start), us_since(win, t.end)
                    f.write(f"{t.core},{a:.3f},{b:.3f},{t.comm},{t.pid}\n")
        (out / TRACE_FILE).write_bytes(perfetto.build(slices, win.cores))
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        plot(spans, win, title, out / "timeline.png", task_rows)
    except BaseException:
        run_dir.discard()
        raise
    final = run_dir.finish()
    for core, share in per_core.items():
        parts = ", ".join(f"{w} {share[w] * 100:5.1f}%" for w in WORLDS)
        print(f"core {core}: {parts}")
    if linux is not None:
        print(
            f"Linux: {linux.switches} sched_switch events, {len(linux.tasks)} task slices; "
            f"its clock on the counter's to within {linux.clock.uncertainty_ns:.0f} ns"
        )
    print(f"Perfetto: {final / TRACE_FILE} (ui.perfetto.dev: Open trace file)")
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
    parser.add_argument(
        "--linux-sched",
        action="store_true",
        help="also Linux's own sched_switch events (its tracer), on the counter's clock: "
        "Linux's tasks on each core's track, in the PNG and the Perfetto trace",
    )


def main(args: argparse.Namespace, options: BootOptions) -> int:
    """Runs `tandem trace` for parsed arguments; returns the exit status."""
    run(options, args.window_ms, args.load, sched=args.linux_sched)
    return 0
