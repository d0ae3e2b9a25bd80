"""What produced a run: the commit, QEMU, Linux, the board and its
firmware, the configurations, the timing modes and quantum, the memory
model, and the host, read from the options its boots ran with. Every
experiment's summary.json carries it, so a number can always be traced to
what measured it."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import memmodel, qemu_command
from tandem.platform.board import Board
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import BUILD, INITRAMFS, KERNEL, QEMU_INSTALL, ROOT, firmware
from tandem.platform.pinned import Pinned, pin

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


def _one_or_all(values: Sequence[object]) -> object:
    """The value the boots share, or every value (sorted) where they differ."""
    distinct = sorted(set(values), key=str)
    return distinct[0] if len(distinct) == 1 else distinct


def timing_of(boots: Sequence[BootOptions]) -> dict[str, object]:
    """How the boots kept time: every mode they used, and for those in
    per-core timing the quantum, the counter's rule and the memory profile
    (one value where they share it, else each value), read from the boots'
    options themselves."""
    timings = [b.timing for b in boots]
    out: dict[str, object] = {"modes": sorted({t.mode for t in timings})}
    percore = [t for t in timings if t.percore]
    if percore:
        out["quantum_ns"] = _one_or_all([t.quantum_ns for t in percore])
        out["causal"] = _one_or_all([t.causal for t in percore])
        out["memmodel"] = _one_or_all([t.memmodel or "none" for t in percore])
    return out


def memory_models(boots: Sequence[BootOptions]) -> object:
    """The memory profiles the boots used, each its name and hash: one, a
    list where there were several, None without a model."""
    specs = sorted({b.timing.memmodel for b in boots if b.timing.memmodel is not None})
    found = [memmodel.provenance(spec) for spec in specs]
    if not found:
        return None
    return found[0] if len(found) == 1 else found


def board_of(boots: Sequence[BootOptions]) -> Board:
    """The board every boot is on; an error for boots on several, or none."""
    names = sorted({b.board.name for b in boots})
    if len(names) != 1:
        raise TandemError(
            f"a run's boots are on one board, these on {', '.join(names) or 'none (no boots)'}"
        )
    return boots[0].board


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


def kernel_of(boot: BootOptions) -> Path:
    """The Linux image a boot runs (its own, or Tandem's)."""
    return boot.kernel or KERNEL


def inputs_of(boots: Sequence[BootOptions]) -> Pinned:
    """The files every boot of a run is made of, each read once and pinned:
    the board's firmware, each Linux image the boots run, the initramfs.
    `collect` records these digests, and the run's boots refuse other
    bytes (BootOptions.pinned, platform/pinned.py)."""
    board = board_of(boots)
    return pin([firmware(board.name), INITRAMFS, *(kernel_of(b) for b in boots)])


def collect(
    boots: Sequence[BootOptions], jobs: int = 1, inputs: Pinned | None = None
) -> dict[str, object]:
    """Provenance of a run of `boots` (every boot of the run, by its options,
    not a shard's only), measured `jobs` boots at a time: their board, whose
    firmware image is the one digested, configurations, timing and memory
    model are read from the options the boots ran with.

    Everything but `host` is what made the numbers: shards of one run must
    agree on it (tandem exp merge). The kernel's and initramfs's digests
    are of the images booted; two builds of one commit give the same ones
    (the Makefile pins Linux's build stamp; on 1 Dec two machines and two
    checkouts agreed), and `exp keep` refuses a shard whose build differs.

    `inputs` (inputs_of) are the digests to record, read beforehand so
    that the run's boots can be held to the same reading; None: read now."""
    board = board_of(boots)
    pins = inputs_of(boots) if inputs is None else inputs
    changed = changed_paths()
    return {
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": changed is None or bool(changed),
        "changed_paths": changed if changed is not None else "unknown",
        "changes_sha256": "unknown" if changed is None else changes_digest() if changed else "none",
        "qemu": _qemu(),
        "kernel": KERNEL_RELEASE.read_text().strip() if KERNEL_RELEASE.exists() else "unknown",
        # One digest, or each where the boots run several kernels.
        "kernel_sha256": _one_or_all([pins.expected(kernel_of(b)) for b in boots]),
        "initramfs_sha256": pins.expected(INITRAMFS),
        "board": board.name,
        "firmware_sha256": pins.expected(firmware(board.name)),
        "configs": sorted({b.config.name for b in boots}),
        "boots": len(boots),
        "timing": timing_of(boots),
        "memmodel": memory_models(boots),
        "host": {
            "name": platform.node(),
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
            "os": f"{platform.system()} {platform.release()}",
            # Boots run side by side (--jobs): the host's load was theirs.
            "jobs": jobs,
        },
    }
