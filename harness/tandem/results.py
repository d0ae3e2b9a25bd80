"""Where runs write what they measured: results/<name>/<run-id>/, a `latest`
link beside, and files that appear whole or not at all."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import secrets
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tandem.errors import TandemError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

# Suffix of a run directory still being written; renamed when the run ends well.
PARTIAL = ".partial"
# Where a run keeps its raw data while it measures, and the one archive it
# becomes when the run finishes (pack_raw).
RAW = "raw"
RAW_ARCHIVE = "raw.tar.xz"
# What reading a run's raw data may cost. A committed raw.tar.xz is input
# like any other, and xz packs a gigabyte of one byte into 150 KB (issue
# 46, hole 5a). The kept runs are far below (results/, 2026-11): the
# largest member 0.5 MB, the largest archive 333 members, 1.5 MB unpacked.
# One file read, into memory or streamed:
RAW_MEMBER_MAX = 128 << 20
# An archive is looked through from its start for the member asked for:
# what is unpacked on the way costs time, and each member's header stays
# in memory (tarfile keeps them).
RAW_ARCHIVE_MAX = 1 << 30
RAW_MEMBERS_MAX = 10_000


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
    paths = sorted(raw.rglob("*"))
    for path in paths:
        # The archive is committed: a link's target (a private key) would
        # go into it. A run's units write files (exp/units.py), and merge
        # refuses a shard's links; this is the last gate.
        if path.is_symlink():
            raise TandemError(
                f"{path}: a link (to {path.readlink()}), refused: its target would be "
                "packed into the run's raw archive"
            )
    archive = run_dir / RAW_ARCHIVE
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:xz", preset=9) as tar:
        for path in (p for p in paths if p.is_file()):
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
    """raw/NAME of a run, wherever it is kept (open_raw), whole; None if
    the run has none."""
    with open_raw(run_dir, name) as f:
        return None if f is None else f.read()


@contextlib.contextmanager
def open_raw(run_dir: Path, name: str) -> Iterator[IO[bytes] | None]:
    """raw/NAME of a run as a stream, wherever it is kept: the raw/ folder
    of a run still measuring or merged (NAME, or NAME.gz), or the
    raw.tar.xz of a finished run; None if the run has none. More than
    RAW_MEMBER_MAX bytes is an error that names the file: refused from the
    archive's header before any is unpacked, or, gzipped (no size up
    front), when the reader gets there."""
    with contextlib.ExitStack() as stack:
        for path in (run_dir / RAW / name, run_dir / RAW / f"{name}.gz"):
            if path.is_file():
                if path.suffix == ".gz":
                    f: io.BufferedIOBase = stack.enter_context(gzip.open(path))
                else:
                    f = stack.enter_context(path.open("rb"))
                yield io.BufferedReader(_Capped(f, str(path)))
                return
        archive = run_dir / RAW_ARCHIVE
        if not archive.is_file():
            yield None
            return
        tar = stack.enter_context(tarfile.open(archive, "r:xz"))
        member = _member(tar, archive, f"{RAW}/{name}")
        if member is None:
            yield None
            return
        if not member.isreg():
            # pack_raw writes files only; a link would be followed inside
            # the archive.
            raise TandemError(
                f"{archive}: {member.name} is not a file (pack_raw writes files only)"
            )
        if member.size > RAW_MEMBER_MAX:
            raise TandemError(
                f"{archive}: {member.name} unpacks to {member.size} bytes, over the cap of "
                f"{RAW_MEMBER_MAX} (results.RAW_MEMBER_MAX): refused as a decompression bomb"
            )
        data = tar.extractfile(member)
        assert data is not None, "a regular member has data"
        yield io.BufferedReader(_Capped(stack.enter_context(data), f"{archive}: {member.name}"))


def _member(tar: tarfile.TarFile, archive: Path, name: str) -> tarfile.TarInfo | None:
    """The member `name`, looked for from the archive's start (tarfile's
    getmember would read every header first), within RAW_MEMBERS_MAX
    members and RAW_ARCHIVE_MAX bytes unpacked on the way."""
    passed = 0
    for count, member in enumerate(tar, 1):
        if member.name == name:
            return member
        if count >= RAW_MEMBERS_MAX:
            raise TandemError(
                f"{archive}: more than {RAW_MEMBERS_MAX} members before {name} "
                "(results.RAW_MEMBERS_MAX): refused"
            )
        passed += tarfile.BLOCKSIZE + member.size
        if passed > RAW_ARCHIVE_MAX:
            raise TandemError(
                f"{archive}: more than {RAW_ARCHIVE_MAX} bytes to unpack before {name} "
                "(results.RAW_ARCHIVE_MAX): refused as a decompression bomb"
            )
    return None


class _Capped(io.RawIOBase):
    """A stream that is an error once more than RAW_MEMBER_MAX bytes came
    out of it (a gzipped file says its size only at its end)."""

    def __init__(self, inner: io.BufferedIOBase | IO[bytes], what: str) -> None:
        super().__init__()
        self._inner = inner
        self._what = what
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        # One byte past the cap shows there is more than the cap.
        data = self._inner.read(min(len(view), RAW_MEMBER_MAX + 1 - self._count))
        self._count += len(data)
        if self._count > RAW_MEMBER_MAX:
            raise TandemError(
                f"{self._what}: unpacks to more than {RAW_MEMBER_MAX} bytes, over the cap "
                "(results.RAW_MEMBER_MAX): refused as a decompression bomb"
            )
        view[: len(data)] = data
        return len(data)
