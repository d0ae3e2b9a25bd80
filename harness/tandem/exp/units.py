"""A run's units: each boot of an experiment (exp/common.Boot: a cell and
repetition) is measured into the run's raw/ under its label, and the
summary is made from there, never from a boot's output in memory.

So a run measured one boot after another, with boots side by side
(`--jobs`), or in shards on several machines (`--shard`, then `tandem exp
merge`) has the same raw data and gives the same summary: the experiment's
`summarize` reads each unit back with `Measured`.

What a unit leaves in raw/:

- LABEL.console.log, LABEL.sh: the console and the script (and with
  partitions LABEL.NAME.console.log, LABEL.NAME.sh for the others);
- LABEL.secure.log (Boot.keep_secure_log) and LABEL.NAME for each file
  an instrument wrote into the boot's log directory (Boot.keep);
- LABEL.unit.json, written last: the unit is complete. It holds what the
  host did (its name, load average before the boot, how many boots ran
  side by side, wall seconds, and the wall time to Linux's first command
  and from the commands' end to QEMU's exit; with Boot.host_marks the
  host's clocks at the lines the commands marked, with Boot.host_lines its
  wall clock at the lines timed, each with its line), QEMU's exit status, and
  what Boot.reduce made of a file too large to keep.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from tandem import pool
from tandem.errors import TandemError
from tandem.exp.common import Boot
from tandem.instruments.hostmarks import HostLines, HostMarks, Reading, lines_of_json
from tandem.instruments.measure import PHASE
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.commands_output import read_console_log
from tandem.results import RAW, raw_file, write_atomic

# raw/LABEL.RECORD: a unit's record, written when it is complete.
RECORD = "unit.json"


def boot(unit: Boot, ctx: pool.Context) -> ExecResult:
    """Boots `unit` and runs its script (the seam tests replace to replay
    a kept run's boots)."""
    marks = None if unit.host_marks is None else HostMarks(unit.host_marks)
    timed = None if unit.host_lines is None else HostLines(unit.host_lines)

    def echo(line: str) -> None:
        # The line's time first: the notes below cost the host time.
        if timed is not None and timed.see(line):
            ctx.note(line.strip())
        m = PHASE.match(line.strip())
        if m:
            ctx.note(f"measuring {m.group(1)}")
        elif marks is not None and (name := marks.see(line)) is not None:
            ctx.note(name)

    def spawned(pid: int) -> None:
        for watcher in (marks, timed):
            if watcher is not None:
                watcher.spawned(pid)

    options = unit.options
    if unit.instrument is not None:
        options = dataclasses.replace(
            options, extra_qemu_args=options.extra_qemu_args + unit.instrument()
        )
    result = run_exec(
        options,
        unit.script,
        timeout_s=unit.timeout_s,
        echo=echo,
        panics=unit.panics,
        cancel=ctx.cancel,
        spawned=spawned,
    )
    if marks is not None:
        result = dataclasses.replace(result, host_marks=marks.to_json())
    if timed is not None:
        result = dataclasses.replace(result, host_lines=timed.to_json())
    return result


def measure(unit: Boot, raw: Path, ctx: pool.Context) -> None:
    """Boots one unit and keeps what it produced under raw/; a script that
    failed (or another partition's) is an error, and leaves no record."""
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    result = boot(unit, ctx)
    raw.mkdir(parents=True, exist_ok=True)
    label = unit.label
    shutil.copy(result.console_log, raw / f"{label}.console.log")
    # The summary reads the output back from the log: it must be what the
    # boot printed (a reader that disagreed would change a run silently).
    kept = read_console_log((raw / f"{label}.console.log").read_bytes(), unit.panics)
    if kept.lines != result.lines:
        raise TandemError(
            f"{label}: its console log ({result.console_log}) does not give back what its "
            "commands printed (commands_output.read_console_log and run_exec disagree)"
        )
    (raw / f"{label}.sh").write_text(unit.script)
    if unit.keep_secure_log:
        shutil.copy(result.secure_log, raw / f"{label}.secure.log")
    log_dir = result.console_log.parent
    for name in unit.keep:
        if not (log_dir / name).is_file():
            raise TandemError(f"{label}: the boot wrote no {name} (in {log_dir})")
        shutil.move(log_dir / name, raw / f"{label}.{name}")
    # Other partitions' scripts and consoles (DualUnix: the loads' Linux).
    for name, script in unit.options.partition_scripts:
        (raw / f"{label}.{name}.sh").write_text(script)
    for name, other in result.partitions.items():
        shutil.copy(other.console_log, raw / f"{label}.{name}.console.log")
        if other.status != 0:
            tail = "\n".join(other.lines[-5:])
            raise TandemError(
                f"{label}: partition {name}'s script exited with {other.status} "
                f"(console: {other.console_log}):\n{tail}"
            )
    if result.status != 0:
        tail = "\n".join(result.lines[-5:])
        raise TandemError(
            f"{label} (console: {result.console_log}): the script exited with "
            f"{result.status}:\n{tail}"
        )
    reduced = unit.reduce(log_dir) if unit.reduce else None
    # Facts about the host, not measurements of the guest: a boot's guest
    # time in per-core and virtual timing does not depend on them.
    host: dict[str, object] = {
        "name": platform.node(),
        "loadavg_before": round(load_before, 2),
        # Boots this one ran beside (--jobs): the load it saw is theirs too.
        "parallel_boots": ctx.jobs,
        "seconds": round(time.monotonic() - started, 1),
        # The host's wall time from QEMU's start to the first command
        # running in Linux, and from the commands' end to QEMU's exit
        # (run_exec's clock): what `boot` measures.
        "boot_s": result.boot_s,
        "poweroff_s": result.poweroff_s,
    }
    if unit.host_marks is not None:
        # What the boot cost the host (a cost measured in host time).
        host["marks"] = result.host_marks
    if unit.host_lines is not None:
        # When the host saw the lines timed (a time measured on the host).
        host["lines"] = result.host_lines
    record = {
        "label": label,
        "host": host,
        "qemu_status": result.qemu_status,
        "reduced": reduced,
    }
    write_atomic(raw / f"{label}.{RECORD}", json.dumps(record, indent=1) + "\n")


def measure_all(name: str, units: Sequence[Boot], run_dir: Path, jobs: int) -> None:
    """Measures `units` into run_dir/raw, `jobs` at a time."""
    raw = run_dir / RAW
    raw.mkdir(parents=True, exist_ok=True)
    pool.run(name, [_task(u, raw) for u in units], jobs)


def _task(unit: Boot, raw: Path) -> pool.Task[None]:
    return pool.Task(unit.label, unit.about, lambda ctx: measure(unit, raw, ctx))


def recorded(run_dir: Path) -> list[str]:
    """The labels of the units complete in a run directory (raw/), sorted."""
    raw = run_dir / RAW
    if not raw.is_dir():
        return []
    return sorted(p.name.removesuffix(f".{RECORD}") for p in raw.glob(f"*.{RECORD}"))


class Measured:
    """The units of a run, read back from its raw data: what each boot's
    commands printed (from its console log, as run_exec read it), its
    record, its kept files. Works on a run still measuring or merged (raw/)
    and on a finished one (raw.tar.xz)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def data(self, label: str, name: str) -> bytes:
        """raw/LABEL.NAME; an error if the run has none."""
        data = raw_file(self.run_dir, f"{label}.{name}")
        if data is None:
            raise TandemError(f"{self.run_dir}: no raw/{label}.{name} (was the unit measured?)")
        return data

    def lines(self, label: str, panics: bool = False) -> list[str]:
        """The lines the unit's commands printed (`panics`: Boot.panics)."""
        return read_console_log(self.data(label, "console.log"), panics).lines

    def where(self, label: str) -> str:
        """The unit, for an error message about its output."""
        return f"{label} (console: {self.run_dir / RAW / label}.console.log)"

    def text(self, label: str, name: str) -> str:
        """A kept text file of the unit (e.g. "secure.log")."""
        return self.data(label, name).decode(errors="replace")

    def path(self, label: str, name: str) -> Path:
        """A kept file of a run not yet packed, for readers that take a path."""
        path = self.run_dir / RAW / f"{label}.{name}"
        if not path.is_file():
            raise TandemError(f"no {path} (was the unit measured?)")
        return path

    def record(self, label: str) -> dict[str, object]:
        """The unit's record."""
        data = json.loads(self.data(label, RECORD))
        if not isinstance(data, dict):
            raise TandemError(f"{self.run_dir}: raw/{label}.{RECORD} is not a record")
        return data

    def host(self, label: str) -> dict[str, object]:
        """What the host did while the unit booted (its record's `host`)."""
        host = self.record(label).get("host")
        return host if isinstance(host, dict) else {}

    def boot_s(self, label: str) -> float | None:
        """Host seconds from QEMU's start to the unit's first command (None
        in a record made before every record kept it)."""
        value = self.host(label).get("boot_s")
        return float(value) if isinstance(value, int | float) else None

    def host_marks(self, label: str) -> dict[str, Reading]:
        """The host's clocks at the lines the unit's commands marked
        (Boot.host_marks), by mark; none for another unit."""
        marks = self.host(label).get("marks")
        if not isinstance(marks, dict):
            return {}
        return {
            name: reading
            for name, value in marks.items()
            if (reading := Reading.of_json(value)) is not None
        }

    def host_lines(self, label: str) -> list[tuple[float, str]]:
        """The host's wall clock at the lines timed (Boot.host_lines), with
        each line, in order; an error for a unit whose record has none."""
        lines = lines_of_json(self.host(label).get("lines"))
        if lines is None:
            raise TandemError(f"{self.where(label)}: its record has no times of its lines")
        return lines

    def reduced(self, label: str) -> object:
        """What Boot.reduce made of the unit's large file."""
        return self.record(label).get("reduced")
