"""Host tests of the results directory: raw data packed, reproducibly."""

from __future__ import annotations

import gzip
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tandem import provenance, results
from tandem.errors import TandemError


def test_finish_packs_raw_data_into_one_archive_reproducibly(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        run = results.PartialRun(tmp_path / name)
        raw = run.dir / "raw"
        (raw / "sub").mkdir(parents=True)
        big = "".join(f"line {i}: console output\n" for i in range(5000))
        (raw / "boot.console.log").write_text(big)
        (raw / "sub" / "hits.csv.gz").write_bytes(gzip.compress(big.encode()))
        (raw / "boot.sh").write_text("echo small\n")
        runs.append((run.finish(), big))
    (first, big), (second, _) = runs
    assert not (first / "raw").exists(), "one archive instead of the folder"
    archive = first / "raw.tar.xz"
    assert [p.name for p in first.iterdir()] == ["raw.tar.xz"]
    assert results.raw_file(first, "boot.console.log") == big.encode()
    assert results.raw_file(first, "sub/hits.csv") == big.encode(), "stored unzipped"
    assert results.raw_file(first, "boot.sh") == b"echo small\n"
    assert results.raw_file(first, "missing.log") is None
    assert archive.stat().st_size < len(big) // 5
    # No owner or time in the archive: the same data, the same bytes.
    assert archive.read_bytes() == (second / "raw.tar.xz").read_bytes()
    assert (first.parent / "latest").resolve() == first.resolve()


def test_raw_file_reads_a_run_still_measuring(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "tail.csv.gz").write_bytes(gzip.compress(b"a,b\n"))
    assert results.raw_file(tmp_path, "tail.csv") == b"a,b\n"
    assert results.pack_raw(tmp_path / "none") is None


def test_provenance_ignores_results_but_names_other_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "results" / "x").mkdir(parents=True)
    (repo / "src.txt").write_text("a\n")
    (repo / "results" / "x" / "latest").write_text("1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(provenance, "ROOT", repo)
    (repo / "results" / "x" / "latest").write_text("2\n")
    assert provenance.changed_paths() == []
    (repo / "src.txt").write_text("b\n")
    assert provenance.changed_paths() == ["src.txt"]


def test_runs_and_writers_started_at_once_never_share_a_file(tmp_path: Path) -> None:
    """Shards and boots run side by side (`--jobs`, `--shard`): each run
    claims a directory of its own, and writers of one file each write
    through their own temporary file."""
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: results.PartialRun(tmp_path / "exp"), range(16)))
        texts = [f"writer {n}\n" * 2000 for n in range(16)]
        list(pool.map(lambda t: results.write_atomic(tmp_path / "cache.dts", t), texts))
    assert len({r.dir for r in runs}) == 16 and all(r.dir.is_dir() for r in runs)
    assert len({r.final for r in runs}) == 16
    assert (tmp_path / "cache.dts").read_text() in texts, "one writer's whole text"
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["cache.dts"], "no leftovers"
    shard = results.PartialRun(tmp_path / "exp", tag="shard1of2")
    assert shard.dir.name.endswith("-shard1of2.partial")


def test_raw_data_over_a_cap_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46, hole 5a: a committed raw.tar.xz is input like any other,
    and xz packs gigabytes of one byte into kilobytes. A member larger than
    the cap is refused from its header, before a byte of it is unpacked; a
    gzipped raw file (no size up front) stops at the cap; an archive with
    too many members or too much to unpack before the one asked for too.
    The caps are made small here (the real ones: results.RAW_*_MAX)."""
    cap = 1 << 16
    monkeypatch.setattr(results, "RAW_MEMBER_MAX", cap, raising=False)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "bomb.csv.gz").write_bytes(gzip.compress(b"\0" * (cap + 1)))
    with pytest.raises(TandemError, match=r"bomb\.csv\.gz: unpacks to more than 65536 bytes"):
        results.raw_file(tmp_path, "bomb.csv")
    (raw / "bomb.csv.gz").unlink()
    (raw / "fits.log").write_bytes(b"x" * cap)
    (raw / "over.log").write_bytes(b"\0" * (cap + 1))
    for n in range(4):
        (raw / f"small{n}.log").write_text(f"{n}\n")
    results.pack_raw(tmp_path)
    assert results.raw_file(tmp_path, "fits.log") == b"x" * cap, "up to the cap: read"
    with pytest.raises(
        TandemError,
        match=r"raw\.tar\.xz: raw/over\.log unpacks to 65537 bytes, over the cap of 65536",
    ):
        results.raw_file(tmp_path, "over.log")
    # Members come in name order: small3.log is the sixth.
    monkeypatch.setattr(results, "RAW_MEMBERS_MAX", 5, raising=False)
    with pytest.raises(TandemError, match=r"more than 5 members before raw/small3\.log"):
        results.raw_file(tmp_path, "small3.log")
    monkeypatch.setattr(results, "RAW_MEMBERS_MAX", 100, raising=False)
    monkeypatch.setattr(results, "RAW_ARCHIVE_MAX", 2 * cap, raising=False)
    with pytest.raises(TandemError, match=r"more than 131072 bytes to unpack"):
        results.raw_file(tmp_path, "small3.log")
    monkeypatch.setattr(results, "RAW_ARCHIVE_MAX", 4 * cap, raising=False)
    assert results.raw_file(tmp_path, "small3.log") == b"3\n"
    # A member that is no file (a link, in an archive pack_raw did not make).
    with tarfile.open(tmp_path / "raw.tar.xz", "w:xz") as tar:
        link = tarfile.TarInfo("raw/key")
        link.type, link.linkname = tarfile.SYMTYPE, "/home/user/.ssh/id_ed25519"
        tar.addfile(link)
    with pytest.raises(TandemError, match=r"raw/key is not a file"):
        results.raw_file(tmp_path, "key")


def test_packing_refuses_a_link_in_raw_data(tmp_path: Path) -> None:
    """Issue 46, hole 5b, the last gate: the archive is committed, and a
    link in raw/ would put its target (a private key) into it."""
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    run = tmp_path / "run"
    (run / "raw").mkdir(parents=True)
    (run / "raw" / "a.console.log").write_text("hi\n")
    (run / "raw" / "a.sh").symlink_to(key)
    with pytest.raises(TandemError, match=r"raw/a\.sh: a link .*, refused"):
        results.pack_raw(run)
    assert not (run / "raw.tar.xz").exists() and (run / "raw" / "a.console.log").exists()
