"""Boot log directories (build/logs/<time>/): made fresh for each boot,
private to their owner, held as in use (a locked file) while the boot runs,
whichever process runs it, and pruned beyond KEEP_LOGS unless in use."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import time
from pathlib import Path
from typing import BinaryIO

from tandem.platform.paths import LOGS

# Boot log directories kept under build/logs (oldest removed first).
KEEP_LOGS = 100
# In a boot's log directory: a file locked (flock) while the boot runs, so
# that pruning leaves the directory alone, whichever process runs the boot.
IN_USE = ".in-use"


def in_use(log_dir: Path) -> bool:
    """Whether a running boot, of this process or another, holds the log
    directory (its IN_USE file locked)."""
    try:
        f = (log_dir / IN_USE).open("rb")
    except FileNotFoundError:
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            # A file system without locks (some cluster mounts): keep what
            # cannot be checked.
            return True
    return False


def new_log_dir() -> tuple[Path, BinaryIO]:
    """A fresh build/logs/<time> directory, locked as in use until
    the returned file is closed; old ones beyond KEEP_LOGS go unless a
    running boot holds them (boots side by side, `--jobs`, or another
    process's)."""
    LOGS.mkdir(parents=True, exist_ok=True)
    old = sorted(p for p in LOGS.iterdir() if p.is_dir())
    for stale in old[: max(0, len(old) - KEEP_LOGS + 1)]:
        if not in_use(stale):
            shutil.rmtree(stale, ignore_errors=True)
    while True:
        # Named by the time to the nanosecond, so that names sort by age;
        # mkdir fails for a name another boot took, and the next try
        # takes a later time.
        now = time.time_ns()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now // 10**9))
        run_dir = LOGS / f"{stamp}-{now % 10**9:09d}"
        try:
            # Only its owner may enter: it holds the secure console's log
            # and, with --gdb, the socket of QEMU's gdb stub, whose
            # `monitor` command reaches QEMU's monitor (gdb.py).
            run_dir.mkdir(mode=0o700)
        except FileExistsError:
            continue
        break
    lock = (run_dir / IN_USE).open("wb")
    # On a file system without locks (some cluster mounts) pruning keeps
    # the directory anyway: in_use cannot lock it either.
    with contextlib.suppress(OSError):
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return run_dir, lock
