"""A run split across machines: `--shard I/N` measures every N-th unit
(boot) of a run into a partial run directory of its own, with a plan
(shard.json: the scenario, the provenance stamp, every unit's label);
`tandem exp merge` checks that the shards belong to one run and that every
unit is there exactly once, and makes the run from their raw data.

The split is deterministic: the run's units sorted by label, unit k (from
0) to shard k mod N + 1. Any machine with the same commit and scenario
computes the same split, so shards need no coordination (a Slurm job
array, GNU parallel over ssh: docs/harness.md, "Experiments across
machines").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import Boot
from tandem.exp.units import recorded
from tandem.results import write_atomic

# In a shard's directory: its plan and, once it is done, how it went.
PLAN = "shard.json"
# Provenance that is the host's, not the run's: shards on different
# machines differ there by design.
HOST_KEYS = ("host",)


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1..count) of a run split `count` ways."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """ "I/N", e.g. "2/4" (as `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`
        gives it with `--array=1-N`)."""
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if m is None:
            raise TandemError(f"--shard '{text}': expected I/N, e.g. 1/4")
        index, count = int(m.group(1)), int(m.group(2))
        if not 1 <= index <= count:
            raise TandemError(
                f"--shard {index}/{count}: I must be 1..{count} (a Slurm job array: "
                "--array=1-N, so that SLURM_ARRAY_TASK_ID counts from 1)"
            )
        return cls(index, count)

    @property
    def tag(self) -> str:
        """Its part of the shard directory's name."""
        return f"shard{self.index}of{self.count}"

    def select(self, units: Sequence[Boot]) -> list[Boot]:
        """Its units, in the run's order: round robin over the labels sorted."""
        ranks = {label: k for k, label in enumerate(sorted(u.label for u in units))}
        return [u for u in units if ranks[u.label] % self.count == self.index - 1]


@dataclass(frozen=True)
class Plan:
    """What a shard belongs to: the experiment, how its scenario was asked
    for and what it came to, the command that runs it whole, the provenance
    stamp taken before its first boot, and every unit of the run."""

    experiment: str
    quick: bool
    overrides: dict[str, object]
    scenario: dict[str, object]
    command: str
    provenance: dict[str, object]
    units: list[str]
    shard: Shard
    jobs: int
    # Set when the shard has measured all of its units.
    host_seconds: float | None = None

    def write(self, run_dir: Path) -> None:
        data = {
            "experiment": self.experiment,
            "quick": self.quick,
            "overrides": self.overrides,
            "scenario": self.scenario,
            "command": self.command,
            "provenance": self.provenance,
            "units": self.units,
            "shard": [self.shard.index, self.shard.count],
            "jobs": self.jobs,
            "host_seconds": self.host_seconds,
        }
        write_atomic(run_dir / PLAN, json.dumps(data, indent=1) + "\n")

    @classmethod
    def read(cls, run_dir: Path) -> Plan:
        path = run_dir / PLAN
        if not path.is_file():
            raise TandemError(f"{run_dir}: no {PLAN}, not a shard (`tandem exp run --shard I/N`)")
        try:
            d = json.loads(path.read_text())
            index, count = d["shard"]
            return cls(
                experiment=str(d["experiment"]),
                quick=bool(d["quick"]),
                overrides=dict(d["overrides"]),
                scenario=dict(d["scenario"]),
                command=str(d["command"]),
                provenance=dict(d["provenance"]),
                units=[str(x) for x in d["units"]],
                shard=Shard(int(index), int(count)),
                jobs=int(d["jobs"]),
                host_seconds=d.get("host_seconds"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise TandemError(f"{path}: not a shard's plan ({e})") from None


def differences(a: object, b: object, where: str = "") -> list[str]:
    """Where two JSON values differ, as dotted paths with both values."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            here = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                out.append(f"{here}: {a.get(key, '(none)')!r} / {b.get(key, '(none)')!r}")
            else:
                out += differences(a[key], b[key], here)
        return out
    return [] if a == b else [f"{where}: {a!r} / {b!r}"]


def read(name: str, dirs: Sequence[Path]) -> list[tuple[Path, Plan]]:
    """The plans of finished shards of experiment `name`."""
    if not dirs:
        raise TandemError("merge: give the shards' directories")
    out = []
    for d in dirs:
        plan = Plan.read(d)
        if plan.experiment != name:
            raise TandemError(f"{d}: a shard of '{plan.experiment}', not of '{name}'")
        if plan.host_seconds is None:
            raise TandemError(f"{d}: shard {plan.shard.index}/{plan.shard.count} did not finish")
        out.append((d, plan))
    return out


def agree(shards: Sequence[tuple[Path, Plan]]) -> None:
    """Refuses shards (`read`) that are not of one run: the same quick
    variant, overrides, scenario, command, units and shard count, and the
    same provenance but the host's; the message names what differs."""
    first_dir, first = shards[0]
    for d, plan in shards[1:]:
        what = []
        for field in ("quick", "overrides", "scenario", "command", "units"):
            what += differences(getattr(first, field), getattr(plan, field), field)
        stamp = {k: v for k, v in plan.provenance.items() if k not in HOST_KEYS}
        ours = {k: v for k, v in first.provenance.items() if k not in HOST_KEYS}
        what += differences(ours, stamp, "provenance")
        if plan.shard.count != first.shard.count:
            what.append(f"shards: {first.shard.count} / {plan.shard.count}")
        if what:
            raise TandemError(
                f"{first_dir} and {d} are not shards of one run; they differ in:\n  "
                + "\n  ".join(what[:20])
                + (f"\n  ... and {len(what) - 20} more" if len(what) > 20 else "")
            )


def measured_twice(shards: Sequence[tuple[Path, Plan]]) -> dict[str, list[Path]]:
    """Each unit's label that more than one shard holds, with the shards."""
    where: dict[str, list[Path]] = {}
    for d, _ in shards:
        for label in recorded(d):
            where.setdefault(label, []).append(d)
    return {u: ds for u, ds in where.items() if len(ds) > 1}


def check(shards: Sequence[tuple[Path, Plan]], units: Sequence[str]) -> None:
    """Refuses shards (`read`) that are not of one run whose units are
    `units` (what the scenario gives here and now), or that do not hold
    each unit exactly once; the message names what differs."""
    agree(shards)
    first = shards[0][1]
    if list(first.units) != list(units):
        raise TandemError(
            f"the scenario here gives other units than the shards measured: "
            f"{', '.join(differences(first.units, list(units), 'units')[:5])}"
        )
    where: dict[str, list[Path]] = {}
    for d, _ in shards:
        for label in recorded(d):
            where.setdefault(label, []).append(d)
    missing = [u for u in units if u not in where]
    twice = measured_twice(shards)
    unknown = sorted(set(where) - set(units))
    problems = []
    if missing:
        problems.append(f"missing (no shard measured them): {', '.join(missing)}")
    for label, ds in sorted(twice.items()):
        problems.append(f"{label} measured more than once: in {', '.join(str(d) for d in ds)}")
    if unknown:
        problems.append(f"not units of this run: {', '.join(unknown)}")
    if problems:
        raise TandemError(
            "cannot merge: every unit must be there exactly once;\n  " + "\n  ".join(problems)
        )
