"""`tandem bench memory`: Tandem's memory model checked against its own
profiles with guest microbenchmarks (`tandem-membench`, linux/tools).

Per profile, one boot (configuration `linux-only`, so no RTOS job shares
the caches, 4 cores, per-core timing) runs:

- a pointer chase on CPU 0 through sizes from 4 KiB to 8 MiB: the stall
  per load against the same chase with no model (the loop's own
  instructions) gives the L1, L2 and DRAM plateaus;
- the chase through 8 MiB on CPU 0 while 0..3 other CPUs stream through
  8 MiB each: contention on the shared bus;
- one load per page over P pages that are all one physical page (only the
  TLBs see P pages): the knees at the micro and main TLB's sizes;

and a boot without a model runs the same (the baseline, and what must stay
flat). Then `ctxsw` (the RTOS's protected tasks, paper 004) hands off
between two address spaces writing 64 pages each, with ASIDs and with a TLB
flush on every switch, with the `a53` profile: flush should cost about the
TLB refills the model charged.

The checks, fixed before any run (docs/harness.md, "The memory model"):
each plateau within 10 % of the profile's latency (L1, whose stall is 0:
within 10 % of the L2 or DRAM step); per streaming core, core 0's DRAM
latency grows by the bus service time within 10 % (a whole service time
only where each streaming core is always at the bus; both profiles are
judged), and not at all without a model (within 1 %);
the TLB knees at the configured sizes (within 2 entries: the main TLB also
holds the kernel's and the loop's own pages), the stall per load being,
as for the chase, the sweep with the model minus the one without at the
same page count; flush slower than asid by the refills' cost within 20 %.

Results: results/memory/<run-id>/ (summary.json, report.md, plateaus.png,
contention.png, tlb.png, raw.tar.xz).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tandem import pool, provenance
from tandem.errors import TandemError
from tandem.instruments.handoffs import guest_script as ctxsw_script
from tandem.instruments.handoffs import parse_record, per_switch
from tandem.platform import memmodel
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Ctxsw, load_config
from tandem.platform.paths import RESULTS
from tandem.platform.timing import PERCORE, Timing
from tandem.results import PartialRun, write_atomic

KIB, MIB = 1024, 1024 * 1024
CHASE_SIZES = (
    4 * KIB,
    8 * KIB,
    16 * KIB,
    24 * KIB,
    32 * KIB,
    48 * KIB,
    64 * KIB,
    128 * KIB,
    256 * KIB,
    384 * KIB,
    512 * KIB,
    768 * KIB,
    1 * MIB,
    2 * MIB,
    4 * MIB,
    8 * MIB,
)
# A size well inside each level (physically indexed caches and random page
# placement: an L2-sized chase would meet set conflicts before L2 is full).
L1_SIZE, L2_SIZE, DRAM_SIZE = 16 * KIB, 128 * KIB, 8 * MIB
STREAMS = (0, 1, 2, 3)
CTXSW_PAGES = 64
# The acceptance's tolerances (module docstring).
PLATEAU_TOLERANCE = 0.10
CONTENTION_TOLERANCE = 0.10
FLAT_TOLERANCE = 0.01
KNEE_TOLERANCE = 2
CTXSW_TOLERANCE = 0.20
MARK = "@@MEMBENCH"
# `bench memory --quick`: chase loads per size, loads per TLB sweep point
# and ctxsw hand-offs per boot (the full run's: 300 000, 200 000, 20 000).
QUICK = (50_000, 20_000, 2_000)


@dataclass(frozen=True)
class Plateau:
    """A cache level's stall per load: measured at `size` against the profile's."""

    level: str
    size: int
    expected_ns: float
    measured_ns: float
    tolerance_ns: float

    @property
    def within_tolerance(self) -> bool:
        return abs(self.measured_ns - self.expected_ns) <= self.tolerance_ns


def line_bytes(profile: Mapping[str, object]) -> int:
    l1d = profile["l1d"]
    assert isinstance(l1d, dict)
    return int(l1d["line_bytes"])


def tlb_pages(profile: Mapping[str, object]) -> list[int]:
    """The page counts swept: every count around each TLB's size, sparser between."""
    tlb = profile["tlb"]
    assert isinstance(tlb, dict)
    micro, main = int(tlb["micro_data_entries"]), int(tlb["main_entries"])
    pages = {1, 2, 4}
    pages |= set(range(max(1, micro - 3), micro + 4))
    pages |= set(range(max(1, main - 4), main + 5))
    p = 16
    while p < 4 * main:
        pages.add(p)
        p *= 2
    pages |= {main * 3 // 4, main * 3 // 2, 2 * main, 4 * main}
    return sorted(pages)


def script(
    profile: Mapping[str, object], loads: int, tlb_loads: int, pages: Sequence[int] = ()
) -> str:
    """One boot's guest commands (the profile decides line size and TLB
    sweep; `pages`, if given, the TLB sweep's page counts)."""
    line = line_bytes(profile)
    sizes = " ".join(str(s) for s in CHASE_SIZES)
    swept = " ".join(str(p) for p in (pages or tlb_pages(profile)))
    contend = "\n".join(
        f"tandem-membench contend -l {line} -n {loads} {DRAM_SIZE} {k}" for k in STREAMS
    )
    return (
        "set -e\n"
        f"echo {MARK} chase\n"
        f"tandem-membench chase -l {line} -n {loads} {sizes}\n"
        f"echo {MARK} contend\n"
        f"{contend}\n"
        f"echo {MARK} tlb\n"
        f"tandem-membench tlb -n {tlb_loads} {swept}\n"
        f"echo {MARK} end\n"
    )


def parse(lines: Sequence[str], where: str) -> dict[str, dict[int, float]]:
    """Each measurement's ns per load: chase by bytes, contend by streams, tlb by pages."""
    out: dict[str, dict[int, float]] = {"chase": {}, "contend": {}, "tlb": {}}
    keys = {"chase": "bytes", "contend": "streams", "tlb": "pages"}
    for line in lines:
        f = line.split()
        if not f or f[0] not in keys:
            continue
        try:
            fields = dict(x.split("=", 1) for x in f[1:])
            loads, ns = int(fields["loads"]), int(fields["ns"])
            key = int(fields[keys[f[0]]])
        except (ValueError, KeyError):
            raise TandemError(f"{where}: cannot read '{line}'") from None
        if loads <= 0:
            raise TandemError(f"{where}: no loads in '{line}'")
        out[f[0]][key] = ns / loads
    for kind, values in out.items():
        if not values:
            raise TandemError(f"{where}: no {kind} measurements")
    return out


def read_probe(path: Path) -> dict[str, list[int]]:
    """The plugin's probe=vcpu counts: blocks and mismatched blocks per vCPU."""
    data = json.loads(path.read_text())
    if data.get("probe") != "vcpu":
        raise TandemError(f"{path}: not a vCPU probe's output")
    return {"blocks": list(data["blocks"]), "mismatched": list(data["mismatched"])}


def plateaus(
    profile: Mapping[str, object], with_model: Mapping[int, float], baseline: Mapping[int, float]
) -> list[Plateau]:
    """L1, L2 (if the profile has one) and DRAM: the chase's stall per load
    (with the model minus `baseline`, the same size's) against the profile."""
    l1d, l2 = profile["l1d"], profile["l2"]
    assert isinstance(l1d, dict)
    dram = float(str(profile["memory_latency_ns"]))
    levels: list[tuple[str, int, float]] = [("L1", L1_SIZE, float(l1d["hit_ns"]))]
    if isinstance(l2, dict):
        levels.append(("L2", L2_SIZE, float(l2["hit_ns"])))
    levels.append(("DRAM", DRAM_SIZE, dram))
    out = []
    for i, (level, size, expected) in enumerate(levels):
        # A 0 ns level: within 10 % of the next level's step.
        scale = expected if expected > 0 else levels[i + 1][2]
        out.append(
            Plateau(
                level,
                size,
                expected,
                round(with_model[size] - baseline[size], 3),
                PLATEAU_TOLERANCE * scale,
            )
        )
    return out


def knees(profile: Mapping[str, object], stall: Mapping[int, float]) -> dict[str, object]:
    """Where the TLB sweep's stall per load steps up: the largest page count
    before the micro TLB misses (stall below half a micro miss), and before
    the main TLB misses (stall above the micro plateau by under 0.1 ns)."""
    tlb = profile["tlb"]
    assert isinstance(tlb, dict)
    micro, main = int(tlb["micro_data_entries"]), int(tlb["main_entries"])
    micro_miss = float(tlb["main_hit_ns"])
    pages = sorted(stall)
    micro_knee = max((p for p in pages if stall[p] < micro_miss / 2), default=0)
    between = [stall[p] for p in pages if micro + 2 <= p <= main // 2]
    plateau = statistics.median(between) if between else micro_miss
    main_knee = max(
        (p for p in pages if p > micro_knee and stall[p] - plateau < 0.1), default=micro_knee
    )
    return {
        "micro_entries": micro,
        "micro_knee": micro_knee,
        "main_entries": main,
        "main_knee": main_knee,
        "micro_plateau_ns": round(plateau, 3),
        "micro_ok": abs(micro_knee - micro) <= KNEE_TOLERANCE,
        "main_ok": abs(main_knee - main) <= KNEE_TOLERANCE,
    }


def contention(
    profile: Mapping[str, object] | None, latency: Mapping[int, float]
) -> dict[str, object]:
    """Core 0's DRAM latency per streaming core: its growth per core
    against the bus service time (with a model), or flatness (without)."""
    base = latency[0]
    growth = {k: round((latency[k] - base) / k, 3) for k in latency if k > 0}
    out: dict[str, object] = {
        "latency_ns": {str(k): round(v, 3) for k, v in sorted(latency.items())},
        "growth_per_stream_ns": {str(k): v for k, v in sorted(growth.items())},
    }
    if profile is None:
        out["flat"] = all(abs(latency[k] - base) <= FLAT_TOLERANCE * base for k in latency)
    else:
        service = float(str(profile["bus_service_ns"]))
        out["bus_service_ns"] = service
        out["per_stream_ok"] = all(
            abs(g - service) <= CONTENTION_TOLERANCE * service for g in growth.values()
        )
    return out


@dataclass
class BootResult:
    """One membench boot: ns per load by measurement, and the model's counters."""

    profile: str | None
    ns: dict[str, dict[int, float]]
    stats: dict[str, object] | None
    boot_s: float


def membench_options(base: BootOptions, spec: str | None) -> BootOptions:
    """A membench boot's options: `base`'s board, timing and quantum, with
    memory profile `spec` (None: no model), configuration linux-only (no
    RTOS job shares the caches), 4 cores."""
    return replace(
        base, config=load_config("linux-only"), timing=replace(base.timing, memmodel=spec), smp=4
    )


def ctxsw_options(base: BootOptions, spec: str | None, mode: str, switches: int) -> BootOptions:
    """A ctxsw boot's options: the RTOS's protected tasks handing off on
    core 0 (`mode`: asid or flush), alone on one core, with profile `spec`."""
    return replace(
        base,
        config=load_config("tandem"),
        smp=1,
        timing=replace(base.timing, memmodel=spec),
        ctxsw=Ctxsw(core=0, mode=mode, pages=CTXSW_PAGES, switches=switches),
    )


def _membench_boot(
    base: BootOptions,
    spec: str | None,
    loads: int,
    tlb_loads: int,
    raw: Path,
    ctx: pool.Context,
    pages: Sequence[int] = (),
) -> BootResult:
    profile = memmodel.profile(spec or "a53")
    text = script(profile, loads, tlb_loads, pages)
    label = f"membench-{Path(spec).stem if spec else 'none'}"
    options = membench_options(base, spec)
    result = run_exec(options, text, timeout_s=3600, echo=_noter(ctx), cancel=ctx.cancel)
    _keep(raw, label, text, result)
    if result.status != 0:
        raise TandemError(f"{label}: membench exited with {result.status} ({result.console_log})")
    stats = memmodel.read_stats(result.console_log.parent)
    return BootResult(spec, parse(result.lines, label), stats, result.boot_s)


def _noter(ctx: pool.Context) -> Callable[[str], None]:
    def echo(line: str) -> None:
        f = line.split()
        if len(f) == 2 and f[0] == MARK:
            ctx.note(f[1])

    return echo


def _keep(raw: Path, label: str, text: str, result: ExecResult) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    (raw / f"{label}.sh").write_text(text)
    (raw / f"{label}.console.log").write_text(result.console_log.read_text(errors="replace"))
    stats = result.console_log.parent / memmodel.STATS_FILE
    if stats.exists():
        (raw / f"{label}.memmodel.json").write_text(stats.read_text())


@dataclass
class CtxswResult:
    """One ctxsw boot: ns per hand-off, and the RTOS core's model counters."""

    mode: str
    profile: str | None
    per_switch_ns: float
    translation_stall_ns: int | None
    main_tlb_misses: int | None


def _ctxsw_boot(
    base: BootOptions, spec: str | None, mode: str, switches: int, raw: Path, ctx: pool.Context
) -> CtxswResult:
    label = f"ctxsw-{mode}-{Path(spec).stem if spec else 'none'}"
    options = ctxsw_options(base, spec, mode, switches)
    text = ctxsw_script()
    result = run_exec(options, text, timeout_s=3600, cancel=ctx.cancel)
    _keep(raw, label, text, result)
    if result.status != 0:
        raise TandemError(f"{label}: exited with {result.status} ({result.console_log})")
    return handoffs(
        options, mode, spec, result.lines, memmodel.read_stats(result.console_log.parent)
    )


def handoffs(
    options: BootOptions,
    mode: str,
    spec: str | None,
    lines: Sequence[str],
    stats: Mapping[str, object] | None,
) -> CtxswResult:
    """One ctxsw boot's result, from the commands' output (the RTOS's record,
    in its counter's ticks) and the model's counters."""
    label = f"ctxsw-{mode}-{Path(spec).stem if spec else 'none'}"
    record = parse_record(list(lines), label)
    mean, _ = per_switch(record, options.board.counter_hz)
    core0: Mapping[str, object] = {}
    if stats is not None:
        cores = stats["cores"]
        assert isinstance(cores, list) and isinstance(cores[0], dict)
        core0 = cores[0]
    stall, misses = core0.get("translation_stall_ns"), core0.get("main_tlb_misses")
    return CtxswResult(
        mode,
        spec,
        round(mean, 2),
        stall if isinstance(stall, int) else None,
        misses if isinstance(misses, int) else None,
    )


def quick_plateaus(spec: str, quantum_ns: int, loads: int = 100_000) -> list[Plateau]:
    """`make test`'s check, one boot: the chase at the plateau sizes with the
    model, each against a 4 KiB chase in the same boot (an L1 hit, whose
    stall the profiles set to 0, like the loop's own instructions)."""
    profile = memmodel.profile(spec)
    sizes = [4 * KIB, L1_SIZE, DRAM_SIZE] + ([L2_SIZE] if profile["l2"] else [])
    text = f"tandem-membench chase -l {line_bytes(profile)} -n {loads} " + " ".join(
        str(s) for s in sizes
    )
    options = BootOptions(
        config=load_config("linux-only"), timing=Timing(PERCORE, quantum_ns, spec), smp=4
    )
    result = run_exec(options, text + "\n", timeout_s=900)
    if result.status != 0:
        raise TandemError(f"membench exited with {result.status} ({result.console_log})")
    chase = {}
    for line in result.lines:
        f = line.split()
        if f and f[0] == "chase":
            fields = dict(x.split("=", 1) for x in f[1:])
            chase[int(fields["bytes"])] = int(fields["ns"]) / int(fields["loads"])
    base = chase[4 * KIB]
    return plateaus(profile, chase, {s: base for s in chase})


def run(
    base: BootOptions,
    profiles: Sequence[str],
    loads: int,
    tlb_loads: int,
    switches: int,
    command: str,
    out_root: Path = RESULTS,
    jobs: int | None = None,
) -> Path:
    """Boots membench without a model and with each profile, and ctxsw's
    two modes with and without `a53`; writes results/memory/<run-id>/."""
    if base.timing.mode != PERCORE:
        raise TandemError("bench memory runs in per-core timing (the model needs it)")
    for name in profiles:
        memmodel.check_profile(name)
        memmodel.profile(name)
    run_dir = PartialRun(out_root / "memory")
    raw = run_dir.dir / "raw"
    specs: list[str | None] = [None, *profiles]

    # The boot without a model sweeps every profile's page counts: each
    # profile's TLB stall is its sweep minus that one at the same count.
    every_page = sorted({p for name in profiles for p in tlb_pages(memmodel.profile(name))})

    def membench(spec: str | None) -> pool.Task[object]:
        pages = every_page if spec is None else ()
        return pool.Task(
            f"membench-{spec or 'none'}",
            f"chase, contention, TLB sweep; memory model {spec or 'off'}",
            lambda ctx: _membench_boot(base, spec, loads, tlb_loads, raw, ctx, pages),
        )

    def handoffs(spec: str | None, mode: str) -> pool.Task[object]:
        return pool.Task(
            f"ctxsw-{mode}-{spec or 'none'}",
            f"ctxsw {mode}, {CTXSW_PAGES} pages; memory model {spec or 'off'}",
            lambda ctx: _ctxsw_boot(base, spec, mode, switches, raw, ctx),
        )

    handoff_cells = [(spec, mode) for spec in (None, "a53") for mode in ("asid", "flush")]
    tasks = [membench(spec) for spec in specs]
    tasks += [handoffs(spec, mode) for spec, mode in handoff_cells]
    timings = [replace(base.timing, memmodel=s) for s in specs]
    jobs = pool.choose_jobs(jobs, timings, "bench memory's")
    # Taken before the first boot, from every boot's options, as `tandem
    # exp run` does.
    stamp = provenance.collect(
        [membench_options(base, s) for s in specs]
        + [ctxsw_options(base, s, m, switches) for s, m in handoff_cells],
        jobs,
    )
    results = pool.run("bench memory", tasks, jobs)
    boots = [r for r in results if isinstance(r, BootResult)]
    ctxsw = [r for r in results if isinstance(r, CtxswResult)]
    summary = summarize(base, boots, ctxsw, loads, tlb_loads, switches, command, jobs)
    summary["run"] = run_dir.final.name
    summary["provenance"] = stamp
    write_atomic(run_dir.dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    plot(summary, run_dir.dir)
    write_atomic(run_dir.dir / "report.md", report(summary))
    return run_dir.finish()


def summarize(
    base: BootOptions,
    boots: Sequence[BootResult],
    ctxsw: Sequence[CtxswResult],
    loads: int,
    tlb_loads: int,
    switches: int,
    command: str,
    jobs: int,
) -> dict[str, object]:
    """The summary: every measurement, and each check's verdict."""
    off = next(b for b in boots if b.profile is None)
    profiles: dict[str, object] = {}
    for b in boots:
        if b.profile is None:
            continue
        profile = memmodel.profile(b.profile)
        # As for the chase: the loop's own ns per load (which falls with P,
        # its overhead spread over more pages) taken out at each P.
        tlb_stall = {p: round(v - off.ns["tlb"][p], 3) for p, v in b.ns["tlb"].items()}
        profiles[b.profile] = {
            "profile": profile,
            "chase_ns": {str(k): v for k, v in sorted(b.ns["chase"].items())},
            "chase_stall_ns": {
                str(k): round(v - off.ns["chase"][k], 3) for k, v in sorted(b.ns["chase"].items())
            },
            "plateaus": [
                p.__dict__ | {"ok": p.within_tolerance}
                for p in plateaus(profile, b.ns["chase"], off.ns["chase"])
            ],
            "contention": contention(profile, b.ns["contend"]),
            "tlb_stall_ns": {str(k): v for k, v in sorted(tlb_stall.items())},
            "tlb_knees": knees(profile, tlb_stall),
            "model": b.stats,
            "boot_s": b.boot_s,
        }
    ctx: dict[str, object] = {}
    for spec in {c.profile for c in ctxsw}:
        by = {c.mode: c for c in ctxsw if c.profile == spec}
        asid, flush = by["asid"], by["flush"]
        row: dict[str, object] = {
            "asid_ns": asid.per_switch_ns,
            "flush_ns": flush.per_switch_ns,
            "gap_ns": round(flush.per_switch_ns - asid.per_switch_ns, 2),
        }
        if asid.translation_stall_ns is not None and flush.translation_stall_ns is not None:
            refills = (flush.translation_stall_ns - asid.translation_stall_ns) / switches
            row["refills_ns"] = round(refills, 2)
            row["main_tlb_misses_per_switch"] = {
                "asid": round((asid.main_tlb_misses or 0) / switches, 2),
                "flush": round((flush.main_tlb_misses or 0) / switches, 2),
            }
            gap = float(str(row["gap_ns"]))
            row["ok"] = refills > 0 and abs(gap - refills) <= CTXSW_TOLERANCE * refills
        ctx[spec or "none"] = row
    return {
        "benchmark": "memory",
        "command": command,
        "timing": PERCORE,
        "quantum_ns": base.timing.quantum_ns,
        "causal": base.timing.causal,
        "loads": loads,
        "tlb_loads": tlb_loads,
        "ctxsw_switches": switches,
        "ctxsw_pages": CTXSW_PAGES,
        "jobs": jobs,
        "baseline": {
            "chase_ns": {str(k): v for k, v in sorted(off.ns["chase"].items())},
            "contention": contention(None, off.ns["contend"]),
            "boot_s": off.boot_s,
        },
        "profiles": profiles,
        "ctxsw": ctx,
        "memmodel_profiles": {spec: memmodel.provenance(spec) for spec in profiles},
    }


def plateau_agreement(
    a: Mapping[str, object], b: Mapping[str, object], tolerance_ns: float
) -> list[dict[str, object]]:
    """Every plateau two runs both measured (by profile and level), its
    stall per load in each, and whether they agree within `tolerance_ns`
    (e.g. one tick of the coarser board's counter: what its clock can tell
    apart). A profile or level only one run has is left out."""

    def by_level(summary: Mapping[str, object]) -> dict[tuple[str, str], float]:
        profiles = summary.get("profiles")
        out: dict[tuple[str, str], float] = {}
        if isinstance(profiles, Mapping):
            for name, p in profiles.items():
                for row in p["plateaus"]:
                    out[(str(name), str(row["level"]))] = float(row["measured_ns"])
        return out

    left, right = by_level(a), by_level(b)
    return [
        {
            "profile": profile,
            "level": level,
            "a_ns": left[(profile, level)],
            "b_ns": right[(profile, level)],
            "agree": abs(left[(profile, level)] - right[(profile, level)]) <= tolerance_ns,
        }
        for profile, level in sorted(set(left) & set(right))
    ]


def plot(summary: Mapping[str, object], out: Path) -> None:
    """plateaus.png, contention.png, tlb.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = summary["profiles"]
    assert isinstance(profiles, dict)
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, p in profiles.items():
        stall = p["chase_stall_ns"]
        xs = [int(k) / KIB for k in stall]
        line = ax.plot(xs, list(stall.values()), "o-", label=f"{name}: measured")[0]
        for pl in p["plateaus"]:
            ax.axhline(pl["expected_ns"], color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chase size (KiB)")
    ax.set_ylabel("stall per load (ns), model minus no model")
    ax.set_title("Pointer chase: plateaus (dotted: the profile's latencies)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "plateaus.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    baseline = summary["baseline"]
    assert isinstance(baseline, dict)
    for name, p in [*profiles.items(), ("no model", {"contention": baseline["contention"]})]:
        lat = p["contention"]["latency_ns"]
        ax.plot([int(k) for k in lat], list(lat.values()), "o-", label=name)
        if "profile" in p:
            base0 = lat["0"]
            service = p["profile"]["bus_service_ns"]
            ax.plot(
                [int(k) for k in lat],
                [base0 + int(k) * service for k in lat],
                ":",
                color="grey",
                linewidth=1,
            )
    ax.set_xlabel("other cores streaming through DRAM")
    ax.set_ylabel("core 0's chase, ns per load")
    ax.set_title("Contention on the shared bus (dotted: + one bus service time per core)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "contention.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, p in profiles.items():
        stall = p["tlb_stall_ns"]
        line = ax.plot([int(k) for k in stall], list(stall.values()), "o-", label=name)[0]
        k = p["tlb_knees"]
        for entries in (k["micro_entries"], k["main_entries"]):
            ax.axvline(entries, color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("pages visited, one load each (one physical page)")
    ax.set_ylabel("stall per load (ns)")
    ax.set_title("TLB reach (dotted: the profile's micro and main TLB sizes)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "tlb.png", dpi=110)
    plt.close(fig)


def report(summary: Mapping[str, object]) -> str:
    """report.md."""
    profiles = summary["profiles"]
    assert isinstance(profiles, dict)
    timing = Timing.of_summary(summary)
    lines = [
        "# The memory model against its own profiles",
        "",
        f"Run `{summary['run']}`, QEMU (not hardware), {timing.words()}, configuration "
        "`linux-only` on 4 cores for the microbenchmarks, `tandem` on 1 core for ctxsw. "
        f"Reproduce: `{summary['command']}`. Each check was fixed before the run "
        "(`harness/tandem/instruments/memory.py`).",
        "",
        "## Pointer chase: plateaus",
        "",
        "Stall per load: the chase's ns per load with the model minus the same chase "
        "without it (the loop's own instructions).",
        "",
        "| profile | level | size | profile's latency ns | measured ns | tolerance ns | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        for pl in p["plateaus"]:
            lines.append(
                f"| {name} | {pl['level']} | {pl['size'] // KIB} KiB | {pl['expected_ns']:g} | "
                f"{pl['measured_ns']:g} | ±{pl['tolerance_ns']:g} | "
                f"{'met' if pl['ok'] else 'NOT met'} |"
            )
    lines += [
        "",
        "## Contention on the shared bus",
        "",
        "Core 0 chases through 8 MiB (every load a DRAM read) while k other cores stream "
        "through 8 MiB each.",
        "",
        "| profile | bus service ns | k = 0 | k = 1 | k = 2 | k = 3 | growth per core ns | check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    baseline = summary["baseline"]
    assert isinstance(baseline, dict)
    for name, p in [*profiles.items(), ("no model", {"contention": baseline["contention"]})]:
        c = p["contention"]
        lat = c["latency_ns"]
        growth = ", ".join(f"{v:g}" for v in c["growth_per_stream_ns"].values())
        if "per_stream_ok" in c:
            service = c["bus_service_ns"]
            verdict = "met" if c["per_stream_ok"] else "NOT met"
        else:
            service, verdict = "-", "flat: " + ("met" if c["flat"] else "NOT met")
        lines.append(
            f"| {name} | {service} | "
            + " | ".join(f"{lat.get(str(k), '-')}" for k in STREAMS)
            + f" | {growth} | {verdict} |"
        )
    lines += [
        "",
        "The model makes a DRAM read wait one service time for every other core that has "
        "a request at the bus at that moment (round robin: each waiting core gets a turn "
        "first), so a streaming core adds a whole service time only if it is always at the "
        "bus. `arm11-003` holds the bus for the whole 56 ns access: one streaming core keeps "
        "it busy. On `a53` the bus is busy 10 ns of a 100 ns read, and a stream keeps it "
        "busy through its prefetcher (up to 5 lines in flight, the Cortex-A53's reset "
        "value): alone, about half its time; the streams share the bus as they add up "
        "(harness/memmodel, docs/harness.md).",
        "",
        "## TLB reach",
        "",
        "One load per page over P pages that are one physical page (every load an L1 hit), "
        "so only the TLBs see P pages. Stall per load: ns per load with the model minus the "
        "same sweep without it at the same P. Knee: the largest P before the stall steps up "
        "(micro: below half a micro TLB miss; main: within 0.1 ns of the plateau between the "
        "knees).",
        "",
        "| profile | micro TLB entries | knee | main TLB entries | knee | check |",
        "|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        k = p["tlb_knees"]
        ok = k["micro_ok"] and k["main_ok"]
        lines.append(
            f"| {name} | {k['micro_entries']} | {k['micro_knee']} | {k['main_entries']} | "
            f"{k['main_knee']} | {'met' if ok else 'NOT met'} |"
        )
    lines += [
        "",
        "## ctxsw: ASID against a TLB flush",
        "",
        f"The RTOS's two protected tasks hand off {summary['ctxsw_switches']} times, each "
        f"writing {summary['ctxsw_pages']} pages of its own between hand-offs (paper 004). "
        "Refills: the translation stall the model charged the core, flush minus asid, per "
        "hand-off.",
        "",
        "| model | asid ns | flush ns | gap ns | refills ns | main TLB misses per hand-off "
        "(asid / flush) | check |",
        "|---|---|---|---|---|---|---|",
    ]
    ctxsw = summary["ctxsw"]
    assert isinstance(ctxsw, dict)
    for name, r in ctxsw.items():
        misses = r.get("main_tlb_misses_per_switch")
        lines.append(
            f"| {name} | {r['asid_ns']} | {r['flush_ns']} | {r['gap_ns']} | "
            f"{r.get('refills_ns', '-')} | "
            + (f"{misses['asid']} / {misses['flush']}" if misses else "-")
            + " | "
            + ("-" if "ok" not in r else "met" if r["ok"] else "NOT met")
            + " |"
        )
    lines += [
        "",
        "## What the model counted",
        "",
        "| profile | loads | stores | L1D misses | L2 misses | DRAM reads | bus wait ms | "
        "micro / main TLB misses | stall ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, p in profiles.items():
        stats = p.get("model")
        if not isinstance(stats, dict):
            continue
        t = memmodel.totals(stats)
        lines.append(
            f"| {name} | {t.get('loads', 0)} | {t.get('stores', 0)} | {t.get('l1d_misses', 0)} | "
            f"{t.get('l2_misses', 0)} | {t.get('memory_reads', 0)} | "
            f"{t.get('bus_wait_ns', 0) / 1e6:.1f} | {t.get('micro_tlb_misses', 0)} / "
            f"{t.get('main_tlb_misses', 0)} | {t.get('stall_ns', 0) / 1e6:.1f} |"
        )
    lines += [
        "",
        timing.caveats(),
        "With a profile the plugin adds each access's stall to its core's clock "
        '(docs/harness.md, "The memory model"): what the paragraph above says of caches, TLBs '
        "and the bus holds for the boots without a model.",
        "",
        "Files: `summary.json`, `plateaus.png`, `contention.png`, `tlb.png`, `raw.tar.xz` "
        "(every boot's script, console and model counters).",
        "",
    ]
    return "\n".join(lines)
