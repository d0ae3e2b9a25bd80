"""Experiments that need no code of their own: a scenario file with
`runner = "rtos-app"` boots Tandem with the RTOS applications and
parameters it names (`rtos`, as `--rtos` takes them), lets Linux run a
command for a while, and keeps what those applications log on the secure
console; `expect` lists patterns the log must show. A new RTOS workload
gets its experiment from its scenario file alone (docs/rtos.md, "Adding an
application")."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    Boot,
    boot_options,
    read_summary,
    run_tag,
    run_words,
    runs,
    seeds,
    summary_list,
)
from tandem.exp.scenario import Key, Scenario
from tandem.exp.units import Measured
from tandem.platform import apps
from tandem.platform.boot_options import BootOptions
from tandem.platform.timing import Timing
from tandem.results import RAW

RUNNER = "rtos-app"
SCHEMA = {
    "runner": Key(str, "what runs the scenario: its RTOS applications", choices=(RUNNER,)),
    "smp": Key(int, "cores", minimum=1, maximum=8),
    "rtos": Key(
        list,
        "RTOS applications and parameters: APP or APP.PARAM=VALUE (rtos/apps/APP/app.toml)",
        item=str,
    ),
    "linux": Key(str, "shell commands Linux runs while the applications do (then it powers off)"),
    "expect": Key(
        list,
        "patterns (Python regular expressions) the secure console must show",
        item=str,
        non_empty=False,
    ),
}
# A secure-console line: "[  1.000000] rtos/0: text".
LINE = re.compile(r"^\[\s*\d+\.\d+\] rtos/\d+: (.*)$")


def options(s: Scenario) -> BootOptions:
    """The boot a scenario asks for."""
    return boot_options(
        s, timing=s.text("timing"), smp=s.integer("smp"), apps=apps.runs(s.texts("rtos"))
    )


def app_lines(secure_log: str, names: list[str]) -> list[str]:
    """The RTOS's console lines that start with one of the applications'
    names ("NAME: ...", the convention apps log by)."""
    out = []
    for line in secure_log.splitlines():
        m = LINE.match(line)
        if m and any(m.group(1).startswith(f"{n}:") for n in names):
            out.append(m.group(0))
    return out


def units(s: Scenario) -> list[Boot]:
    """The same boot `reps` times per Linux seed, its secure console kept."""
    boot = options(s)
    reps = s.integer("reps")
    return [
        Boot(
            run_tag(s, run),
            dataclasses.replace(boot, linux_seed=run.seed),
            s.text("linux") + "\n",
            timeout_s=1800,
            about=run_words(s, run, reps),
            keep_secure_log=True,
        )
        for run in runs(s, reps)
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """Each repetition's lines of the applications; an error if one never
    showed an expected pattern."""
    names = [r.app for r in options(s).apps]
    rows: list[dict[str, object]] = []
    for run in runs(s, s.integer("reps")):
        label = run_tag(s, run)
        secure = measured.text(label, "secure.log")
        missing = [p for p in s.texts("expect") if not re.search(p, secure, re.M)]
        if missing:
            raise TandemError(
                f"{s.name} {run_words(s, run, s.integer('reps'))}: the secure console "
                f"({out / RAW / label}.secure.log) "
                f"never showed {', '.join(repr(p) for p in missing)}"
            )
        rows.append({"seed": run.seed, "rep": run.rep, "lines": app_lines(secure, names)})
    return {
        "experiment": s.name,
        "runner": RUNNER,
        "timing": s.text("timing"),
        "smp": s.integer("smp"),
        "seeds": seeds(s),
        "rtos": s.texts("rtos"),
        "expect": s.texts("expect"),
        "quick": s.quick,
        "rows": rows,
    }


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Nothing to draw: the applications' lines are the result."""


def _texts(value: object) -> list[str]:
    """A list of strings from a summary (summaries come from JSON)."""
    return [str(x) for x in value] if isinstance(value, list) else []


def report(run_dir: Path, command: str) -> str:
    summary = read_summary(run_dir, run_dir.parent.name)
    timing = str(summary.get("timing"))
    lines = [
        f"# {summary['experiment']}: RTOS applications",
        "",
        f"`{command}` ({timing} timing, {summary.get('smp')} cores). RTOS: "
        + ", ".join(f"`{r}`" for r in _texts(summary.get("rtos"))),
        "",
    ]
    several = _texts(summary.get("seeds")) not in ([], ["0"])
    for row in summary_list(summary):
        seed = f"Linux seed {row.get('seed', 0)}, r" if several else "R"
        lines += [f"## {seed}epetition {row['rep']}", "", "```text"]
        lines += _texts(row.get("lines")) or ["(no lines)"]
        lines += ["```", ""]
    expect = _texts(summary.get("expect"))
    if expect:
        lines.append("Every repetition showed " + ", ".join(f"`{p}`" for p in expect) + ".")
        lines.append("")
    lines.append(Timing.of_summary(summary).caveats())
    return "\n".join(lines) + "\n"
