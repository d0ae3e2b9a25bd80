"""Where runs write what they measured: results/<name>/<run-id>/, a `latest`
link beside, and files that appear whole or not at all."""

from __future__ import annotations

import gzip
import os
import shutil
import time
from pathlib import Path

# Suffix of a run directory still being written; renamed when the run ends well.
PARTIAL = ".partial"
# Raw files above this size are kept gzipped: console logs of a long run are
# megabytes of text that compress tenfold, and results/ is in git.
COMPRESS_ABOVE_BYTES = 16 * 1024


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
        """Compresses its raw data, gives the directory its final name and
        points `latest` at it."""
        compress_raw(self.dir / "raw")
        self.dir.rename(self.final)
        mark_latest(self.final)
        return self.final

    def discard(self) -> None:
        """Removes the directory (nothing measured worth keeping)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def compress_raw(raw: Path, above: int = COMPRESS_ABOVE_BYTES) -> list[Path]:
    """Replaces every file under `raw` larger than `above` bytes by NAME.gz
    (`zcat` or `gzip -dk` gets it back). No time stamp goes into the gzip
    header, so the same data gives the same bytes. Returns the new files."""
    if not raw.is_dir():
        return []
    written = []
    for path in sorted(raw.rglob("*")):
        if not path.is_file() or path.suffix == ".gz" or path.stat().st_size <= above:
            continue
        packed = path.with_name(path.name + ".gz")
        tmp = packed.with_name(packed.name + ".tmp")
        with (
            path.open("rb") as src,
            tmp.open("wb") as dst,
            gzip.GzipFile(filename="", mode="wb", fileobj=dst, mtime=0) as gz,
        ):
            shutil.copyfileobj(src, gz)
        os.replace(tmp, packed)
        path.unlink()
        written.append(packed)
    return written
