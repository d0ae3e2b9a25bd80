"""Reading the `latency` experiment's boot: the two `tandem-lat report`
lines (one per phase) and the @@COUNT lines around the phases."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from tandem.errors import TandemError
from tandem.exp.latency.spec import PHASES

# phase -> "core" or "cpu" -> its number -> the values counted.
Counts = dict[str, dict[str, dict[str, list[int]]]]


def reports(lines: Sequence[str], where: str) -> list[dict[str, object]]:
    """The phases' `tandem-lat report` JSON, the script's last lines, in
    PHASES' order."""
    if len(lines) < len(PHASES):
        raise TandemError(f"{where}: {len(lines)} output lines, not the phases' reports")
    out = []
    for line in lines[-len(PHASES) :]:
        try:
            report = json.loads(line)
        except ValueError:
            raise TandemError(f"{where}: not a tandem-lat report: {line[:80]!r}") from None
        if not isinstance(report, dict):
            raise TandemError(f"{where}: not a tandem-lat report: {line[:80]!r}")
        out.append(report)
    return out


def read_counts(lines: Sequence[str]) -> Counts:
    """The script's @@COUNT lines."""
    out: Counts = {}
    for line in lines:
        words = line.split()
        if len(words) >= 5 and words[0] == "@@COUNT" and words[2] in ("core", "cpu"):
            out.setdefault(words[1], {}).setdefault(words[2], {})[words[3]] = [
                int(w) for w in words[4:]
            ]
    return out


def phase_counts(counts: Counts, before: str, after: str) -> dict[str, object]:
    """Per core, the world switches each way in a phase; per Linux CPU, its
    standby entries."""
    out: dict[str, object] = {}
    for kind, names in (("core", ("to_rtos", "to_linux")), ("cpu", ("standby_entries",))):
        a, b = counts.get(before, {}).get(kind, {}), counts.get(after, {}).get(kind, {})
        out[f"{kind}s"] = {
            n: dict(zip(names, (y - x for x, y in zip(a[n], b[n], strict=True)), strict=True))
            for n in sorted(b)
            if n in a
        }
    return out


def phase(load: str, report: Mapping[str, object]) -> dict[str, object]:
    """A phase's summary from its `tandem-lat report` (ns into µs)."""

    def us(key: str) -> float:
        value = report[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TandemError(f"latency: the {load} phase's {key} is {value!r}, not a number")
        return round(value / 1000, 3)

    return {
        "load": load,
        "samples": report["samples"],
        "min_us": us("min_ns"),
        "avg_us": us("avg_ns"),
        "max_us": us("max_ns"),
        "beyond_histogram": report["overflow"],
        "per_core": report["cores"],
    }


def phases(
    phase_reports: Sequence[Mapping[str, object]], counts: Counts
) -> list[dict[str, object]]:
    """Both phases from their reports, each with what was counted in it."""
    out = []
    before = "start"
    for load, report in zip(PHASES, phase_reports, strict=True):
        measured = phase(load, report)
        measured["counts"] = phase_counts(counts, before, load)
        out.append(measured)
        before = load
    return out


def check_samples(measured: Sequence[Mapping[str, object]], min_samples: int) -> None:
    """A phase with fewer than `min_samples` samples fails the run."""
    for p in measured:
        samples = p["samples"]
        if not isinstance(samples, int) or samples < min_samples:
            raise TandemError(
                f"latency: only {samples} samples with Linux {p['load']} (want {min_samples}); "
                "raise idle_seconds or hackbench_loops (--idle-seconds, --hackbench-loops)"
            )


def histogram_rows(reports_by_load: Sequence[tuple[str, Mapping[str, object]]]) -> list[str]:
    """histograms.csv's lines: load, bucket's latency in ns, count."""
    out = ["load,latency_ns,count"]
    for load, report in reports_by_load:
        histogram = report["histogram"]
        if not isinstance(histogram, list):
            raise TandemError(f"latency: the {load} phase's report has no histogram")
        for ns, count in histogram:
            out.append(f"{load},{ns},{count}")
    return out
