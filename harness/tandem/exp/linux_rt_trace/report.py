"""The `linux-rt-trace` experiment's report.md: per core count, the paths
where the longest sections ended, and the longest one's stack."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import num, read_summary, run_id, summary_list
from tandem.exp.linux_rt_trace.sections import Section
from tandem.exp.linux_rt_trace.spec import NAME, WINDOW_US


@dataclass
class Boot:
    """One core count's trace."""

    cores: int
    cyclictest_us: dict[str, float]
    windows: list[Section]


def boots_of(summary: dict[str, object]) -> list[Boot]:
    """The run's boots, from its summary."""
    out = []
    for b in summary_list(summary, "boots"):
        ct, windows = b["cyclictest_us"], b["windows"]
        if not isinstance(ct, dict) or not isinstance(windows, list):
            raise TandemError(f"summary of '{NAME}': a boot without cyclictest_us and windows")
        sections = []
        for w in windows:
            w = dict(w)
            w["stack"] = tuple(w.get("stack", ()))
            sections.append(Section(**w))
        out.append(Boot(int(str(b["cores"])), {k: float(v) for k, v in ct.items()}, sections))
    return out


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    return markdown(
        boots_of(summary),
        run_id(run_dir),
        str(summary["timing_described"]),
        int(num(summary, "samples")),
        bool(summary["io_load"]),
        command,
    )


def markdown(boots: list[Boot], run: str, timing: str, samples: int, io: bool, command: str) -> str:
    """The report of traced boots."""
    out = [
        "# linux-rt-trace: the longest interrupt- or preemption-off sections under linux-rt's load",
        "",
        f"Run `{run}`, **{timing}**, on the "
        "latency-tracing kernel (`make trace-kernel`: Tandem's kernel plus ftrace's "
        "preemptirqsoff tracer, function tracing off), Linux alone, the kernel load of "
        f"`linux-rt`{' and its disk I/O load' if io else ''} on every core "
        f"and cyclictest ({samples} loops of 1 ms, unpinned). Every "
        f"{WINDOW_US // 1000} ms the longest section since the last window "
        "(interrupts or preemption off, on any CPU), where it started and ended, and the "
        "stack where it ended. The tracer lengthens every such section and cyclictest's "
        f"latency; the paths are what counts. Reproduce: `make trace-kernel && {command}`.",
        "",
    ]
    for b in boots:
        ct = b.cyclictest_us
        paths: dict[str, list[tuple[int, bool]]] = {}
        for w in b.windows:
            key = " < ".join(w.stack[:5]) or f"{w.started} .. {w.ended}"
            paths.setdefault(key, []).append((w.latency_us, w.cpu == w.cyclictest_cpu))
        out += [
            f"## {b.cores} core(s)",
            "",
            f"cyclictest under the tracer: min {ct['min']}, avg {ct['avg']}, "
            f"max {ct['max']} µs. {len(b.windows)} windows.",
            "",
            "| path where the section ended (innermost first) | windows | on cyclictest's CPU "
            "| longest µs | longest on cyclictest's CPU µs |",
            "|---|---|---|---|---|",
        ]
        for key, lats in sorted(paths.items(), key=lambda kv: -max(kv[1])[0]):
            mine = [us for us, here in lats if here]
            out.append(
                f"| `{key}` | {len(lats)} | {len(mine)} | {max(us for us, _ in lats)} | "
                f"{max(mine) if mine else '-'} |"
            )
        for what, among in (
            ("Longest", b.windows),
            ("Longest on cyclictest's CPU", [w for w in b.windows if w.cpu == w.cyclictest_cpu]),
        ):
            if not among:
                continue
            w = max(among, key=lambda s: s.latency_us)
            out += [
                "",
                f"{what}: {w.latency_us} µs on CPU {w.cpu} (cyclictest on CPU "
                f"{w.cyclictest_cpu}) in {w.task}, from `{w.started}` to `{w.ended}`, at "
                f"{w.uptime_s:.2f} s uptime (MemFree {w.memfree_kib // 1024} MiB); stack:",
                "",
                "```",
                *w.stack,
                "```",
            ]
        out.append("")
    return "\n".join(out) + "\n"
