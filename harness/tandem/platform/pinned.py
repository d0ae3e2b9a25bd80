"""A run's inputs pinned when its provenance is taken: every boot of the run
reads its firmware, Linux image and initramfs through `read`, which refuses
bytes whose digest is not the one the run recorded.

Why: a run lasts hours, and its provenance is taken once, at its start. A
rebuild in the meantime (in this checkout, or in another one whose build
this one links to) would otherwise boot later boots from other images under
the first ones' digests, and nothing in the results would show it
(docs/harness.md, "Each boot boots what the provenance names"). The bytes
checked are the bytes the boot is made of: the harness reads all three
into the boot's secure flash, which QEMU starts from, so there is no window
between the check and the use."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError

# Digests of what is not there (provenance records it so, and a boot
# refuses it: the file did not exist when the run started).
MISSING = "missing"


def digest(data: bytes) -> str:
    """The digest provenance records: SHA-256's first 16 hex digits."""
    return hashlib.sha256(data).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """`digest` of a file's bytes, or MISSING."""
    try:
        return digest(path.read_bytes())
    except OSError:
        return MISSING


@dataclass(frozen=True)
class Pinned:
    """The digest of each input file of a run, by its resolved path, as
    read when the run's provenance was taken (a tuple: BootOptions stay
    hashable)."""

    digests: tuple[tuple[str, str], ...]

    def expected(self, path: Path) -> str:
        """The digest pinned for `path`; an error for a file the run did not
        pin (a boot reading an input its provenance does not name)."""
        key = str(path.resolve())
        for name, value in self.digests:
            if name == key:
                return value
        raise TandemError(
            f"{path}: not among the inputs this run's provenance pinned "
            f"({', '.join(name for name, _ in self.digests)})"
        )


def pin(paths: Iterable[Path]) -> Pinned:
    """Reads each file once and pins its digest."""
    keys = sorted({str(p.resolve()) for p in paths})
    return Pinned(tuple((key, file_digest(Path(key))) for key in keys))


def read(path: Path, pinned: Pinned | None) -> bytes:
    """The bytes of `path`; with `pinned`, an error unless their digest is
    the one the run pinned for it."""
    data = path.read_bytes()
    if pinned is None:
        return data
    expected = pinned.expected(path)
    found = digest(data)
    if found != expected:
        raise TandemError(
            f"{path} changed since this run started (digest {expected} when its provenance "
            f"was taken, {found} now): its boots would run another image than the one the "
            "run records, so the run stops here. Rebuild nothing while a run measures, and "
            'run from a checkout with a build of its own (docs/harness.md, "Each boot boots '
            'what the provenance names")'
        )
    return data
