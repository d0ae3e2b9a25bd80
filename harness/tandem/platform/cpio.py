"""A minimal writer for the cpio "newc" format the kernel unpacks.

Used to append archives to the initramfs (the kernel unpacks concatenated
archives in order, a later file replacing an earlier one): the command
script of `tandem exec`, and the files and directories `--add` puts into
the guest (`added`).
"""

from __future__ import annotations

import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _entry(ino: int, name: str, mode: int, data: bytes) -> bytes:
    encoded = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
    header = b"070701" + b"".join(f"{f:08x}".encode() for f in fields)
    return (
        header
        + encoded
        + b"\0" * _pad4(len(header) + len(encoded))
        + data
        + b"\0" * _pad4(len(data))
    )


def _check_path(path: str) -> None:
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"cpio path must be relative and inside the archive: {path}")


def archive(files: dict[str, tuple[int, bytes]]) -> bytes:
    """An archive of `path -> (permission bits, content)`; parent directories
    are added. Paths are relative (no leading slash)."""
    return archive_entries(
        {p: (stat.S_IFREG | (perm & 0o7777), data) for p, (perm, data) in files.items()}
    )


def archive_entries(entries: dict[str, tuple[int, bytes]]) -> bytes:
    """An archive of `path -> (mode, content)`: mode with its file type
    (regular file, directory, symbolic link, whose content is its target);
    parent directories not listed are added (0755). Owner 0, time 0, names
    sorted: the same entries give the same bytes."""
    out = bytearray()
    ino = 1
    listed = {p for p, (mode, _) in entries.items() if stat.S_ISDIR(mode)}
    made: set[str] = set()
    for path in sorted(entries):
        _check_path(path)
        mode, data = entries[path]
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            raise ValueError(f"cpio entry {path}: only files, directories and links")
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in made and d not in listed:
                made.add(d)
                out += _entry(ino, d, stat.S_IFDIR | 0o755, b"")
                ino += 1
        made.add(path)
        out += _entry(ino, path, mode, b"" if stat.S_ISDIR(mode) else data)
        ino += 1
    out += _entry(0, "TRAILER!!!", 0, b"")
    return bytes(out)


# Guest paths `--add` may not write: the harness's own (exec's scripts).
RESERVED = ("/tandem",)
# What `--add HOST` without a guest path becomes: /root/NAME, where exec's
# commands start (rootfs/rcS: cd /root).
DEFAULT_DIR = "/root"


@dataclass(frozen=True)
class Added:
    """A host file or directory put into the guest's file system for one
    boot (`--add HOST[:GUEST]`): GUEST is absolute."""

    host: Path
    guest: str

    @staticmethod
    def parse(text: str) -> Added:
        """`HOST[:GUEST]`; GUEST defaults to /root/NAME. A colon in HOST is
        taken as the separator only when what follows it is absolute."""
        host, sep, guest = text.rpartition(":")
        if not sep or not guest.startswith("/"):
            host, guest = text, ""
        if not host:
            raise TandemError(f"--add '{text}': no host path (HOST[:GUEST])")
        path = Path(host).expanduser()
        if not guest:
            name = path.resolve().name
            if not name:
                raise TandemError(f"--add '{text}': give a guest path for '/' (HOST:GUEST)")
            guest = f"{DEFAULT_DIR}/{name}"
        return Added(path, guest)

    def check(self) -> None:
        """A clear error for a host path that is missing or not a file,
        directory or link, and for a guest path that is relative, leaves
        the root, is the root, or lands on the harness's own files."""
        if not self.host.exists() and not self.host.is_symlink():
            raise TandemError(f"--add: {self.host}: no such file or directory")
        if not self.guest.startswith("/"):
            raise TandemError(f"--add: guest path '{self.guest}' must be absolute")
        if ".." in self.guest.split("/"):
            raise TandemError(f"--add: guest path '{self.guest}' may not contain '..'")
        normal = posixpath.normpath(self.guest)
        if normal == "/":
            raise TandemError("--add: the guest path may not be / itself")
        for reserved in RESERVED:
            if normal == reserved or normal.startswith(reserved + "/"):
                raise TandemError(
                    f"--add: {self.guest}: {reserved} is the harness's (exec's scripts)"
                )

    def entries(self) -> dict[str, tuple[int, bytes]]:
        """The archive entries: the file (its permission bits kept), or the
        directory and everything below it; symbolic links as links."""
        self.check()
        root = posixpath.normpath(self.guest).lstrip("/")
        out: dict[str, tuple[int, bytes]] = {}

        def add(host: Path, guest: str) -> None:
            try:
                st = host.lstat()
            except OSError as e:
                raise TandemError(f"--add: {host}: {e.strerror}") from None
            perm = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[guest] = (stat.S_IFLNK | 0o777, str(host.readlink()).encode())
            elif stat.S_ISDIR(st.st_mode):
                out[guest] = (stat.S_IFDIR | perm, b"")
                try:
                    children = sorted(host.iterdir())
                except OSError as e:
                    raise TandemError(f"--add: {host}: {e.strerror}") from None
                for child in children:
                    add(child, f"{guest}/{child.name}")
            elif stat.S_ISREG(st.st_mode):
                # The archive's owner is root: a set-ID bit would make the
                # file run as root for any process in the guest. (A
                # folder's set-group-ID only gives new files its group,
                # root's: kept.)
                if perm & (stat.S_ISUID | stat.S_ISGID):
                    raise TandemError(
                        f"--add: {host}: set-user-ID or set-group-ID (mode {perm:04o}), refused: "
                        "the guest would run it as root (chmod ug-s, or copy it)"
                    )
                try:
                    out[guest] = (stat.S_IFREG | perm, host.read_bytes())
                except OSError as e:
                    raise TandemError(f"--add: {host}: {e.strerror}") from None
            else:
                raise TandemError(
                    f"--add: {host} is not a file, directory or link (a device, socket or pipe)"
                )

        # The path given is followed if it is a link; links below it are kept.
        add(self.host.resolve() if self.host.is_symlink() else self.host, root)
        return out


def added(paths: tuple[Added, ...]) -> bytes:
    """One archive of every `--add` (a later one wins where two overlap).
    No path may go through a link one of them made: the kernel follows
    it when it unpacks the path (init/initramfs.c opens the whole path),
    so a link to /tandem and a file below it would write the harness's
    own files, which Added.check refuses by name."""
    entries: dict[str, tuple[int, bytes]] = {}
    for a in paths:
        entries.update(a.entries())
    links = {
        p: data.decode(errors="replace")
        for p, (mode, data) in entries.items()
        if stat.S_ISLNK(mode)
    }
    for path in entries:
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in links:
                raise TandemError(
                    f"--add: /{path} goes through /{parent}, a link (to {links[parent]}) "
                    "another --add made, refused: the kernel would follow it when it unpacks "
                    "the file, anywhere, /tandem too (give the path without the link)"
                )
    return archive_entries(entries)
