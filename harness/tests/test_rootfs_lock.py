"""The initramfs's Debian packages are locked (rootfs/packages.lock): the
lock is of today's packages.txt, names each package once with a version and
a SHA-256, and rootfs/build.sh refuses a lock that is stale or missing before
it downloads anything."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tandem.platform.paths import ROOT

ROOTFS = ROOT / "rootfs"
LINE = re.compile(r"^([a-z0-9][a-z0-9.+-]*) (\S+) ([0-9a-f]{64})$")


def _entries(lock: Path) -> list[tuple[str, str, str]]:
    rows = []
    for line in lock.read_text().splitlines():
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, f"rootfs/packages.lock: not 'name version sha256': {line!r}"
        rows.append((match[1], match[2], match[3]))
    return rows


def test_the_lock_is_of_the_packages_txt_in_the_tree() -> None:
    listed = hashlib.sha256((ROOTFS / "packages.txt").read_bytes()).hexdigest()
    assert f"# packages.txt {listed}" in (ROOTFS / "packages.lock").read_text().splitlines(), (
        "rootfs/packages.txt changed since the lock was written: run make rootfs-lock"
    )


def test_the_lock_names_each_package_once_with_the_ones_packages_txt_lists() -> None:
    rows = _entries(ROOTFS / "packages.lock")
    names = [name for name, _, _ in rows]
    assert len(names) == len(set(names))
    wanted = {
        line.strip()
        for line in (ROOTFS / "packages.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert wanted <= set(names)


def _copy_rootfs(tmp_path: Path) -> Path:
    copy = tmp_path / "rootfs"
    shutil.copytree(ROOTFS, copy)
    return copy


def _build(rootfs: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [rootfs / "build.sh", tmp_path / "out", tmp_path / "tools"],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("packages.txt", "packages.txt changed since rootfs/packages.lock was written"),
        ("no-lock", "packages.lock is missing"),
    ],
)
def test_the_build_refuses_a_stale_or_missing_lock(
    tmp_path: Path, change: str, message: str
) -> None:
    rootfs = _copy_rootfs(tmp_path)
    if change == "packages.txt":
        with (rootfs / "packages.txt").open("a") as listed:
            listed.write("hello\n")
    else:
        (rootfs / "packages.lock").unlink()
    built = _build(rootfs, tmp_path)
    assert built.returncode != 0
    assert message in built.stderr
    assert not (tmp_path / "out" / "debs").exists() or not any(
        (tmp_path / "out" / "debs").iterdir()
    )
