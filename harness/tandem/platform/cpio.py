"""A minimal writer for the cpio "newc" format the kernel unpacks.

Used to append a second archive (the command script of `tandem exec`) to the
initramfs: the kernel unpacks concatenated archives in order.
"""

from __future__ import annotations

import stat


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


def archive(files: dict[str, tuple[int, bytes]]) -> bytes:
    """An archive of `path -> (permission bits, content)`; parent directories
    are added. Paths are relative (no leading slash)."""
    out = bytearray()
    ino = 1
    dirs: set[str] = set()
    for path in sorted(files):
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"cpio path must be relative and inside the archive: {path}")
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                out += _entry(ino, d, stat.S_IFDIR | 0o755, b"")
                ino += 1
        perm, data = files[path]
        out += _entry(ino, path, stat.S_IFREG | (perm & 0o7777), data)
        ino += 1
    out += _entry(0, "TRAILER!!!", 0, b"")
    return bytes(out)
