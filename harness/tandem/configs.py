"""Platform configurations (configs/NAME.toml): which world owns each core."""

from __future__ import annotations

import struct
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.paths import CONFIGS

POLICIES = ("shared", "rtos", "linux")
# abi/src/boot.rs: magic "TNDMBOOT", layout version, policy codes.
BOOT_MAGIC = int.from_bytes(b"TNDMBOOT", "little")
BOOT_VERSION = 1
BOOT_MAX_CORES = 8
POLICY_CODES = {"shared": 0, "rtos": 1, "linux": 2}
_KEYS = {"description", "default_policy", "cores"}


@dataclass(frozen=True)
class PlatformConfig:
    """A named configuration: a policy per core."""

    name: str
    description: str
    default_policy: str
    overrides: dict[int, str]

    def policy(self, core: int) -> str:
        """The policy of one core."""
        return self.overrides.get(core, self.default_policy)

    def has_rtos(self, smp: int) -> bool:
        """Whether the RTOS runs anywhere when QEMU has `smp` cores."""
        return any(self.policy(c) != "linux" for c in range(smp))

    def boot_blob(self, smp: int) -> bytes:
        """The boot configuration the monitor reads (abi/src/boot.rs)."""
        codes = [POLICY_CODES[self.policy(c)] for c in range(smp)]
        codes += [POLICY_CODES["linux"]] * (BOOT_MAX_CORES - smp)
        return struct.pack("<QII8B", BOOT_MAGIC, BOOT_VERSION, smp, *codes)

    def linux_cores(self, smp: int) -> list[int]:
        """Cores Linux may use when QEMU has `smp` cores."""
        return [c for c in range(smp) if self.policy(c) != "rtos"]


def available(directory: Path = CONFIGS) -> list[str]:
    """Names of the configurations that exist."""
    return sorted(p.stem for p in directory.glob("*.toml"))


def _policy(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in POLICIES:
        raise TandemError(f"{where}: policy must be one of {', '.join(POLICIES)}, got {value!r}")
    return value


def load_config(name: str, directory: Path = CONFIGS) -> PlatformConfig:
    """Reads and checks configs/NAME.toml."""
    path = directory / f"{name}.toml"
    if not path.exists():
        raise TandemError(
            f"unknown configuration '{name}' (available: {', '.join(available(directory))})"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: {e}") from e
    unknown = set(data) - _KEYS
    if unknown:
        raise TandemError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
            f"(allowed: {', '.join(sorted(_KEYS))})"
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise TandemError(f"{path}: 'description' must be a string")
    default = _policy(data.get("default_policy", "shared"), f"{path}: default_policy")
    cores = data.get("cores", {})
    if not isinstance(cores, dict):
        raise TandemError(f"{path}: [cores] must be a table of core index = policy")
    overrides: dict[int, str] = {}
    for key, value in cores.items():
        if not key.isdigit():
            raise TandemError(f"{path}: [cores] key '{key}' is not a core index")
        overrides[int(key)] = _policy(value, f"{path}: cores.{key}")
    return PlatformConfig(name, description, default, overrides)
