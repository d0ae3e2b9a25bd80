"""What produced a run: the commit, QEMU, Linux, the board and its
firmware, the timing mode and quantum, and the host. Every experiment's summary.json carries it,
so a number can always be traced to what measured it."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import memmodel, qemu_command
from tandem.platform.board import DEFAULT_BOARD
from tandem.platform.paths import BUILD, INITRAMFS, KERNEL, QEMU_INSTALL, ROOT, firmware

KERNEL_RELEASE = BUILD / "linux" / "include" / "config" / "kernel.release"


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _qemu() -> dict[str, object]:
    try:
        version = qemu_command.run(qemu_command.version_argv(), "QEMU").stdout.decode()
        first = version.splitlines()[0] if version else "unknown"
    except TandemError as e:
        first = f"unknown ({e})"
    info = QEMU_INSTALL / "BUILD-INFO"
    build = info.read_text().strip().splitlines() if info.exists() else []
    return {
        "version": first,
        "build": build,
        "cache_key": QEMU_INSTALL.resolve().name if QEMU_INSTALL.exists() else "none",
    }


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return "missing"


def timing_keys(scenario: Mapping[str, object]) -> dict[str, object]:
    """The scenario's timing modes and quantum, whatever the keys are named,
    and its memory model and counter rule where it has them."""
    return {
        k: v
        for k, v in scenario.items()
        if k.endswith(("timing", "timings")) or k in ("quantum_ns", "memmodel", "causal")
    }


def memory_model(scenario: Mapping[str, object]) -> dict[str, object] | None:
    """The memory profile a run used, its name and hash (None: no model)."""
    spec = scenario.get("memmodel")
    if not isinstance(spec, str) or spec in ("", "none"):
        return None
    return memmodel.provenance(spec)


def changed_paths() -> list[str] | None:
    """Tracked files changed since the commit, outside results/ (earlier runs
    move results/*/latest, which changes nothing that measures); None when
    git cannot tell."""
    names = _git("diff", "--name-only", "HEAD", "--", ".", ":!results")
    if names == "unknown":
        return None
    return names.splitlines()


def changes_digest() -> str:
    """A digest of the uncommitted changes outside results/ ("none"
    without): two shards with the same changed paths may have changed them
    differently."""
    diff = _git("diff", "HEAD", "--", ".", ":!results")
    if not diff:
        return "none"
    return hashlib.sha256(diff.encode()).hexdigest()[:16]


def collect(
    scenario: Mapping[str, object], jobs: int = 1, board: str = DEFAULT_BOARD
) -> dict[str, object]:
    """Provenance of a run of `scenario` (its values, after overrides),
    measured `jobs` boots at a time on `board` (boards/NAME.toml), whose
    firmware image is the one digested.

    Everything but `host` is what made the numbers: shards of one run must
    agree on it (tandem exp merge). The kernel's and initramfs's digests
    are of the images booted, which differ between two builds of the same
    commit (Linux stamps its build's time and host into itself), so shards
    on several machines share one build (docs/harness.md)."""
    changed = changed_paths()
    return {
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": changed is None or bool(changed),
        "changed_paths": changed if changed is not None else "unknown",
        "changes_sha256": "unknown" if changed is None else changes_digest() if changed else "none",
        "qemu": _qemu(),
        "kernel": KERNEL_RELEASE.read_text().strip() if KERNEL_RELEASE.exists() else "unknown",
        "kernel_sha256": _digest(KERNEL),
        "initramfs_sha256": _digest(INITRAMFS),
        "board": board,
        "firmware_sha256": _digest(firmware(board)),
        "timing": timing_keys(scenario),
        "memmodel": memory_model(scenario),
        "host": {
            "name": platform.node(),
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
            "os": f"{platform.system()} {platform.release()}",
            # Boots run side by side (--jobs): the host's load was theirs.
            "jobs": jobs,
        },
    }
