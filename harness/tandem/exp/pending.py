"""Finished shards kept between sittings: a run too long for one sitting
(`tandem exp run NAME --shard I/N`, some shards per sitting) keeps its
finished shards in one archive, results/NAME/pending.tar.xz, committed
until the last shard is in and `tandem exp merge NAME
results/NAME/pending.tar.xz` makes the run (docs/harness.md, "Across
sittings"). `tandem exp keep NAME DIR...` adds shards to it; a shard joins
only if it agrees with those already kept as `merge` would demand, so a
sitting learns at once, not at the merge, that its build or commit
differs."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from tandem.errors import TandemError
from tandem.exp import shards
from tandem.platform.paths import RESULTS

ARCHIVE = "pending.tar.xz"


def archive_of(name: str, root: Path = RESULTS) -> Path:
    """Where experiment `name` keeps its finished shards."""
    return root / name / ARCHIVE


def unpack(archive: Path, into: Path) -> list[Path]:
    """The shard directories `archive` holds, unpacked into `into`. Only
    folders and plain files, each under a top folder (a shard's), are
    accepted: a link, a device, an absolute path or `..` is refused before
    anything is written."""
    try:
        with tarfile.open(archive, "r:xz") as tar:
            members = tar.getmembers()
            for m in members:
                parts = PurePosixPath(m.name).parts
                if not (m.isdir() or m.isfile()):
                    raise TandemError(f"{archive}: {m.name}: not a file or folder; refused")
                if m.name.startswith("/") or ".." in parts or not parts:
                    raise TandemError(f"{archive}: {m.name}: a path outside its shard; refused")
                if len(parts) == 1 and not m.isdir():
                    raise TandemError(f"{archive}: {m.name}: a file outside any shard's folder")
            # Written one by one, not by extractall: its `filter` argument is
            # newer than Debian bookworm's Python 3.11.2, and the checks above
            # already admit only folders and plain files under a shard's.
            for m in members:
                target = into.joinpath(*PurePosixPath(m.name).parts)
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                source = tar.extractfile(m)
                if source is None:
                    raise TandemError(f"{archive}: {m.name}: no data; refused")
                target.parent.mkdir(parents=True, exist_ok=True)
                with source, target.open("wb") as out:
                    shutil.copyfileobj(source, out)
    except (OSError, tarfile.TarError) as e:
        raise TandemError(f"{archive}: not an archive of shards ({e})") from None
    return [into / top for top in sorted({PurePosixPath(m.name).parts[0] for m in members})]


def _pack(archive: Path, dirs: Sequence[Path]) -> None:
    """Writes `dirs` (each under its own name) into `archive`, replacing it
    only once the new one is whole. Owners and modes are normalised, so
    the archive says nothing of the machine that made it."""

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    tmp = archive.with_name(archive.name + ".tmp")
    try:
        with tarfile.open(tmp, "w:xz") as tar:
            for d in dirs:
                tar.add(d, arcname=d.name, recursive=False, filter=plain)
                for f in sorted(d.rglob("*")):
                    if f.is_symlink() or not (f.is_file() or f.is_dir()):
                        raise TandemError(f"keep: {f}: a link or special file; refused")
                    tar.add(
                        f, arcname=f"{d.name}/{f.relative_to(d)}", recursive=False, filter=plain
                    )
        os.replace(tmp, archive)
    finally:
        tmp.unlink(missing_ok=True)


def keep(name: str, dirs: Sequence[Path], root: Path = RESULTS) -> tuple[Path, list[str]]:
    """Adds finished shards `dirs` of experiment `name` to its archive of
    kept shards; returns the archive and the shards it now holds (as
    "I/N"). Refused, and the archive left as it was, when a shard did not
    finish, is already kept, or is not of the run the kept shards are of."""
    if not dirs:
        raise TandemError("keep: give the finished shards' directories")
    archive = archive_of(name, root)
    with tempfile.TemporaryDirectory() as tmp:
        kept = unpack(archive, Path(tmp)) if archive.exists() else []
        names = {d.name for d in kept}
        for d in dirs:
            if d.name in names:
                raise TandemError(f"keep: {d.name} is already kept in {archive}")
        plans = shards.read(name, [*kept, *dirs])
        shards.agree(plans)
        indices = [p.shard.index for _, p in plans]
        again = sorted({i for i in indices if indices.count(i) > 1})
        if again:
            raise TandemError(
                f"keep: shard {', '.join(str(i) for i in again)}/{plans[0][1].shard.count} "
                "twice (run again, a shard is kept once)"
            )
        twice = shards.measured_twice(plans)
        if twice:
            raise TandemError(f"keep: measured more than once: {', '.join(sorted(twice))}")
        order = sorted(plans, key=lambda dp: dp[1].shard.index)
        archive.parent.mkdir(parents=True, exist_ok=True)
        _pack(archive, [d for d, _ in order])
    return archive, [f"{p.shard.index}/{p.shard.count}" for _, p in order]
