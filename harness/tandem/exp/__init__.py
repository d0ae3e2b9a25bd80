"""`tandem exp`: experiments from scenario files, each writing
results/NAME/<run-id>/ (raw data, summary.json/.csv, plots, report.md).

Each experiment is a package, exp/NAME/, whose __init__ exports the
interface the registry below reads (NAME, SCHEMA, run, plot, report,
claims); its modules keep the scenario keys, the guest script, the parsing,
the plots, the report's prose and the tests of its paper's claims apart
(docs/harness.md, "Layout")."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tandem import pool, provenance, stats
from tandem.claims import Claim, ClaimTests
from tandem.errors import TandemError
from tandem.exp import (
    boot,
    capacity,
    ctxsw,
    domains,
    fidelity,
    latency,
    lhp,
    linux_rt,
    linux_rt_trace,
    memory,
    pending,
    restart,
    rpc,
    rpmsg,
    rtos_app,
    scenario,
    shards,
    switch,
    trace,
    units,
)
from tandem.exp.common import Boot, num, read_summary
from tandem.exp.shards import Shard
from tandem.exp.units import Measured
from tandem.platform import boot_inputs, boot_options
from tandem.platform.paths import EXPERIMENTS, RESULTS
from tandem.platform.pinned import Pinned
from tandem.results import PARTIAL, RAW, PartialRun, write_atomic

# The strictest of a run's boots rules the run (pool.choose_jobs).
HOST_TIME_ORDER = (pool.HostTime.NONE, pool.HostTime.SOME, pool.HostTime.ALL)


def no_claims(root: Path) -> list[Claim]:
    """An experiment that tests no paper's claim (an RTOS application's)."""
    return []


@dataclass(frozen=True)
class Experiment:
    """An experiment: its scenario schema, its boots (the units a run is
    measured in, exp/units.py), how it summarizes them, how it reports,
    and the tests of its paper's claims (tandem/claims.py)."""

    name: str
    schema: Mapping[str, scenario.Key]
    units: Callable[[scenario.Scenario], list[Boot]]
    summarize: Callable[[scenario.Scenario, Path, Measured], dict[str, object]]
    plot: Callable[[Path, dict[str, object]], None]
    report: Callable[[Path, str], str]
    claims: ClaimTests = no_claims


# In the papers' order (000 §3, 000 §4, 001 ... 004): results/CLAIMS.md
# lists the claims in this order; then the benches, which test no paper's
# claim (`tandem bench NAME` runs them: cli.py).
REGISTRY = {
    m.NAME: Experiment(m.NAME, m.SCHEMA, m.units, m.summarize, m.plot, m.report, m.claims)
    for m in (
        lhp,
        capacity,
        linux_rt,
        rpc,
        domains,
        ctxsw,
        memory,
        rpmsg,
        fidelity,
        boot,
        latency,
        switch,
        restart,
        trace,
        linux_rt_trace,
    )
}


def claim_tests() -> list[ClaimTests]:
    """Every experiment's claim tests, in the registry's order."""
    return [exp.claims for exp in REGISTRY.values()]


def declare_stats(exp: Experiment, summary: dict[str, object]) -> None:
    """A new run of an experiment that tests a paper's claims declares the
    statistics it is judged by (tandem/stats.py, fixed before issue 49's
    runs); runs made before keep the tests they were judged by."""
    if exp.claims is not no_claims:
        summary["stats"] = stats.STATS_VERSION


def finish(exp: Experiment, run_dir: Path, summary: dict[str, object], command: str) -> None:
    """Plots and report of a run whose summary is written."""
    exp.plot(run_dir, summary)
    write_atomic(run_dir / "report.md", exp.report(run_dir, command))


def app_scenarios(directory: Path = EXPERIMENTS) -> list[str]:
    """Scenario files that need no module of their own: `runner =
    "rtos-app"` (tandem/exp/rtos_app.py)."""
    out = []
    for path in sorted(directory.glob("*.toml")):
        try:
            runner = tomllib.loads(path.read_text()).get("runner")
        except tomllib.TOMLDecodeError:
            continue
        if runner == rtos_app.RUNNER and path.stem not in REGISTRY:
            out.append(path.stem)
    return out


def get(name: str, directory: Path = EXPERIMENTS) -> Experiment:
    if name in REGISTRY:
        return REGISTRY[name]
    if name in app_scenarios(directory):
        return Experiment(
            name,
            rtos_app.SCHEMA,
            rtos_app.units,
            rtos_app.summarize,
            rtos_app.plot,
            rtos_app.report,
        )
    known = sorted([*REGISTRY, *app_scenarios(directory)])
    raise TandemError(f"no experiment '{name}'; available: {', '.join(known)}")


def listing(directory: Path = EXPERIMENTS) -> list[tuple[str, str]]:
    """(name, description) of every experiment with a scenario file."""
    out = []
    for name in sorted([*REGISTRY, *app_scenarios(directory)]):
        s = scenario.load(name, get(name, directory).schema, directory=directory)
        out.append(
            (name, f"paper {s.text('paper')}, {s.text('timing')} timing: {s.text('description')}")
        )
    return out


def command_line(name: str, quick: bool, overrides: Mapping[str, object]) -> str:
    """The command that reproduces a run, for its report."""
    parts = ["./tandem", "exp", "run", name]
    if quick:
        parts.append("--quick")
    for key, value in overrides.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parts += ["--set", f"{key}={text}"]
    return shlex.join(parts)


def check_boots(name: str, s: scenario.Scenario, boots: Sequence[Boot]) -> None:
    """Refuses a run some of whose boots cannot be made on the scenario's
    board (too many cores, partitions the board cannot have, ...), before
    the first boot, saying which boot and why: an experiment runs on every
    board its boots can be made for."""
    for b in boots:
        try:
            boot_options.check(b.options)
            boot_inputs.layout(b.options, b.script)
        except TandemError as e:
            raise TandemError(
                f"experiment {name} cannot run on board {s.board.name}: its boot {b.label}: {e}"
            ) from None


def pin_boot(boot: Boot, inputs: Pinned) -> Boot:
    """`boot` held to a run's pinned inputs (BootOptions.pinned)."""
    return dataclasses.replace(boot, options=dataclasses.replace(boot.options, pinned=inputs))


def run(
    name: str,
    quick: bool,
    overrides: Mapping[str, object],
    out_root: Path = RESULTS,
    directory: Path = EXPERIMENTS,
    jobs: int | None = None,
    shard: Shard | None = None,
) -> Path:
    """Runs experiment `name`; returns its finished results directory (a
    shard: its partial directory, for `merge`).

    The run is measured into results/NAME/<id>.partial and only renamed to
    results/NAME/<id> (and linked as `latest`) when summary, plots and report
    are all written: an interrupted run leaves raw data, never a summary.
    `jobs` boots run side by side (None: one per host core, or one in host
    timing or when boots measure the host's wall time: pool.choose_jobs);
    the summary is the same whatever `jobs`.
    With `shard`, only that shard's boots run, and the directory stays
    partial with the shard's plan (shards.Plan) until `merge`."""
    exp = get(name, directory)
    s = scenario.load(name, exp.schema, quick=quick, overrides=overrides, directory=directory)
    boots = exp.units(s)
    check_boots(name, s, boots)
    mine = boots if shard is None else shard.select(boots)
    # Every boot's timing, not only this shard's: whether the run may have
    # boots side by side does not depend on how it is split.
    jobs = pool.choose_jobs(
        jobs,
        [b.options.timing for b in boots],
        f"{name}'s",
        host_time=max((b.host_time for b in boots), key=HOST_TIME_ORDER.index),
    )
    jobs = min(jobs, max(1, len(mine)))
    partial = PartialRun(out_root / name, tag="" if shard is None else shard.tag)
    what = name if shard is None else f"{name} shard {shard.index}/{shard.count}"
    print(f"exp {what}: measuring into {partial.dir}", file=sys.stderr)
    command = command_line(name, quick, s.overrides)
    # Stamped before measuring: a run lasts up to two hours, and a commit or
    # an edit made meanwhile must not be recorded as what it measured. Its
    # boots are held to the images it records: a rebuild meanwhile stops
    # the run rather than measure other images under these digests.
    inputs = provenance.inputs_of([b.options for b in boots])
    stamp = provenance.collect([b.options for b in boots], jobs, inputs)
    mine = [pin_boot(b, inputs) for b in mine]
    plan = None
    if shard is not None:
        plan = shards.Plan(
            name,
            quick,
            dict(s.overrides),
            dict(s.values),
            command,
            stamp,
            [b.label for b in boots],
            shard,
            jobs,
        )
        plan.write(partial.dir)
    try:
        started = time.monotonic()
        units.measure_all(what, mine, partial.dir, jobs)
        if plan is not None:
            dataclasses.replace(plan, host_seconds=round(time.monotonic() - started, 1)).write(
                partial.dir
            )
            print(
                f"exp {what}: done; when every shard is, merge them: "
                f"./tandem exp merge {name} DIR...",
                file=sys.stderr,
            )
            return partial.dir
        summary = exp.summarize(s, partial.dir, Measured(partial.dir))
        declare_stats(exp, summary)
        summary["command"] = command
        summary["provenance"] = stamp
        summary["host_seconds"] = round(time.monotonic() - started, 1)
        write_atomic(partial.dir / "summary.json", json.dumps(summary, indent=2) + "\n")
        finish(exp, partial.dir, summary, command)
    except BaseException:
        for leftover in ("summary.json", "summary.csv"):
            (partial.dir / leftover).unlink(missing_ok=True)
        print(f"exp {what}: stopped; what was measured is in {partial.dir}", file=sys.stderr)
        raise
    return partial.finish()


def merge(
    name: str, dirs: Sequence[Path], out_root: Path = RESULTS, directory: Path = EXPERIMENTS
) -> Path:
    """Makes one run of `name` from its shards' directories (`run` with
    `shard`) and archives of kept shards (`keep`): refused unless they are
    shards of one run (the same experiment, scenario and provenance but
    for the host) and hold every unit exactly once. The summary, plots and
    report are made as a run's on one machine, from the shards' raw data;
    returns the run."""
    with tempfile.TemporaryDirectory() as tmp:
        found: list[Path] = []
        for k, d in enumerate(dirs):
            found += pending.unpack(d, Path(tmp) / str(k)) if d.is_file() else [d]
        return _merge(name, found, out_root, directory)


def _merge(name: str, dirs: Sequence[Path], out_root: Path, directory: Path) -> Path:
    exp = get(name, directory)
    plans = shards.read(name, dirs)
    first = plans[0][1]
    s = scenario.load(
        name, exp.schema, quick=first.quick, overrides=first.overrides, directory=directory
    )
    if dict(s.values) != first.scenario:
        what = shards.differences(first.scenario, dict(s.values), "scenario")
        raise TandemError(
            f"experiments/{name}.toml changed since the shards ran: {'; '.join(what[:5])}"
        )
    shards.check(plans, [b.label for b in exp.units(s)])
    partial = PartialRun(out_root / name)
    print(f"exp merge {name}: {len(plans)} shards into {partial.dir}", file=sys.stderr)
    try:
        raw = partial.dir / RAW
        raw.mkdir()
        for d, _ in plans:
            _no_link(d / RAW)
            for f in sorted((d / RAW).iterdir()):
                _no_link(f)
                if not f.is_file():
                    raise TandemError(f"merge: {f}: not a file; a shard's raw/ holds files only")
                if (raw / f.name).exists():
                    raise TandemError(f"merge: {f.name} is in more than one shard")
                shutil.copy2(f, raw / f.name, follow_symlinks=False)
        summary = exp.summarize(s, partial.dir, Measured(partial.dir))
        declare_stats(exp, summary)
        summary["command"] = first.command
        summary["provenance"] = first.provenance | {
            "shards": [
                {
                    "shard": f"{p.shard.index}/{p.shard.count}",
                    "directory": d.name,
                    "host": p.provenance.get("host"),
                    "host_seconds": p.host_seconds,
                }
                for d, p in plans
            ]
        }
        # The host time the run cost, shard after shard.
        summary["host_seconds"] = round(sum(p.host_seconds or 0.0 for _, p in plans), 1)
        write_atomic(partial.dir / "summary.json", json.dumps(summary, indent=2) + "\n")
        finish(exp, partial.dir, summary, first.command)
    except BaseException:
        partial.discard()
        raise
    return partial.finish()


def _no_link(path: Path) -> None:
    """Refuses a link in a shard's raw data: what merge copies is packed
    into the run's archive, which is committed, and a link's target (a
    private key, a home folder) would go with it. A shard's raw/ holds the
    files its units wrote (units.measure), never links."""
    if path.is_symlink():
        raise TandemError(
            f"merge: {path}: a link (to {path.readlink()}), refused: its target would be "
            "packed into the run's raw archive"
        )


def resolve_run(name: str, run_id: str | None, out_root: Path = RESULTS) -> Path:
    """results/NAME/<run_id>, or the latest finished run."""
    get(name)
    base = out_root / name
    run_dir = base / (run_id or "latest")
    if run_id and run_id.endswith(PARTIAL):
        raise TandemError(f"{run_dir} is an unfinished run: it has no summary to report")
    if not run_dir.exists():
        runs = (
            sorted(p.name for p in base.glob("*") if p.is_dir() and not p.is_symlink())
            if base.exists()
            else []
        )
        raise TandemError(
            f"no run {run_dir}"
            + (f"; runs: {', '.join(runs)}" if runs else f"; run `./tandem exp run {name}` first")
        )
    return run_dir.resolve()


def report(name: str, run_id: str | None, out_root: Path = RESULTS) -> tuple[Path, str]:
    """Redraws a run's plots and report from its saved data; returns report.md's text."""
    exp = get(name)
    run_dir = resolve_run(name, run_id, out_root)
    summary = read_summary(run_dir, name)
    finish(exp, run_dir, summary, str(summary.get("command", f"./tandem exp run {name}")))
    return run_dir, (run_dir / "report.md").read_text()


# Row fields that say which cell a row is (the rest are measurements).
CELL_KEYS = ("env", "load", "loaded_cores", "cores", "affinity", "io_load")


def compare(name: str, run_a: str, run_b: str, out_root: Path = RESULTS) -> tuple[str, float]:
    """Worst cases of two runs side by side: a Markdown table, and the
    largest difference in % of the larger value."""
    dirs = [resolve_run(name, r, out_root) for r in (run_a, run_b)]
    tables = []
    for d in dirs:
        rows = read_summary(d, name).get("rows")
        if not isinstance(rows, list):
            raise TandemError(f"{d}: summary has no rows to compare")
        tables.append({tuple((k, r[k]) for k in CELL_KEYS if k in r): r for r in rows})
    a, b = tables
    if set(a) != set(b):
        raise TandemError(f"{run_a} and {run_b} measured different cells")
    lines = [
        f"| cell | {dirs[0].name} max µs | {dirs[1].name} max µs | difference |",
        "|---|---|---|---|",
    ]
    worst = 0.0
    for cell in a:
        x, y = num(a[cell], "max_us"), num(b[cell], "max_us")
        diff = abs(x - y) / max(x, y) * 100 if max(x, y) else 0.0
        worst = max(worst, diff)
        label = ", ".join(f"{k}={v}" for k, v in cell)
        lines.append(f"| {label} | {x:g} | {y:g} | {diff:.1f} % |")
    lines.append(f"\nLargest difference: {worst:.1f} %.")
    return "\n".join(lines) + "\n", worst
