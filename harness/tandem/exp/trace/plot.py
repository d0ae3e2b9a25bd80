"""The `trace` experiment's plot: one track per core, a colour per world,
and with `linux_sched` Linux's tasks in a band under each core's worlds;
drawn from the run's trace.csv and tasks.csv."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Sequence
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import num
from tandem.exp.trace.rings import Interval
from tandem.exp.trace.spec import TASKS_CSV, TIMELINE, WORLDS, WORLDS_CSV

COLOURS = {"rtos": "#d62728", "linux": "#1f77b4", "idle": "#c7c7c7"}


def _task_colour(name: str) -> str:
    """A stable colour per task (its name's digest into a 20-colour map)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    k = int.from_bytes(hashlib.sha256(name.encode()).digest()[:2], "big") % 20
    return str(to_hex(colormaps["tab20"](k)))


def timeline(
    spans: Sequence[Interval],
    cores: Sequence[int],
    length_us: float,
    title: str,
    path: Path,
    tasks: Sequence[tuple[int, float, float, str]] | None = None,
) -> None:
    """One horizontal track per core, a colour per world; with `tasks`
    (core, start µs, end µs, name), Linux's tasks in a band under each
    core's worlds, named where there is room."""
    # The object API with the Agg canvas: no pyplot state, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fig = Figure(figsize=(12, 1.2 + (0.9 if tasks is not None else 0.6) * len(cores)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    world_band = (-0.4, 0.45) if tasks is not None else (-0.4, 0.8)
    for row, core in enumerate(cores):
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
            if b - a > length_us * 0.05:
                ax.text(
                    (a + b) / 2,
                    row + 0.25,
                    name,
                    ha="center",
                    va="center",
                    fontsize=6,
                    clip_on=True,
                )
    ax.set_yticks(range(len(cores)), [f"core {c}" for c in cores])
    ax.invert_yaxis()
    ax.set_xlim(0, length_us)
    ax.set_xlabel("time in the window (\u00b5s)")
    ax.set_title(title)
    handles = [Patch(color=COLOURS[w], label=w) for w in WORLDS]
    if tasks is not None:
        handles.append(Patch(color="#bcbd22", label="Linux task (band below)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def title(summary: dict[str, object]) -> str:
    """The timeline's title, from the run's summary."""
    return (
        f"config {summary['config']}, {summary['timing_described']}: world per core, "
        f"last {num(summary, 'window_ms'):g} ms (Linux load: {summary['load']})"
    )


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise TandemError(f"{path}: missing (the run's summary names it)")
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """timeline.png, from trace.csv (and tasks.csv with linux_sched)."""
    spans = [
        Interval(int(r["core"]), float(r["start_us"]), float(r["end_us"]), r["world"])
        for r in _rows(run_dir / WORLDS_CSV)
    ]
    tasks = None
    if summary.get("linux_sched") is not None:
        tasks = [
            (int(r["core"]), float(r["start_us"]), float(r["end_us"]), f"{r['comm']} {r['pid']}")
            for r in _rows(run_dir / TASKS_CSV)
        ]
    cores = summary["cores_traced"]
    ticks = summary["window_ticks"]
    if not isinstance(cores, list) or not isinstance(ticks, list) or len(ticks) != 2:
        raise TandemError(f"{run_dir}: summary without cores_traced and window_ticks")
    length_us = (int(ticks[1]) - int(ticks[0])) * 1e6 / num(summary, "counter_hz")
    timeline(spans, [int(c) for c in cores], length_us, title(summary), run_dir / TIMELINE, tasks)
