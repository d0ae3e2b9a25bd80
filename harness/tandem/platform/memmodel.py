"""The memory model in a boot (`--memmodel PROFILE`): its QEMU plugin's
options, a profile's values and hash, and what the model counted.

The model itself is the Rust crate `harness/memmodel`; the QEMU plugin
`qemu/plugins/memplugin` (built to `build/qemu/libtandem_memplugin.so`) runs it
in per-core timing and charges its stalls to each core's clock (QEMU patch
0006). `tandem-memprofile` (built beside it) prints a profile's values and
hash, so this module never reimplements the crate's parsing or hashing.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform.paths import BUILD, ROOT

# The profiles compiled into the model: every file of
# harness/memmodel/profiles/, which the crate's BUILTIN_PROFILES includes
# (a list here fell behind it: a9-rcar-h1 and arm11-ne1 were refused).
PROFILES = ROOT / "harness" / "memmodel" / "profiles"
BUILTIN = tuple(sorted(p.stem for p in PROFILES.glob("*.toml")))
PLUGIN = BUILD / "qemu" / "libtandem_memplugin.so"
PROFILE_TOOL = BUILD / "qemu" / "tandem-memprofile"
# What the plugin writes into the boot's log directory when QEMU exits.
STATS_FILE = "memmodel.json"


def check_profile(spec: str) -> str:
    """`spec` if `--memmodel` can take it: a built-in profile's name, or a
    path to a profile TOML (with a `/` or ending in `.toml`) that exists."""
    if spec in BUILTIN:
        return spec
    if "/" in spec or spec.endswith(".toml"):
        if not Path(spec).is_file():
            raise TandemError(f"--memmodel {spec}: no such profile file")
        return spec
    raise TandemError(
        f"--memmodel {spec!r}: not a built-in profile ({', '.join(BUILTIN)}) "
        "or a path to a profile TOML"
    )


@functools.cache
def profile(spec: str) -> dict[str, object]:
    """A profile's values and hash, as the model reads them (tandem-memprofile)."""
    if not PROFILE_TOOL.exists():
        raise TandemError(f"{PROFILE_TOOL} is not built (run `make build`)")
    try:
        done = subprocess.run([str(PROFILE_TOOL), spec], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise TandemError(f"memory profile {spec}: {e.stderr.strip()}") from None
    values = json.loads(done.stdout)
    if not isinstance(values, dict):
        raise TandemError(f"tandem-memprofile {spec}: not a JSON object")
    return values


def provenance(spec: str | None) -> dict[str, object] | None:
    """What a run's provenance records of its memory model: the profile as
    given, its name and hash (None: no model)."""
    if spec is None:
        return None
    values = profile(spec)
    return {"profile": spec, "name": values["name"], "hash": values["hash"]}


def plugin_args(spec: str, quantum_ns: int, out: Path) -> list[str]:
    """QEMU's options loading the model with profile `spec`, its counters to
    `out` (a boot checks that the plugin is built: boot_options.check)."""
    options = [str(PLUGIN), f"profile={spec}", f"quantum_ns={quantum_ns}", f"out={out}"]
    return ["-plugin", ",".join(options)]


def read_stats(run_dir: Path) -> dict[str, object] | None:
    """What the model of the boot logged in `run_dir` counted (None: no model)."""
    path = run_dir / STATS_FILE
    if not path.exists():
        return None
    return parse_stats(path.read_text(), str(path))


def parse_stats(text: str, where: str) -> dict[str, object]:
    """The model's counters from its STATS_FILE's text (`where`: whose, for
    an error)."""
    if not text.strip():
        raise TandemError(f"{where}: empty (QEMU did not exit cleanly)")
    stats = json.loads(text)
    if not isinstance(stats, dict):
        raise TandemError(f"{where}: not a JSON object")
    if "error" in stats:
        raise TandemError(f"{where}: the memory model failed: {stats['error']}")
    return stats


def core_counter(stats: Mapping[str, object], core: int, key: str, where: str) -> int:
    """Counter `key` of core `core` (from 0) in a boot's model counters
    (`parse_stats`): a count, or an error naming the file and the key, so
    every reader of one counter reads it alike (ctxsw's refills, bench
    memory's hand-offs)."""
    cores = stats.get("cores")
    if not isinstance(cores, list) or not 0 <= core < len(cores):
        raise TandemError(f"{where}: {STATS_FILE} has no counters for core {core}")
    value = cores[core].get(key) if isinstance(cores[core], dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TandemError(f"{where}: {STATS_FILE}: core {core}'s {key} is {value!r}")
    return value


def read_probe(path: Path) -> dict[str, list[int]]:
    """The plugin's probe=vcpu counts: blocks and mismatched blocks per vCPU."""
    data = json.loads(path.read_text())
    if data.get("probe") != "vcpu":
        raise TandemError(f"{path}: not a vCPU probe's output")
    return {"blocks": list(data["blocks"]), "mismatched": list(data["mismatched"])}


def totals(stats: Mapping[str, object]) -> dict[str, int]:
    """The model's per-core counters summed over the cores."""
    cores = stats.get("cores")
    out: dict[str, int] = {}
    if isinstance(cores, list):
        for core in cores:
            if isinstance(core, dict):
                for k, v in core.items():
                    if isinstance(v, int) and not k.endswith("permille"):
                        out[k] = out.get(k, 0) + v
    return out
