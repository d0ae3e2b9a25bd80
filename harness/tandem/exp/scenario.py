"""Experiment scenario files (`experiments/NAME.toml`): read, checked against
the experiment's schema, with `--quick` and `--set KEY=VALUE` applied.

Every problem is reported with the file, the key and what is allowed, because
the person editing the file is the one who has to fix it."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform.board import DEFAULT_BOARD, Board, boards, load_board
from tandem.platform.paths import EXPERIMENTS
from tandem.platform.timing import CAUSAL_MODES, DEFAULT_CAUSAL, MAX_QUANTUM_NS, MODES

# Holds overrides for `--quick`, checked against the same schema.
QUICK_TABLE = "quick"

Value = int | str | bool | list[int] | list[str] | list[bool]


@dataclass(frozen=True)
class Key:
    """One key a scenario file may (or must) have."""

    kind: type  # int, str, bool or list
    help: str
    item: type | None = None  # element type of a list
    choices: tuple[object, ...] | None = None  # allowed values (of the items, for lists)
    minimum: int | None = None
    maximum: int | None = None
    non_empty: bool = True  # for lists

    def allowed(self) -> str:
        """What may go here, in words."""
        what = self.kind.__name__ if self.item is None else f"list of {self.item.__name__}"
        if self.choices is not None:
            return f"{what} from {', '.join(repr(c) for c in self.choices)}"
        if self.minimum is not None and self.maximum is not None:
            return f"{what} in {self.minimum}..{self.maximum}"
        if self.minimum is not None:
            return f"{what}, each {self.minimum} or more"
        return what


# Keys every experiment has.
COMMON: dict[str, Key] = {
    "experiment": Key(str, "the experiment's name (the file's name without .toml)"),
    "paper": Key(str, "which paper of PAPERS.md it reproduces"),
    "description": Key(str, "one line: what it measures"),
    "timing": Key(str, "timing mode (docs/harness.md)", choices=MODES),
    "quantum_ns": Key(
        int,
        "per-core timing: how far one core's clock may run ahead of another's (ns)",
        minimum=1,
        maximum=MAX_QUANTUM_NS,
    ),
    "reps": Key(int, "repetitions of every boot", minimum=1, maximum=100),
}

# Keys every experiment may have, with their value when a file has none.
OPTIONAL: dict[str, tuple[Key, Value]] = {
    "memmodel": (
        Key(
            str,
            "per-core timing's memory model: a profile (a53, arm11-003 or a TOML path), "
            "or none (docs/harness.md)",
        ),
        "none",
    ),
    "board": (
        Key(
            str,
            "the machine the boots run on (boards/NAME.toml); an experiment may refuse "
            "a board it cannot measure on",
            choices=tuple(boards()),
        ),
        DEFAULT_BOARD,
    ),
    "causal": (
        Key(
            str,
            "per-core timing's counter: lamport (raised by what a core acquires), max or "
            "stall (the latest any core read), or off (free)",
            choices=CAUSAL_MODES,
        ),
        DEFAULT_CAUSAL,
    ),
    "seeds": (
        Key(
            list,
            "Linux's seeds (the device tree's rng-seed and kaslr-seed): every cell's boots "
            "run once per seed and repetition, seed by seed in this order (docs/harness.md)",
            item=int,
            minimum=0,
        ),
        [0],
    ),
}


def _type_ok(value: object, kind: type) -> bool:
    # bool is an int in Python; a scenario's `reps = true` is still a mistake.
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _check_scalar(value: object, kind: type, key: Key) -> bool:
    if not _type_ok(value, kind):
        return False
    if key.choices is not None and value not in key.choices:
        return False
    if kind is int:
        assert isinstance(value, int)
        if key.minimum is not None and value < key.minimum:
            return False
        if key.maximum is not None and value > key.maximum:
            return False
    return True


def check_value(source: str, name: str, key: Key, value: object) -> Value:
    """`value` if `key` allows it; else an error naming source, key and what is allowed."""
    ok: bool
    if key.kind is list:
        assert key.item is not None
        ok = isinstance(value, list) and all(_check_scalar(v, key.item, key) for v in value)
        if ok and key.non_empty and not value:
            ok = False
        if ok and isinstance(value, list) and len(set(map(repr, value))) != len(value):
            ok = False
    else:
        ok = _check_scalar(value, key.kind, key)
    if not ok:
        raise TandemError(
            f"{source}: {name} = {value!r} is not allowed; want {key.allowed()}"
            + (", no repeats" if key.kind is list else "")
            + f" ({key.help})"
        )
    return value  # type: ignore[return-value]


def _check_table(
    source: str,
    table: Mapping[str, object],
    schema: Mapping[str, Key],
    prefix: str,
    required: bool,
    optional: frozenset[str] = frozenset(),
) -> dict[str, Value]:
    unknown = sorted(set(table) - set(schema))
    if unknown:
        raise TandemError(
            f"{source}: unknown key {prefix}{unknown[0]}; known keys: {', '.join(sorted(schema))}"
        )
    if required:
        missing = sorted(set(schema) - set(table) - optional)
        if missing:
            raise TandemError(
                f"{source}: missing key {prefix}{missing[0]} "
                f"({schema[missing[0]].help}; {schema[missing[0]].allowed()})"
            )
    return {k: check_value(source, prefix + k, schema[k], v) for k, v in table.items()}


def parse_override(text: str) -> tuple[str, object]:
    """`KEY=VALUE` from the command line; VALUE is read as TOML (so 64, true,
    [1, 2], "x"), or taken as a plain string when it is not TOML."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise TandemError(f"--set wants KEY=VALUE, got '{text}'")
    try:
        value: object = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return name, value


@dataclass(frozen=True)
class Scenario:
    """A checked scenario: the file's values, with quick and --set applied,
    and its board read once (every boot of the run is on it)."""

    name: str
    path: Path
    values: dict[str, Value]
    quick: bool = False
    overrides: dict[str, Value] = field(default_factory=dict)
    board: Board = field(default_factory=load_board)

    def integer(self, key: str) -> int:
        v = self.values[key]
        assert isinstance(v, int)
        return v

    def text(self, key: str) -> str:
        v = self.values[key]
        assert isinstance(v, str)
        return v

    def flag(self, key: str) -> bool:
        v = self.values[key]
        assert isinstance(v, bool)
        return v

    def integers(self, key: str) -> list[int]:
        v = self.values[key]
        assert isinstance(v, list) and all(isinstance(x, int) for x in v)
        return [int(x) for x in v]

    def texts(self, key: str) -> list[str]:
        v = self.values[key]
        assert isinstance(v, list)
        return [str(x) for x in v]

    def flags(self, key: str) -> list[bool]:
        v = self.values[key]
        assert isinstance(v, list)
        return [bool(x) for x in v]


def available(directory: Path = EXPERIMENTS) -> list[str]:
    """Names of the scenario files."""
    return sorted(p.stem for p in directory.glob("*.toml"))


def load(
    name: str,
    schema: Mapping[str, Key],
    quick: bool = False,
    overrides: Mapping[str, object] | None = None,
    directory: Path = EXPERIMENTS,
) -> Scenario:
    """Reads and checks experiments/NAME.toml against COMMON plus `schema`."""
    path = directory / f"{name}.toml"
    if not path.is_file():
        raise TandemError(
            f"no experiment '{name}' ({path} missing); available: {', '.join(available(directory))}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: not valid TOML: {e}") from None
    full = {**COMMON, **{k: key for k, (key, _) in OPTIONAL.items()}, **schema}
    quick_table = data.pop(QUICK_TABLE, {})
    if not isinstance(quick_table, dict):
        raise TandemError(f"{path}: {QUICK_TABLE} must be a table of overrides")
    values = _check_table(str(path), data, full, "", required=True, optional=frozenset(OPTIONAL))
    for k, (_, default) in OPTIONAL.items():
        # A copy: a run's values are its own, not the shared default.
        values.setdefault(k, copy.copy(default))
    if values["experiment"] != name:
        raise TandemError(
            f"{path}: experiment = {values['experiment']!r} must be the file's name, {name!r}"
        )
    quick_values = _check_table(str(path), quick_table, full, f"{QUICK_TABLE}.", required=False)
    if "experiment" in quick_values:
        raise TandemError(f"{path}: {QUICK_TABLE}.experiment cannot be overridden")
    if quick:
        values.update(quick_values)
    checked: dict[str, Value] = {}
    for key, value in (overrides or {}).items():
        if key == "experiment" or key not in full:
            raise TandemError(
                f"--set {key}: not a key of {path.name}; known keys: "
                f"{', '.join(sorted(k for k in full if k != 'experiment'))}"
            )
        checked[key] = check_value(f"--set ({path.name})", key, full[key], value)
    values.update(checked)
    board = values["board"]
    assert isinstance(board, str)
    return Scenario(name, path, values, quick, checked, load_board(board))
