"""The RTOS's applications as the harness sees them, and the workload blob
that tells them what to do on one boot.

Each application lives in `rtos/apps/<name>/` with an `app.toml` saying what
it does and which parameters it takes (an integer range, or named choices);
the RTOS's build reads the same file. The workload blob (abi/src/workload.rs)
is a list of `application.parameter = value` entries, and an application
named in it is selected for the boot. This module checks every value
against the application's `app.toml` before QEMU starts, so a mistake is
reported with the parameter's meaning rather than as an RTOS refusal; it
knows no application by name.
"""

from __future__ import annotations

import contextlib
import struct
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import abi_generated as abi
from tandem.platform.paths import ROOT

APPS = ROOT / "rtos" / "apps"
U32_MAX = 0xFFFF_FFFF
# A parameter's value as a scenario file or a caller gives it.
Value = int | str | bool


@dataclass(frozen=True)
class Param:
    """One parameter an application takes from the workload blob."""

    name: str
    help: str
    minimum: int
    maximum: int
    default: int
    # Named values, encoded as their index (empty: a plain integer).
    choices: tuple[str, ...] = ()

    def allowed(self) -> str:
        """What may go here, in words."""
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return f"an integer in {self.minimum}..{self.maximum}"

    def encode(self, app: str, value: object) -> int:
        """`value` as the blob carries it; an error naming the parameter if
        it is not allowed."""
        number: int | None = None
        if self.choices:
            if isinstance(value, str) and value in self.choices:
                number = self.choices.index(value)
        elif isinstance(value, bool):
            number = int(value)
        elif isinstance(value, int):
            number = value
        if number is None or not self.minimum <= number <= self.maximum:
            raise TandemError(
                f"RTOS application {app}: {self.name} = {value!r} is not allowed; "
                f"want {self.allowed()} ({self.help})"
            )
        return number


@dataclass(frozen=True)
class Manifest:
    """An application's `app.toml`."""

    name: str
    description: str
    params: Mapping[str, Param]

    def param(self, name: str) -> Param:
        """Parameter `name`; an error listing the known ones."""
        if name not in self.params:
            known = ", ".join(sorted(self.params)) or "none"
            raise TandemError(
                f"RTOS application {self.name} has no parameter '{name}' (its parameters: {known})"
            )
        return self.params[name]


def available(directory: Path = APPS) -> list[str]:
    """Names of the RTOS's applications (folders with an app.toml)."""
    return sorted(p.parent.name for p in directory.glob("*/app.toml"))


def _int(where: str, table: Mapping[str, object], key: str, default: int) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= U32_MAX:
        raise TandemError(f"{where}: {key} must be an integer in 0..{U32_MAX}, got {value!r}")
    return value


def _param(where: str, name: str, table: object) -> Param:
    if not isinstance(table, dict):
        raise TandemError(f"{where}: params.{name} must be a table")
    where = f"{where}: params.{name}"
    help_text = table.get("help", "")
    if not isinstance(help_text, str):
        raise TandemError(f"{where}: help must be a string")
    choices = table.get("choices")
    if choices is not None:
        if (
            not isinstance(choices, list)
            or not choices
            or not all(isinstance(c, str) for c in choices)
        ):
            raise TandemError(f"{where}: choices must be a list of names")
        default = table.get("default", choices[0])
        if default not in choices:
            raise TandemError(f"{where}: default {default!r} is not one of the choices")
        return Param(name, help_text, 0, len(choices) - 1, choices.index(default), tuple(choices))
    minimum = _int(where, table, "min", 0)
    maximum = _int(where, table, "max", U32_MAX)
    default = _int(where, table, "default", minimum)
    if not minimum <= default <= maximum:
        raise TandemError(f"{where}: want min <= default <= max")
    return Param(name, help_text, minimum, maximum, default)


@cache
def manifest(name: str, directory: Path = APPS) -> Manifest:
    """Reads rtos/apps/NAME/app.toml."""
    path = directory / name / "app.toml"
    if not path.is_file():
        raise TandemError(
            f"no RTOS application '{name}' ({path} missing); "
            f"available: {', '.join(available(directory))}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: not valid TOML: {e}") from None
    description = data.get("description", "")
    params = data.get("params", {})
    if not isinstance(description, str) or not isinstance(params, dict):
        raise TandemError(f"{path}: want description (a string) and [params.NAME] tables")
    return Manifest(name, description, {k: _param(str(path), k, v) for k, v in params.items()})


@dataclass(frozen=True)
class AppRun:
    """One application selected for a boot, and the parameters it is given
    (the others keep their defaults)."""

    app: str
    params: tuple[tuple[str, Value], ...] = ()

    @staticmethod
    def of(app: str, **params: Value) -> AppRun:
        """`AppRun.of("periodic", core=1, period_us=1000)`."""
        return AppRun(app, tuple(params.items()))


def parse_setting(text: str) -> tuple[str, str, Value]:
    """`APP.PARAM=VALUE` (VALUE an integer, true/false or a choice's name)."""
    name, sep, raw = text.partition("=")
    app, dot, param = name.strip().partition(".")
    if not sep or not dot or not app or not param:
        raise TandemError(f"an RTOS parameter is APP.PARAM=VALUE, got {text!r}")
    raw = raw.strip()
    value: Value = raw
    if raw in ("true", "false"):
        value = raw == "true"
    else:
        with contextlib.suppress(ValueError):
            value = int(raw, 0)
    return app, param, value


def runs(settings: Iterable[str]) -> tuple[AppRun, ...]:
    """The applications `APP` or `APP.PARAM=VALUE` settings select, in the
    order first named (a command line's `--rtos`, a scenario's `rtos`)."""
    params: dict[str, list[tuple[str, Value]]] = {}
    for text in settings:
        if "=" not in text and "." not in text:
            params.setdefault(text.strip(), [])
            continue
        app, param, value = parse_setting(text)
        params.setdefault(app, []).append((param, value))
    return tuple(AppRun(app, tuple(p)) for app, p in params.items())


def _name(text: str) -> bytes:
    data = text.encode("ascii")
    assert len(data) <= abi.WORKLOAD_NAME_LEN, text
    return data.ljust(abi.WORKLOAD_NAME_LEN, b"\0")


def workload_blob(runs: Iterable[AppRun], directory: Path = APPS) -> bytes:
    """The workload blob selecting `runs` (abi/src/workload.rs), checked
    against each application's app.toml. Several runs of one application
    merge; giving one parameter two values is an error."""
    merged: dict[str, dict[str, int]] = {}
    for run in runs:
        m = manifest(run.app, directory)
        values = merged.setdefault(run.app, {})
        for key, value in run.params:
            number = m.param(key).encode(run.app, value)
            if values.get(key, number) != number:
                raise TandemError(
                    f"RTOS application {run.app}: {key} is given {values[key]} and {number}"
                )
            values[key] = number
    entries = [
        (app, key, value)
        for app, values in merged.items()
        for key, value in (values.items() if values else [("", 0)])
    ]
    if len(entries) > abi.WORKLOAD_MAX_ENTRIES:
        raise TandemError(
            f"{len(entries)} RTOS parameters: the workload blob holds {abi.WORKLOAD_MAX_ENTRIES}"
        )
    blob = struct.pack("<QII", abi.WORKLOAD_MAGIC, abi.WORKLOAD_VERSION, len(entries))
    for app, key, value in entries:
        blob += _name(app) + _name(key) + struct.pack("<Q", value)
    return blob.ljust(abi.WORKLOAD_SIZE, b"\0")
