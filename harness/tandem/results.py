"""Where runs write what they measured: results/<name>/<run-id>/, a `latest`
link beside, and files that appear whole or not at all."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

# Suffix of a run directory still being written; renamed when the run ends well.
PARTIAL = ".partial"


def new_run_dir(parent: Path) -> Path:
    """A new results directory for one run: PARENT/<date-time>."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = parent / stamp
    n = 1
    while out.exists() or out.with_name(out.name + PARTIAL).exists():
        n += 1
        out = parent / f"{stamp}-{n}"
    out.mkdir(parents=True)
    return out


def mark_latest(out: Path) -> None:
    """Points PARENT/latest at `out`, once its files are complete."""
    latest = out.parent / "latest"
    tmp = out.parent / ".latest.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(out.name)
    # rename() replaces the old link in one step: readers never see none.
    tmp.rename(latest)


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temporary file and a rename, so an
    interrupted run leaves the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class PartialRun:
    """A run directory that only gets its final name when the run succeeds:
    PARENT/<run-id>.partial while measuring, PARENT/<run-id> afterwards."""

    def __init__(self, parent: Path) -> None:
        final = new_run_dir(parent)
        final.rmdir()
        self.final = final
        self.dir = final.with_name(final.name + PARTIAL)
        self.dir.mkdir()

    def finish(self) -> Path:
        """Gives the directory its final name and points `latest` at it."""
        self.dir.rename(self.final)
        mark_latest(self.final)
        return self.final

    def discard(self) -> None:
        """Removes the directory (nothing measured worth keeping)."""
        shutil.rmtree(self.dir, ignore_errors=True)
