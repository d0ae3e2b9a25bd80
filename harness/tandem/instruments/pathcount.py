"""E3's dispatch path counted in each core's own instructions.

In virtual timing QEMU runs the vCPUs one at a time, round robin, and the
virtual clock counts every vCPU's instructions. A path timed with that clock
therefore also counts whatever other vCPUs ran while its own waited for its
turn, and a path spanning two cores (a migrate dispatch) is exposed twice.

The QEMU plugin `tandem-pathcount` (qemu/plugins/pathcount) counts each vCPU's
own instructions and logs the count whenever a vCPU executes a marker
address. The markers are the first instructions of the RTOS and monitor
functions below, found by symbol in the firmware ELFs; this module pairs the
hits into dispatch paths:

- local (the task starts on the core that requested it): the requesting
  core's instructions from the request to the task's first instruction;
- remote (migrate moved it): the requesting core's instructions from the
  request to its reschedule SGI, plus the target core's from its first entry
  into EL3 or the RTOS after that SGI to the task's first instruction. The
  target part so includes the monitor's world switch when Linux was running
  there. Of several SGIs the requesting core sent, the pairing that gives the
  longest path is taken, so a remote path is an upper bound.

A remote start with no such pairing (the target core entered before the
SGI was sent, or not at all: it was already in the RTOS and found the task
queued) is no SGI path; it is counted apart, not timed. Per-core timing
with a memory model shows them: a core's stalls move its turns.

What the SGI's delivery takes (a GIC's latency on hardware, another vCPU's
turn under QEMU) is not in either part. One instruction is one nanosecond
of virtual time (`-icount shift=0`).
"""

from __future__ import annotations

import csv
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import qemu_command
from tandem.platform.paths import BUILD
from tandem.platform.timing import Timing

PLUGIN = BUILD / "qemu" / "libtandem_pathcount.so"
RTOS_ELF = BUILD / "firmware" / "tandem-rtos.elf"
MONITOR_ELF = BUILD / "firmware" / "tandem-monitor.elf"
NM = "aarch64-linux-gnu-nm"

REQUESTED = "requested"
SENT = "sent"
STARTED = "started"
# A core's entries into the secure side: the monitor's vectors for an
# interrupt taken from Linux, the RTOS's for one taken in the RTOS.
ENTRIES = ("monitor_fiq", "monitor_irq", "rtos_irq")
# Marker -> (which firmware, symbol as `nm -C` prints it).
MARKERS = {
    REQUESTED: ("rtos", "tandem_rtos::periodic::stamp_request"),
    SENT: ("rtos", "tandem_rtos_firmware::stats::reschedule_sent"),
    "rtos_irq": ("rtos", "irq_entry"),
    "monitor_fiq": ("monitor", "lower_fiq"),
    "monitor_irq": ("monitor", "lower_irq"),
    STARTED: ("rtos", "tandem_rtos::periodic::run_periodic"),
}
END = "end"


@dataclass(frozen=True)
class Symbols:
    """A firmware ELF's code symbols: addresses (and sizes) by demangled
    name, and the span of its code."""

    addresses: dict[str, list[int]]
    sizes: dict[int, int]
    code: tuple[int, int]


def symbols(elf: Path) -> Symbols:
    """The code symbols of `elf` (from `nm`)."""
    if not elf.exists():
        raise TandemError(f"{elf} is missing: run `make build`")
    try:
        listing = subprocess.run(
            [NM, "-C", "-S", "--defined-only", str(elf)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise TandemError(f"cannot list the symbols of {elf}: {e}") from None
    return parse_nm(listing, str(elf))


def parse_nm(listing: str, what: str) -> Symbols:
    """`nm -C -S` output: code symbols (type t or T) by name, and the span
    from the first code symbol to the end of the last."""
    addresses: dict[str, list[int]] = {}
    sizes: dict[int, int] = {}
    start, end = None, 0
    for line in listing.splitlines():
        fields = line.split(maxsplit=3)
        # ADDRESS [SIZE] TYPE NAME (NAME may hold spaces once demangled).
        if len(fields) >= 3 and len(fields[1]) == 1:
            fields = [fields[0], "0", fields[1], line.split(maxsplit=2)[2]]
        if len(fields) != 4 or fields[2] not in ("t", "T"):
            continue
        try:
            address, size = int(fields[0], 16), int(fields[1], 16)
        except ValueError:
            continue
        addresses.setdefault(fields[3], []).append(address)
        sizes[address] = max(size, sizes.get(address, 0))
        start = address if start is None else min(start, address)
        # A label without a size still holds one instruction.
        end = max(end, address + max(size, 4))
    if start is None:
        raise TandemError(f"{what} has no code symbols")
    return Symbols(addresses, sizes, (start, end))


def marker_addresses(rtos: Symbols, monitor: Symbols) -> dict[str, int]:
    """Each marker's address; an error if a symbol is missing or ambiguous
    (renamed or inlined code would otherwise go unmeasured)."""
    firmware = {"rtos": rtos, "monitor": monitor}
    out: dict[str, int] = {}
    for marker, (part, symbol) in MARKERS.items():
        found = firmware[part].addresses.get(symbol, [])
        if len(found) != 1:
            how = "missing" if not found else f"defined {len(found)} times"
            raise TandemError(
                f"path marker {marker}: symbol {symbol} is {how} in the {part} firmware "
                "(keep it a function of its own, see tandem/instruments/pathcount.py)"
            )
        out[marker] = found[0]
    return out


def counted_code(rtos: Symbols, monitor: Symbols) -> list[tuple[int, int]]:
    """The code whose instructions the plugin counts: all of the firmware
    but the task body that a path ends by entering. A path never runs it,
    and its busy loop would cost most of the counting's time (the plugin
    reads a register at each block it counts)."""
    body = marker_addresses(rtos, monitor)[STARTED]
    size = rtos.sizes.get(body, 0)
    start, end = rtos.code
    if size <= 4:
        raise TandemError(f"the {STARTED} marker's function has no size in the RTOS ELF")
    # The first instruction (and the block it starts) stays counted: the
    # plugin counts blocks by where they start.
    return [monitor.code, (start, body + 4), (body + size, end)]


def qemu_args(csv_path: Path, timing: str) -> tuple[str, ...]:
    """QEMU's arguments to count the dispatch path into `csv_path`."""
    if not Timing(timing).deterministic:
        # Under multi-threaded TCG the hits of different vCPUs would not be
        # logged in the order they ran.
        raise TandemError(f"the path count needs virtual or per-core timing, not {timing}")
    if not PLUGIN.exists():
        raise TandemError(f"{PLUGIN} is missing: run `make build`")
    rtos, monitor = symbols(RTOS_ELF), symbols(MONITOR_ELF)
    addresses = marker_addresses(rtos, monitor)
    args = [f"out={csv_path}"]
    args += [f"count={start:#x}-{end:#x}" for start, end in counted_code(rtos, monitor)]
    args += [f"mark={name}@{address:#x}" for name, address in addresses.items()]
    return qemu_command.plugin_args(PLUGIN, args)


@dataclass(frozen=True)
class Hit:
    """A core executed a marker, having executed `count` counted (firmware)
    instructions before."""

    core: int
    marker: str
    count: int


def read_hits(path: Path) -> list[Hit]:
    """The plugin's CSV, checked: known markers, counts that never go back on
    a core, and the end line the plugin writes as QEMU exits."""
    hits: list[Hit] = []
    last: dict[int, int] = {}
    try:
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise TandemError(f"cannot read the path count {path}: {e}") from None
    if not rows or rows[0] != ["core", "marker", "instructions"]:
        raise TandemError(f"{path}: not a path count (header {rows[0] if rows else None})")
    if rows[-1] != ["-1", END, "0"]:
        raise TandemError(f"{path}: incomplete (QEMU did not exit cleanly, or a write failed)")
    for n, row in enumerate(rows[1:-1], start=2):
        if len(row) != 3 or row[1] not in MARKERS:
            raise TandemError(f"{path}:{n}: bad row {row}")
        try:
            core, count = int(row[0]), int(row[2])
        except ValueError:
            raise TandemError(f"{path}:{n}: bad row {row}") from None
        if core < 0 or count < last.get(core, 0):
            raise TandemError(f"{path}:{n}: core {core}'s count goes back ({row})")
        last[core] = count
        hits.append(Hit(core, row[1], count))
    return hits


@dataclass(frozen=True)
class DispatchPath:
    """One timed dispatch: instructions on the requesting core and, for a
    remote one, on the core the task started on."""

    requesting_core: int
    task_core: int
    requesting_part: int
    task_part: int

    @property
    def remote(self) -> bool:
        return self.requesting_core != self.task_core

    @property
    def instructions(self) -> int:
        return self.requesting_part + self.task_part


@dataclass
class _Pending:
    core: int
    requested: int
    # (index in the hit list, count) of each SGI sent since the request.
    sent: list[tuple[int, int]]
    # Per core, (index, count) of each entry since the request.
    entries: dict[int, list[tuple[int, int]]]


@dataclass(frozen=True)
class Dispatches:
    """The dispatch paths of a boot's hits; how many requests found no start
    (a later request, or the end, came first); how many remote starts had no
    SGI from the requesting core followed by an entry on the target core."""

    paths: list[DispatchPath]
    unmatched: int
    without_sgi: int


def dispatch_paths(hits: list[Hit]) -> Dispatches:
    """The dispatch paths in `hits`, in execution order (Dispatches)."""
    paths: list[DispatchPath] = []
    unmatched = without_sgi = 0
    pending: _Pending | None = None
    for index, hit in enumerate(hits):
        if hit.marker == REQUESTED:
            unmatched += pending is not None
            pending = _Pending(hit.core, hit.count, [], {})
        elif pending is None:
            continue
        elif hit.marker == SENT:
            if hit.core == pending.core:
                pending.sent.append((index, hit.count))
        elif hit.marker in ENTRIES:
            pending.entries.setdefault(hit.core, []).append((index, hit.count))
        elif hit.marker == STARTED:
            path = _close(pending, hit)
            if path is None:
                without_sgi += 1
            else:
                paths.append(path)
            pending = None
    return Dispatches(paths, unmatched + (pending is not None), without_sgi)


def _close(pending: _Pending, start: Hit) -> DispatchPath | None:
    if start.core == pending.core:
        return DispatchPath(pending.core, start.core, start.count - pending.requested, 0)
    best: tuple[int, int] | None = None
    for sent_index, sent in pending.sent:
        entry = next((c for i, c in pending.entries.get(start.core, []) if i > sent_index), None)
        if entry is None:
            continue
        parts = (sent - pending.requested, start.count - entry)
        if best is None or sum(parts) > sum(best):
            best = parts
    if best is None:
        return None
    return DispatchPath(pending.core, start.core, *best)


def summarize(paths: list[DispatchPath]) -> dict[str, object]:
    """Count, min, median and max instructions of local and remote paths,
    and of the two parts of the remote ones."""

    def stats(values: list[int]) -> dict[str, object]:
        if not values:
            return {"samples": 0}
        return {
            "samples": len(values),
            "min": min(values),
            "median": statistics.median(values),
            "max": max(values),
        }

    local = [p.instructions for p in paths if not p.remote]
    remote = [p for p in paths if p.remote]
    return {
        "local": stats(local),
        "remote": stats([p.instructions for p in remote]),
        "remote_requesting_part": stats([p.requesting_part for p in remote]),
        "remote_task_part": stats([p.task_part for p in remote]),
        "all": stats(local + [p.instructions for p in remote]),
    }
