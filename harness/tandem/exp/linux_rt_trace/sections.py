"""Reading a `linux-rt-trace` boot: the longest section of each window
(its length, CPU, task, where it started and ended, its stack) and
cyclictest's min/avg/max."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from tandem.errors import TandemError
from tandem.instruments.measure import from_cyclictest_json

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
