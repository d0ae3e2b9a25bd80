"""What every experiment shares: a boot (the unit a run is measured in),
reading its output, and writing summaries and reports whole."""

from __future__ import annotations

import csv
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.errors import TandemError
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import Latency
from tandem.platform.boot_options import DEFAULT_CONFIG, BootOptions
from tandem.platform.configs import load_config
from tandem.platform.timing import PERCORE, Timing
from tandem.pool import HostTime
from tandem.results import PARTIAL, write_atomic


def boot_options(
    s: Scenario,
    timing: str,
    config: str = DEFAULT_CONFIG,
    **options: Any,  # noqa: ANN401
) -> BootOptions:
    """BootOptions for one of the scenario's boots: on its board, with
    configuration `config`, `timing` (one of its timing modes) with its
    quantum, and in per-core timing its counter's rule and memory model."""
    percore = timing == PERCORE
    return BootOptions(
        config=load_config(config),
        board=s.board,
        timing=Timing.parse(
            timing,
            s.integer("quantum_ns"),
            s.text("memmodel") if percore else None,
            s.text("causal"),
        ),
        **options,
    )


def summary_head(s: Scenario, options: BootOptions, benchmark: bool = False) -> dict[str, object]:
    """What a summary of boots in one timing mode begins with: the
    experiment (and with `benchmark`, the bench of the same name it was
    before issue 48, for readers of those runs), the scenario, the board
    and the timing, named and in words."""
    head: dict[str, object] = {"experiment": s.name}
    if benchmark:
        head["benchmark"] = s.name
    return head | {
        "quick": s.quick,
        "scenario": s.values,
        "board": options.board.name,
        # Linux's seeds, in the order each cell's boots ran them.
        "seeds": seeds(s),
        "timing": options.timing.mode,
        "timing_described": options.timing.words(),
        "quantum_ns": options.timing.quantum,
    }


def rep_phase_us(rep: int) -> int:
    """The start phase of repetition `rep` (1, 2, ...): per-core and virtual
    timing repeat a boot exactly, so repetitions start their commands at
    different, fixed offsets against the RTOS's 1 ms releases and Linux's
    ticks (0, 1.37, 2.74 ... ms, modulo 10 ms): paired cells (the same rep
    in two modes) share a phase, and a rerun gives the same runs."""
    return ((rep - 1) * 1370) % 10_000


@dataclass(frozen=True)
class Run:
    """One of a cell's boots: Linux's seed (BootOptions.linux_seed) and the
    repetition (1, 2, ...: its start phase, rep_phase_us). Two cells' boots
    of the same run are a pair (tandem/stats.py)."""

    seed: int
    rep: int


def seeds(s: Scenario) -> list[int]:
    """The scenario's Linux seeds (the key `seeds` every scenario has), in
    its order."""
    return s.integers("seeds")


def runs(s: Scenario, reps: int) -> list[Run]:
    """A cell's boots: `reps` repetitions of each of the scenario's seeds,
    seed by seed in the scenario's order."""
    return [Run(seed, rep) for seed in seeds(s) for rep in range(1, reps + 1)]


def seeded(s: Scenario) -> bool:
    """Whether the scenario asks for Linux seeds other than 0 alone: then
    the boots' labels (their names under raw/) name their seed."""
    return seeds(s) != [0]


def run_tag(s: Scenario, run: Run, word: str = "rep") -> str:
    """The run in a boot's label: `rep2` (`word` and the repetition), as
    before issue 49, when the scenario has Linux's seed 0 alone; else
    `seed5-rep2`, so that raw/ tells the seeds' boots apart."""
    tag = f"{word}{run.rep}"
    return f"seed{run.seed}-{tag}" if seeded(s) else tag


def seed_suffix(s: Scenario, seed: int) -> str:
    """A label's end for a boot made once per seed (no repetitions):
    nothing with Linux's seed 0 alone, else `-seedN`."""
    return f"-seed{seed}" if seeded(s) else ""


def run_words(s: Scenario, run: Run, reps: int) -> str:
    """A run for a boot's progress line: `rep 2/3`, with its seed where
    the scenario has several."""
    words = f"rep {run.rep}/{reps}"
    return f"seed {run.seed}, {words}" if seeded(s) else words


def run_seeds(values_per_run: Sequence[int], boots: Sequence[Run]) -> list[int]:
    """`run_seeds` beside a per-boot list that holds `values_per_run[i]`
    values of boot `boots[i]` (one each for a list with a value per boot):
    each value's boot's seed, in the list's order (tandem/stats.by_seed)."""
    if len(values_per_run) != len(boots):
        raise TandemError(f"{len(values_per_run)} counts of values for {len(boots)} boots")
    return [b.seed for n, b in zip(values_per_run, boots, strict=True) for _ in range(n)]


def seeds_words(summary: Mapping[str, object]) -> str:
    """For a report, after its repetitions: the Linux seeds each was
    booted with, where the run had other seeds than 0 alone (nothing for
    runs from before the key `seeds`)."""
    chosen = summary.get("seeds")
    if not isinstance(chosen, list) or chosen == [0]:
        return ""
    return f" for each of Linux's seeds {', '.join(str(x) for x in chosen)}"


def one_seed(s: Scenario, why: str) -> int:
    """The Linux seed of an experiment that boots its cells once, not once
    per seed (`why`, in words): its scenario may name one seed only."""
    chosen = seeds(s)
    if len(chosen) != 1:
        raise TandemError(
            f"{s.name}: seeds = {chosen} is not allowed; {why}, so it takes one Linux seed "
            "(run it once per seed instead)"
        )
    return chosen[0]


class Progress:
    """Notes on stderr while a run's summary is made (what each boot
    measured), with the time since the summary began; the boots' own
    progress lines are the pool's (tandem/pool.py)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = time.monotonic()

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.start)
        return f"{s // 60}:{s % 60:02d}"

    def note(self, what: str) -> None:
        print(f"[{self.elapsed()}]     {what}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Boot:
    """One boot of an experiment, the unit a run is measured in (a cell and
    repetition; exp/units.py): its options, script, and a label that names
    its files under raw/ and orders the units for `--shard`."""

    label: str
    options: BootOptions
    script: str
    # Host seconds before giving up on the boot.
    timeout_s: float = 3600
    # What the boot is, for its progress line.
    about: str = ""
    # An instrument's QEMU options, added to options.extra_qemu_args when the
    # boot starts: they read the build (ELF symbols), which listing a run's
    # boots must not need (a shard's plan, a merge, host tests).
    instrument: Callable[[], tuple[str, ...]] | None = None
    # Files an instrument writes into the boot's log directory ("{run_dir}/NAME"
    # in its options), moved to raw/LABEL.NAME after the boot.
    keep: tuple[str, ...] = ()
    # Keep the secure console's log as raw/LABEL.secure.log.
    keep_secure_log: bool = False
    # A file in the boot's log directory too large to keep (QEMU's execution
    # log), reduced after the boot, on the host that booted, to what the
    # summary needs (JSON, in the unit's record: Measured.reduced).
    reduce: Callable[[Path], object] | None = None
    # How much of the boot's figures are the host's wall time (pool.HostTime):
    # ALL (`boot`, `restart`): the run boots one at a time whatever its
    # timing; SOME (`fidelity`'s cost): one at a time unless --jobs says.
    host_time: HostTime = HostTime.NONE
    # A mark (instruments/hostmarks.py): at each line `MARK NAME` the
    # commands print, the host's wall clock and QEMU's user CPU time are
    # read, and kept in the unit's record with the boot's host seconds to
    # the first command (Measured.host_marks): a cost measured on the host.
    host_marks: str | None = None
    # Console lines to time on the host (instruments/hostmarks.HostLines):
    # the host's wall clock at every line of the commands' output (the
    # kernel's lines of a restart included) matching it, kept with the line
    # in the unit's record (Measured.host_lines): `restart`'s phases.
    host_lines: re.Pattern[str] | None = None
    # The commands panic Linux on purpose (the monitor restarts it and they
    # run again): a panic does not end the boot, nor the reading of its log.
    panics: bool = False


def phase_latencies(
    results: Mapping[str, Latency], label: str, phase_ids: Sequence[str], progress: Progress
) -> list[Latency]:
    """The measurements of `phase_ids` from one boot, in that order, each
    noted on the progress line; a phase the boot did not report is an error."""
    out = []
    for pid in phase_ids:
        if pid not in results:
            raise TandemError(f"{label}: no result for phase {pid}")
        lat = results[pid]
        progress.note(
            f"{pid}: {lat.samples} samples, min {fmt_us(lat.min_us)} avg "
            f"{fmt_us(lat.avg_us)} max {fmt_us(lat.max_us)} µs"
        )
        out.append(lat)
    return out


def latency_columns(
    cell: Latency, reps: Sequence[Latency], seeds: Sequence[int] | None = None
) -> dict[str, object]:
    """A summary row's measurement columns: the repetitions merged into
    `cell`, and each repetition's (each boot's) worst case and average, with
    each boot's Linux seed (`seeds`, as many; all 0 when not given)."""
    if seeds is None:
        seeds = [0] * len(reps)
    if len(seeds) != len(reps):
        raise TandemError(f"{len(seeds)} seeds for {len(reps)} boots")
    return {
        "samples": cell.samples,
        "min_us": round(cell.min_us, 3),
        "avg_us": round(cell.avg_us, 3),
        "p99_us": round(cell.percentile(99), 3),
        "max_us": round(cell.max_us, 3),
        "beyond_histogram": cell.overflow,
        "rep_max_us": [round(x.max_us, 3) for x in reps],
        "rep_avg_us": [round(x.avg_us, 3) for x in reps],
        "run_seeds": list(seeds),
    }


def write_histograms(
    path: Path, header: Sequence[str], rows: list[tuple[list[object], Latency]]
) -> None:
    """The raw distributions: one line per (cell, bucket) with its count."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*header, "instrument", "resolution_us", "latency_us", "count"])
        for cell, lat in rows:
            for us in sorted(lat.histogram):
                w.writerow([*cell, lat.instrument, lat.resolution_us, us, lat.histogram[us]])
    tmp.replace(path)


def write_summary(out: Path, summary: dict[str, object], columns: Sequence[str]) -> None:
    """summary.json, and summary.csv with `columns` of its rows."""
    rows = summary.get("rows", [])
    assert isinstance(rows, list)
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    tmp = out / "summary.csv.tmp"
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow(row)
    tmp.replace(out / "summary.csv")


# Benches whose runs from before they were experiments (issue 48; their
# summaries name a "benchmark", not an "experiment") the experiment's report
# redraws: fidelity's and restart's kept runs. The others' old runs have no
# report.md.
REDRAWN_FROM_BENCH = frozenset({"fidelity", "restart"})


def read_summary(run_dir: Path, experiment: str) -> dict[str, object]:
    """A run's summary.json, checked to be of `experiment`."""
    path = run_dir / "summary.json"
    if not path.is_file():
        raise TandemError(f"{run_dir}: no summary.json (an interrupted or failed run?)")
    data = json.loads(path.read_text())
    if isinstance(data, dict) and "experiment" not in data and data.get("benchmark"):
        # A bench's run from before it was an experiment (issue 48).
        if data["benchmark"] == experiment and experiment in REDRAWN_FROM_BENCH:
            return data
        raise TandemError(
            f"{path}: a run of `tandem bench {data['benchmark']}` from before it was an "
            f"experiment; its summary has no report of experiment '{experiment}' to redraw"
        )
    if isinstance(data, dict) and "experiment" not in data and data.get("command") == "trace":
        # `tandem trace`'s runs from before it was an experiment (issue 48).
        raise TandemError(
            f"{path}: a run of `tandem trace` from before it was an experiment; it has no "
            f"report of experiment '{experiment}' to redraw (its timeline.png is as it was drawn)"
        )
    if not isinstance(data, dict) or data.get("experiment") != experiment:
        raise TandemError(f"{path}: not a summary of experiment '{experiment}'")
    return data


def run_id(run_dir: Path) -> str:
    """A run's id for its report: its directory's name, without `.partial`
    while the run is being finished (the report is written before the
    rename, and must read the same when redrawn from the finished run)."""
    return run_dir.name.removesuffix(PARTIAL)


def num(row: Mapping[str, object], key: str, default: float | None = None) -> float:
    """A number from a summary row (rows come from JSON: typed as object);
    `default` where the row has none (absent or null), else an error."""
    value = row.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TandemError(f"summary row {row!r}: '{key}' is not a number")
    return float(value)


def numbers(row: Mapping[str, object], key: str) -> list[float]:
    """A list of numbers from a summary row; none where the row has no list."""
    values = row.get(key)
    if not isinstance(values, list):
        return []
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TandemError(f"summary row {row!r}: '{key}' holds {value!r}, not a number")
        out.append(float(value))
    return out


def fmt_us(value: object) -> str:
    """A latency for a Markdown table."""
    if not isinstance(value, int | float):
        return "-"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def paired_gains(a: Mapping[str, object], b: Mapping[str, object]) -> list[float]:
    """Per repetition, row `a`'s time minus row `b`'s (`runs_s` lists each
    row's runs in repetition order, and the two ran back to back)."""
    runs_a, runs_b = a.get("runs_s"), b.get("runs_s")
    if not isinstance(runs_a, list) or not isinstance(runs_b, list):
        raise TandemError(f"summary rows {a!r} / {b!r} without runs_s")
    return [round(float(x) - float(y), 3) for x, y in zip(runs_a, runs_b, strict=False)]


def paired_words(gains: list[float]) -> str:
    """How often B beat A in paired repetitions (gains: A's time minus B's,
    one per repetition, the two run back to back), for a report."""
    wins = sum(g > 0 for g in gains)
    return (
        f"faster in {wins} of {len(gains)} paired repetitions "
        f"(gains {', '.join(f'{g:+.2f}' for g in gains)} s; median {statistics.median(gains):+.2f})"
    )


def summary_list(
    summary: Mapping[str, object], key: str = "rows", required: bool = True
) -> list[dict[str, object]]:
    """A list of rows from a summary (summaries come from JSON: typed as
    object). Without the list: an error, or none if not `required` (a part
    an older or quick run did not measure)."""
    value = summary.get(key)
    if not isinstance(value, list):
        if not required:
            return []
        raise TandemError(f"summary of '{summary.get('experiment')}' without a '{key}' list")
    return [row for row in value if isinstance(row, dict)]


def finished_runs(experiment: str, root: Path) -> list[tuple[str, dict[str, object]]]:
    """(run id, summary) of every finished run of `experiment` under `root`,
    newest first: no `latest` link, no unfinished `.partial` run, no folder
    without a summary (a probe's)."""
    base = root / experiment
    if not base.is_dir():
        return []
    return [
        (d.name, read_summary(d, experiment))
        for d in sorted(base.iterdir(), reverse=True)
        if d.is_dir()
        and not d.is_symlink()
        and not d.name.endswith(PARTIAL)
        and (d / "summary.json").is_file()
    ]


def median_change_ci(
    base: Sequence[float], new: Sequence[float], level: float = 0.95, resamples: int = 4000
) -> tuple[float, float]:
    """A bootstrap interval of the change of the median from `base` to `new`,
    in percent of base's median: both samples are resampled with replacement
    `resamples` times. Seeded, so a report regenerates the same interval."""
    if not base or not new:
        raise TandemError("median_change_ci needs two non-empty samples")
    if not 0 < level < 1:
        raise TandemError(f"confidence level {level} not between 0 and 1")
    rng = random.Random(0)
    changes = sorted(
        (
            statistics.median(rng.choices(new, k=len(new)))
            / statistics.median(rng.choices(base, k=len(base)))
            - 1
        )
        * 100
        for _ in range(resamples)
    )
    tail = (1 - level) / 2
    return (
        round(changes[int(tail * (resamples - 1))], 2),
        round(changes[int((1 - tail) * (resamples - 1))], 2),
    )
