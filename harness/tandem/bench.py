"""Benchmarks that need only a boot: `tandem bench boot`."""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tandem.paths import RESULTS
from tandem.qemu import BootOptions, run_exec


@dataclass(frozen=True)
class BootSample:
    """One boot: host seconds to the first shell command, and to QEMU exit."""

    run: int
    boot_s: float
    poweroff_s: float


def boot(options: BootOptions, runs: int, out_root: Path = RESULTS) -> Path:
    """Boots `runs` times and records host wall time from QEMU start to the
    first command running in a Linux shell (rcS done, driver loaded), and from
    `poweroff` to QEMU exiting. Writes raw samples and a summary."""
    samples: list[BootSample] = []
    for i in range(runs):
        result = run_exec(options, "true", timeout_s=120)
        if result.status != 0 or result.qemu_status != 0:
            raise SystemExit(f"bench boot: run {i + 1} failed (console: {result.console_log})")
        samples.append(BootSample(i + 1, round(result.boot_s, 3), round(result.poweroff_s, 3)))
        print(
            f"bench boot: run {i + 1}/{runs}: shell after {result.boot_s:.2f} s, "
            f"off {result.poweroff_s:.2f} s later",
            file=sys.stderr,
        )
    boots = [s.boot_s for s in samples]
    offs = [s.poweroff_s for s in samples]
    summary = {
        "benchmark": "boot",
        "timing": options.timing,
        "clock": "host wall time (QEMU start to the first command in Linux)",
        "smp": options.smp,
        "config": options.config,
        "runs": runs,
        "boot_median_s": round(statistics.median(boots), 3),
        "boot_min_s": min(boots),
        "boot_max_s": max(boots),
        "poweroff_median_s": round(statistics.median(offs), 3),
        "poweroff_max_s": max(offs),
    }
    out = out_root / "boot" / options.config / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "samples.json").write_text(json.dumps([asdict(s) for s in samples], indent=2) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    latest = out.parent / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    print(json.dumps(summary, indent=2))
    return out
