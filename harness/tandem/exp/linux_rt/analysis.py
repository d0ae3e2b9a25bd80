"""The `linux-rt` measurements of one run, cell by cell and repetition by
repetition: worst cases with their median and spread over repetitions, and
what the worst samples coincide with (the memory timeline, the counters).

The memory timeline has a tick every 20 ms: uptime (10 ms resolution),
MemFree, Shmem, and how many loops cyclictest's thread had done. A sample
lies in the tick interval in which its loop was done; the interval is
"freeing" when MemFree grew over it: more pages went back to the zone's
free lists than came out, which is when CPUs hand batches of pages back to
the zone with interrupts off. A sample's time is counted from the start of
the cell's loads.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from tandem.exp.linux_rt.script import Cell
from tandem.exp.linux_rt.spec import PERIOD_US
from tandem.instruments.measure import Latency, merged

# A sample this late (µs) is in the tail: over four times the typical 3-5 µs.
TAIL_US = 20
# The counters a row keeps per repetition (increase while cyclictest ran).
COUNTERS = (
    "pgfree",
    "nr_dirtied",
    "nr_written",
    "vda_reads",
    "vda_writes",
    "vda_sectors_written",
    "virtio_irqs",
    "block_softirqs",
)


def _num(d: dict[str, object], key: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"counter {key} is not a number: {v!r}")
    return float(v)


@dataclass
class Measured:
    """One cell of one boot: its distribution, every sample, the memory
    timeline (uptime s, MemFree kB, Shmem kB, cyclictest's loops or -1)
    and the counters."""

    cores: int
    rep: int
    cell: Cell
    latency: Latency
    series: list[int]
    memory: list[tuple[float, int, int, int]]
    counters: dict[str, object] = field(default_factory=dict)
    # The boot's Linux seed (BootOptions.linux_seed).
    seed: int = 0

    @property
    def load_start_s(self) -> float:
        return _num(self.counters, "load_start_s")

    def _intervals(self) -> list[tuple[int, int, float, float, bool]]:
        """Tick intervals while cyclictest ran: (first loop, end loop, start
        s, end s, MemFree grew), loops counted from 0."""
        out = []
        for a, b in itertools.pairwise(self.memory):
            if a[3] < 0 or b[3] <= a[3]:
                continue
            out.append(
                (a[3], b[3], a[0] - self.load_start_s, b[0] - self.load_start_s, b[1] > a[1])
            )
        return out

    def sample_time(self, i: int) -> float:
        """Seconds from the loads' start to sample `i`'s wake-up, from the
        timeline (else from cyclictest's start, one period per loop)."""
        for lo, hi, s, e, _ in self._intervals():
            if lo <= i < hi:
                return s + (e - s) * (i - lo) / (hi - lo)
        return _num(self.counters, "start_s") - self.load_start_s + (i + 1) * PERIOD_US / 1e6

    def tail_samples(self) -> list[tuple[int, int, float, bool]]:
        """Samples >= TAIL_US: (loop, µs, s from the loads' start, done in a
        freeing interval)."""
        spans = self._intervals()
        out = []
        for i, us in enumerate(self.series):
            if us < TAIL_US:
                continue
            freeing = any(lo <= i < hi and grew for lo, hi, _, _, grew in spans)
            out.append((i, us, self.sample_time(i), freeing))
        return out

    def tail(self) -> dict[str, float]:
        """How many samples are >= TAIL_US, how many of them were done in
        freeing intervals, and the share of the timed loops that were."""
        spans = self._intervals()
        late = self.tail_samples()
        loops = sum(hi - lo for lo, hi, _, _, _ in spans)
        freeing = sum(hi - lo for lo, hi, _, _, grew in spans if grew)
        return {
            "tail": len(late),
            "tail_freeing": sum(1 for *_, f in late if f),
            "freeing_share": round(freeing / loops, 3) if loops else 0.0,
        }


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "low": round(min(values), 3),
        "high": round(max(values), 3),
    }


def _in_run_order(ms: list[Measured]) -> list[Measured]:
    """A cell's boots seed by seed (in the order the seeds first come),
    each seed's in repetition order: the order of the runs (exp/common.runs)."""
    seeds = list(dict.fromkeys(m.seed for m in ms))
    return sorted(ms, key=lambda m: (seeds.index(m.seed), m.rep))


def _rep_columns(ms: list[Measured]) -> dict[str, object]:
    """Per-boot worst cases and percentiles (with each boot's Linux seed,
    `run_seeds`), their median and range, the tail's coincidence with
    freeing, and the counters, in run order (`_in_run_order`)."""
    ms = _in_run_order(ms)
    maxes = [m.latency.max_us for m in ms]
    p99 = [m.latency.percentile(99) for m in ms]
    p999 = [m.latency.percentile(99.9) for m in ms]
    tails = [m.tail() for m in ms]
    mx, q99, q999 = _spread(maxes), _spread(p99), _spread(p999)
    return {
        "reps": len(ms),
        "rep_max_us": [round(x, 3) for x in maxes],
        "run_seeds": [m.seed for m in ms],
        "rep_p99_us": [round(x, 3) for x in p99],
        "rep_p999_us": [round(x, 3) for x in p999],
        "max_median_us": mx["median"],
        "max_low_us": mx["low"],
        "max_high_us": mx["high"],
        "p99_median_us": q99["median"],
        "p999_median_us": q999["median"],
        "p999_low_us": q999["low"],
        "p999_high_us": q999["high"],
        "rep_tail_samples": [int(t["tail"]) for t in tails],
        "rep_tail_freeing": [int(t["tail_freeing"]) for t in tails],
        "rep_freeing_share": [t["freeing_share"] for t in tails],
        "pcp_high": sorted({int(_num(m.counters, "pcp_high")) for m in ms}),
        "pcp_batch": sorted({int(_num(m.counters, "pcp_batch")) for m in ms}),
        "cpus": sorted({str(m.counters.get("cpus")) for m in ms}),
        "rep_counters": [{k: int(_num(m.counters, k)) for k in COUNTERS} for m in ms],
    }


def grid_rows(
    grid: list[Measured],
) -> tuple[list[dict[str, object]], list[tuple[tuple[int, bool, bool], Latency]]]:
    """The paper's grid: one row per (cores, affinity, I/O) with the
    repetitions merged and each repetition's figures; and the merged
    distributions for histograms.csv."""
    cells: dict[tuple[int, bool, bool], list[Measured]] = {}
    for m in grid:
        cells.setdefault((m.cores, m.cell.affinity, m.cell.io), []).append(m)
    rows: list[dict[str, object]] = []
    dists = []
    for (cores, aff, io), ms in sorted(cells.items()):
        cell = merged([m.latency for m in _in_run_order(ms)])
        rows.append(
            {
                "cores": cores,
                "affinity": aff,
                "io_load": io,
                "samples": cell.samples,
                "min_us": round(cell.min_us, 3),
                "avg_us": round(cell.avg_us, 3),
                "p99_us": round(cell.percentile(99), 3),
                "max_us": round(cell.max_us, 3),
                "beyond_histogram": cell.overflow,
                **_rep_columns(ms),
            }
        )
        dists.append(((cores, aff, io), cell))
    return rows, dists


def cause_rows(cause: list[Measured], grid: list[Measured]) -> list[dict[str, object]]:
    """The cause part: per core count and page-list high mark, the worst
    case over repetitions, beside the same core count's default cell
    (affinity off, no I/O) of the grid."""
    groups: dict[tuple[int, int], list[Measured]] = {}
    for m in cause:
        groups.setdefault((m.cores, m.cell.pcp_cpus), []).append(m)
    for m in grid:
        if not m.cell.affinity and not m.cell.io:
            groups.setdefault((m.cores, 0), []).append(m)
    if not cause:
        return []
    rows: list[dict[str, object]] = []
    for (cores, pcp_cpus), ms in sorted(groups.items()):
        cell = merged([m.latency for m in ms])
        rows.append(
            {
                "cores": cores,
                "pcp_as_cores": pcp_cpus or cores,
                "pcp_default": pcp_cpus == 0,
                "samples": cell.samples,
                "p99_us": round(cell.percentile(99), 3),
                "max_us": round(cell.max_us, 3),
                **_rep_columns(ms),
            }
        )
    return rows
