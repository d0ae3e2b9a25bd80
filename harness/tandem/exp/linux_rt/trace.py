"""`tandem exp kernel-trace`: which kernel path is long under `linux-rt`'s
kernel load, on the latency-tracing kernel (`make trace-kernel`), in
results/linux-rt-trace/<run-id>/.

Per core count, one boot (per-core timing, Q = 1 µs, Linux alone) runs the
experiment's kernel load (and optionally its disk I/O load) with cyclictest,
as a cell of `linux-rt` does, under Linux's `preemptirqsoff` tracer without
function tracing: the tracer keeps the longest section with interrupts or
preemption off, its start and end, the task and the stack where it ended.
Every 200 ms the script prints that section and MemFree, then restarts the
tracer's maximum: a timeline of the longest section per window. The tracer
adds code to every change of the interrupt mask and of the preemption
count, so its sections and cyclictest's latencies here are longer than on
Tandem's kernel; what it shows is which path is long, and when."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tandem import pool, provenance
from tandem.errors import TandemError
from tandem.exp.linux_rt.spec import PERIOD_US
from tandem.instruments.measure import from_cyclictest_json, script_header
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import load_config
from tandem.platform.paths import BUILD, RESULTS
from tandem.platform.timing import PERCORE, Timing
from tandem.results import PartialRun, write_atomic

TRACE_KERNEL = BUILD / "linux-trace" / "arch" / "arm64" / "boot" / "Image"
NAME = "linux-rt-trace"
WINDOW_US = 200_000
# Stack frames kept per section (the innermost first).
FRAMES = 12

BODY = r"""
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null
[ -w $T/current_tracer ] || fail "no tracefs: not the latency-tracing kernel?"
echo 0 > $T/options/function-trace || fail "function-trace option"
echo preemptirqsoff > $T/current_tracer || fail "preemptirqsoff tracer"
echo 1 > $T/tracing_on
load_start kernel {cores} any
{io}
sleep "$SETTLE_S"
echo 0 > $T/tracing_max_latency
cyclictest -m -p 99 -i $PERIOD_US -l {samples} -t 1 -q -h 10000 --histfile=/tmp/ct.hist \
	--json=/tmp/ct.json > /dev/null 2>&1 &
CT=$!
tid=""
while kill -0 $CT 2>/dev/null; do
	usleep {window_us}
	read up _ < /proc/uptime
	while read k v _; do case $k in MemFree:) f=$v ;; esac; done < /proc/meminfo
	# the CPU cyclictest's measuring thread last ran on (stat field 39)
	if [ -z "$tid" ]; then
		for d in /proc/$CT/task/*; do [ "${{d##*/}}" = "$CT" ] || tid=${{d##*/}}; done
	fi
	cpu=-1
	[ -n "$tid" ] && cpu=$(cut -d' ' -f39 /proc/$CT/task/$tid/stat 2>/dev/null || echo -1)
	echo "@@WINDOW $up $f $(cat $T/tracing_max_latency) $cpu@@"
	grep -E '^# latency:|task:|started at:|ended at:|^ => ' $T/trace | head -n {lines}
	echo 0 > $T/tracing_max_latency
done
wait $CT || fail cyclictest
echo 0 > $T/tracing_on
load_stop
echo "@@CYCLICTEST-JSON@@"
tr -d '\n' < /tmp/ct.json
echo
"""

WINDOW = re.compile(r"^@@WINDOW (\S+) (\d+) (\d+) (-?\d+)@@$")
LATENCY = re.compile(r"^# latency: (\d+) us, #\d+/\d+, CPU#(\d+)")
TASK = re.compile(r"\| task: (\S+)-(\d+) ")
SITE = re.compile(r"=> (started|ended) at:\s+(\S+)")
FRAME = re.compile(r"^ => (\S+)")
# cyclictest's results: runs before its JSON was read printed the histogram
# file's summary lines (average truncated to whole µs).
CT = re.compile(r"^# (Min|Avg|Max) Latencies: (\d+)")
CT_JSON = "@@CYCLICTEST-JSON@@"


@dataclass
class Section:
    """The longest section of one window."""

    uptime_s: float
    memfree_kib: int
    latency_us: int
    # The CPU cyclictest's thread last ran on, when the window ended.
    cyclictest_cpu: int
    cpu: int = -1
    task: str = ""
    started: str = ""
    ended: str = ""
    stack: tuple[str, ...] = ()


def _cyclictest_json(line: str, where: str) -> dict[str, float]:
    """min, avg and max (µs) from cyclictest's JSON on one line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise TandemError(f"{where}: cyclictest's JSON: {e}") from None
    latency = from_cyclictest_json(obj, where)
    return {"min": latency.min_us, "avg": round(latency.avg_us, 2), "max": latency.max_us}


def parse(lines: list[str], where: str) -> tuple[list[Section], dict[str, float]]:
    """The windows' sections and cyclictest's min/avg/max (µs)."""
    sections: list[Section] = []
    ct: dict[str, float] = {}
    json_next = False
    for line in lines:
        line = line.rstrip()
        if json_next:
            ct = _cyclictest_json(line, where)
            json_next = False
        elif line.strip() == CT_JSON:
            json_next = True
        elif m := WINDOW.match(line.strip()):
            sections.append(
                Section(float(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)))
            )
        elif m := CT.match(line):
            ct[m.group(1).lower()] = int(m.group(2))
        elif sections:
            s = sections[-1]
            if m := LATENCY.match(line):
                s.cpu = int(m.group(2))
            elif m := TASK.search(line):
                s.task = m.group(1)
            elif m := SITE.search(line):
                if m.group(1) == "started":
                    s.started = m.group(2)
                else:
                    s.ended = m.group(2)
            elif m := FRAME.match(line):
                s.stack += (m.group(1),)
    if not sections or set(ct) != {"min", "avg", "max"}:
        raise TandemError(f"{where}: no tracer windows or no cyclictest result")
    return sections, ct


def script(cores: int, samples: int, io: bool, settle_ms: int) -> str:
    body = BODY.format(
        cores=cores,
        samples=samples,
        window_us=WINDOW_US,
        lines=4 + FRAMES,
        io=f"disk_setup\nload_start io {cores} any" if io else "",
    )
    return script_header(PERIOD_US, "4M", 0, "16M", settle_ms) + body


@dataclass
class Boot:
    """One core count's trace."""

    cores: int
    cyclictest_us: dict[str, float]
    windows: list[Section]


def run(
    cores: list[int],
    samples: int,
    io: bool,
    settle_ms: int = 300,
    out_root: Path = RESULTS,
    jobs: int | None = None,
) -> Path:
    """Traces each core count, `jobs` boots at a time (None: one per host
    core); returns the finished run directory."""
    if not TRACE_KERNEL.is_file():
        raise TandemError(f"no {TRACE_KERNEL}: run `make trace-kernel` first")
    partial = PartialRun(out_root / NAME)
    raw = partial.dir / "raw"
    raw.mkdir()
    started = time.monotonic()
    timing = Timing(PERCORE)
    quantum_ns = timing.quantum_ns
    jobs = pool.choose_jobs(jobs, [timing] * len(cores), "kernel-trace's")

    # Taken before the first boot, as `tandem exp run` does (the trace runs
    # for hours; a commit meanwhile is not what it measured).
    def options(n: int) -> BootOptions:
        return BootOptions(
            config=load_config("linux-only"),
            timing=timing,
            smp=n,
            kernel=TRACE_KERNEL,
            disk_mib=512 if io else 0,
        )

    stamp = provenance.collect([options(n) for n in cores], jobs)

    def trace(n: int, ctx: pool.Context) -> Boot:
        text = script(n, samples, io, settle_ms)
        result = run_exec(options(n), text, timeout_s=4 * 3600, cancel=ctx.cancel)
        label = f"cores{n}"
        (raw / f"{label}.sh").write_text(text)
        (raw / f"{label}.console.log").write_text(result.console_log.read_text())
        if result.status != 0:
            raise TandemError(f"{label}: the script exited with {result.status}")
        sections, ct = parse(result.lines, label)
        return Boot(n, ct, sections)

    boots = pool.run(NAME, [_task(n, trace) for n in cores], jobs)
    head = {
        "experiment": NAME,
        "timing": "percore",
        "quantum_ns": quantum_ns,
        "samples": samples,
        "io_load": io,
        "window_us": WINDOW_US,
    }
    summary = head | {
        "boots": [
            {
                "cores": b.cores,
                "cyclictest_us": b.cyclictest_us,
                "windows": [dataclasses.asdict(w) for w in b.windows],
            }
            for b in boots
        ],
        "provenance": stamp,
        "host_seconds": round(time.monotonic() - started, 1),
    }
    write_atomic(partial.dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    text = report(boots, partial.final.name, quantum_ns, samples, io)
    write_atomic(partial.dir / "report.md", text)
    return partial.finish()


def _task(n: int, trace: Callable[[int, pool.Context], Boot]) -> pool.Task[Boot]:
    return pool.Task(f"cores{n}", f"{n} core(s)", lambda ctx: trace(n, ctx))


def report(boots: list[Boot], run_id: str, quantum_ns: int, samples: int, io: bool) -> str:
    out = [
        "# linux-rt-trace: the longest interrupt- or preemption-off sections under linux-rt's load",
        "",
        f"Run `{run_id}`, **percore timing, Q = {quantum_ns} ns**, on the "
        "latency-tracing kernel (`make trace-kernel`: Tandem's kernel plus ftrace's "
        "preemptirqsoff tracer, function tracing off), Linux alone, the kernel load of "
        f"`linux-rt`{' and its disk I/O load' if io else ''} on every core "
        f"and cyclictest ({samples} loops of 1 ms, unpinned). Every "
        f"{WINDOW_US // 1000} ms the longest section since the last window "
        "(interrupts or preemption off, on any CPU), where it started and ended, and the "
        "stack where it ended. The tracer lengthens every such section and cyclictest's "
        "latency; the paths are what counts. Reproduce: `make trace-kernel && ./tandem exp "
        f"kernel-trace --cores {','.join(str(b.cores) for b in boots)}"
        f"{' --io' if io else ''}`.",
        "",
    ]
    for b in boots:
        ct = b.cyclictest_us
        paths: dict[str, list[tuple[int, bool]]] = {}
        for w in b.windows:
            key = " < ".join(w.stack[:5]) or f"{w.started} .. {w.ended}"
            paths.setdefault(key, []).append((w.latency_us, w.cpu == w.cyclictest_cpu))
        out += [
            f"## {b.cores} core(s)",
            "",
            f"cyclictest under the tracer: min {ct['min']}, avg {ct['avg']}, "
            f"max {ct['max']} µs. {len(b.windows)} windows.",
            "",
            "| path where the section ended (innermost first) | windows | on cyclictest's CPU "
            "| longest µs | longest on cyclictest's CPU µs |",
            "|---|---|---|---|---|",
        ]
        for key, lats in sorted(paths.items(), key=lambda kv: -max(kv[1])[0]):
            mine = [us for us, here in lats if here]
            out.append(
                f"| `{key}` | {len(lats)} | {len(mine)} | {max(us for us, _ in lats)} | "
                f"{max(mine) if mine else '-'} |"
            )
        for what, among in (
            ("Longest", b.windows),
            ("Longest on cyclictest's CPU", [w for w in b.windows if w.cpu == w.cyclictest_cpu]),
        ):
            if not among:
                continue
            w = max(among, key=lambda s: s.latency_us)
            out += [
                "",
                f"{what}: {w.latency_us} µs on CPU {w.cpu} (cyclictest on CPU "
                f"{w.cyclictest_cpu}) in {w.task}, from `{w.started}` to `{w.ended}`, at "
                f"{w.uptime_s:.2f} s uptime (MemFree {w.memfree_kib // 1024} MiB); stack:",
                "",
                "```",
                *w.stack,
                "```",
            ]
        out.append("")
    return "\n".join(out) + "\n"
