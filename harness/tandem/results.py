"""Where runs write what they measured: results/<name>/<run-id>/, a `latest`
link beside, and files that appear whole or not at all."""

from __future__ import annotations

import gzip
import io
import os
import secrets
import shutil
import tarfile
import time
from pathlib import Path

# Suffix of a run directory still being written; renamed when the run ends well.
PARTIAL = ".partial"
# Where a run keeps its raw data while it measures, and the one archive it
# becomes when the run finishes (pack_raw).
RAW = "raw"
RAW_ARCHIVE = "raw.tar.xz"


def _claim(parent: Path, suffix: str = "", tag: str = "") -> Path:
    """Creates a new directory PARENT/<date-time>[-n][-TAG]SUFFIX and
    returns it; its name without SUFFIX is not taken either. mkdir is the
    claim: runs started at once (parallel shards, two experiments) never
    get the same directory."""
    parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 0
    while True:
        n += 1
        name = stamp + (f"-{n}" if n > 1 else "") + (f"-{tag}" if tag else "")
        if (parent / name).exists() or (parent / (name + PARTIAL)).exists():
            continue
        out = parent / (name + suffix)
        try:
            out.mkdir()
        except FileExistsError:
            continue
        return out


def new_run_dir(parent: Path) -> Path:
    """A new results directory for one run: PARENT/<date-time>."""
    return _claim(parent)


def mark_latest(out: Path) -> None:
    """Points PARENT/latest at `out`, once its files are complete."""
    latest = out.parent / "latest"
    # A name of its own: two runs of one experiment may end at once.
    tmp = out.parent / f".latest.{secrets.token_hex(6)}.tmp"
    tmp.symlink_to(out.name)
    # rename() replaces the old link in one step: readers never see none.
    tmp.rename(latest)


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temporary file and a rename, so an
    interrupted run leaves the old file or the new one, never half of one.
    The temporary file's name is its own (O_EXCL), so writers running at
    once (boots sharing a cache) never write into each other's."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    with tmp.open("x") as f:
        f.write(text)
    os.replace(tmp, path)


class PartialRun:
    """A run directory that only gets its final name when the run succeeds:
    PARENT/<run-id>.partial while measuring, PARENT/<run-id> afterwards."""

    def __init__(self, parent: Path, tag: str = "") -> None:
        self.dir = _claim(parent, PARTIAL, tag)
        self.final = self.dir.with_name(self.dir.name.removesuffix(PARTIAL))

    def finish(self) -> Path:
        """Packs its raw data into one archive, gives the directory its
        final name and points `latest` at it."""
        pack_raw(self.dir)
        self.dir.rename(self.final)
        mark_latest(self.final)
        return self.final

    def discard(self) -> None:
        """Removes the directory (nothing measured worth keeping)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def pack_raw(run_dir: Path) -> Path | None:
    """Replaces the run's raw/ folder by one archive, run_dir/raw.tar.xz:
    every boot's console log and the instruments' files, which only a new
    parse of the run needs. One compressed file instead of hundreds keeps
    results/ small in git (results/README.md, "What is kept"); the console
    logs of one run are alike and compress together.

    Files a run gzipped are stored uncompressed in the archive (xz does
    better on the text than on gzip's output). The archive's entries have
    no owner and no time, in name order, so the same data packs to the same
    bytes. Returns the archive, or None without raw/."""
    raw = run_dir / RAW
    if not raw.is_dir():
        return None
    archive = run_dir / RAW_ARCHIVE
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:xz", preset=9) as tar:
        for path in sorted(p for p in raw.rglob("*") if p.is_file()):
            name = path.relative_to(run_dir).as_posix()
            data = path.read_bytes()
            if path.suffix == ".gz":
                name, data = name.removesuffix(".gz"), gzip.decompress(data)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, archive)
    shutil.rmtree(raw)
    return archive


def raw_file(run_dir: Path, name: str) -> bytes | None:
    """raw/NAME of a run, wherever it is kept: the raw/ folder of a run
    still measuring (NAME, or NAME.gz), or the raw.tar.xz of a finished run;
    None if the run has none."""
    for path in (run_dir / RAW / name, run_dir / RAW / f"{name}.gz"):
        if path.is_file():
            data = path.read_bytes()
            return gzip.decompress(data) if path.suffix == ".gz" else data
    archive = run_dir / RAW_ARCHIVE
    if not archive.is_file():
        return None
    with tarfile.open(archive, "r:xz") as tar:
        try:
            member = tar.extractfile(f"{RAW}/{name}")
        except KeyError:
            return None
        return member.read() if member is not None else None
