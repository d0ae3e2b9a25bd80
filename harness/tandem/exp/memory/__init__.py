"""Experiment `memory` (`tandem bench memory`): Tandem's memory model
checked against its own profiles with guest microbenchmarks
(`tandem-membench`, linux/tools).

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
flush on every switch, with the `a53` profile and without: flush should
cost about the TLB refills the model charged.

The checks, fixed before any run (docs/harness.md, "The memory model";
the tolerances in spec.py): each plateau within 10 % of the profile's
latency (L1, whose stall is 0: within 10 % of the L2 or DRAM step); per
streaming core, core 0's DRAM latency grows by the bus service time within
10 % (a whole service time only where each streaming core is always at
the bus; both profiles are judged), and not at all without a model (within
1 %); the TLB knees at the configured sizes (within 2 entries: the main
TLB also holds the kernel's and the loop's own pages), the stall per load
being, as for the chase, the sweep with the model minus the one without at
the same page count; flush slower than asid by the refills' cost within
20 %.

Results: results/memory/<run-id>/ (summary.json, report.md, plateaus.png,
contention.png, tlb.png, raw.tar.xz).
"""

from __future__ import annotations

from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, one_seed, seeds
from tandem.exp.memory.parse import (
    Handoffs,
    Plateau,
    contention,
    handoffs,
    knees,
    parse,
    plateaus,
)
from tandem.exp.memory.plot import plot
from tandem.exp.memory.report import report
from tandem.exp.memory.script import line_bytes, script, tlb_pages
from tandem.exp.memory.spec import (
    CTXSW_MODELS,
    CTXSW_MODES,
    CTXSW_PAGES,
    CTXSW_TOLERANCE,
    DRAM_SIZE,
    KIB,
    L1_SIZE,
    L2_SIZE,
    NAME,
    SCHEMA,
)
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.instruments.handoffs import guest_script as ctxsw_script
from tandem.platform import memmodel
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Ctxsw, load_config
from tandem.platform.timing import PERCORE, Timing

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """The memory model's checks are its own, not a paper's claims."""
    return []


def _stem(spec: str | None) -> str:
    """A profile in a boot's label (a TOML path by its file's name)."""
    return Path(spec).stem if spec else "none"


def _timing(s: Scenario, spec: str | None) -> Timing:
    return Timing(PERCORE, s.integer("quantum_ns"), spec, s.text("causal"))


def _check(s: Scenario) -> list[str]:
    """The scenario's profiles, refused with why if the run cannot be made."""
    if s.text("timing") != PERCORE:
        raise TandemError(
            f"{NAME} runs in per-core timing (the model needs it), not {s.text('timing')}"
        )
    if s.text("memmodel") != "none":
        raise TandemError(f"{NAME} sets each boot's model itself: name profiles in `profiles`")
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME}: per-core timing repeats a boot exactly; reps must be 1")
    profiles = s.texts("profiles")
    for spec in profiles:
        memmodel.check_profile(spec)
    return profiles


def membench_label(spec: str | None) -> str:
    return f"membench-{_stem(spec)}"


def ctxsw_label(mode: str, spec: str | None) -> str:
    return f"ctxsw-{mode}-{_stem(spec)}"


def units(s: Scenario) -> list[Boot]:
    """A membench boot without a model and one per profile, then ctxsw's
    two modes without a model and with `a53`."""
    profiles = _check(s)
    seed = one_seed(s, "each of its boots measures one profile or mode once")
    # The boot without a model sweeps every profile's page counts: each
    # profile's TLB stall is its sweep minus that one at the same count.
    every_page = sorted({p for spec in profiles for p in tlb_pages(memmodel.profile(spec))})
    out = []
    for spec in [None, *profiles]:
        out.append(
            Boot(
                membench_label(spec),
                # linux-only: no RTOS job shares the caches.
                BootOptions(
                    config=load_config("linux-only"),
                    board=s.board,
                    timing=_timing(s, spec),
                    smp=4,
                    linux_seed=seed,
                ),
                script(
                    memmodel.profile(spec or "a53"),
                    s.integer("loads"),
                    s.integer("tlb_loads"),
                    every_page if spec is None else (),
                ),
                about=f"chase, contention, TLB sweep; memory model {spec or 'off'}",
                keep=(memmodel.STATS_FILE,) if spec else (),
            )
        )
    for spec in CTXSW_MODELS:
        for mode in CTXSW_MODES:
            out.append(
                Boot(
                    ctxsw_label(mode, spec),
                    # The protected tasks hand off alone on core 0.
                    BootOptions(
                        config=load_config("tandem"),
                        board=s.board,
                        timing=_timing(s, spec),
                        smp=1,
                        ctxsw=Ctxsw(
                            core=0, mode=mode, pages=CTXSW_PAGES, switches=s.integer("switches")
                        ),
                        linux_seed=seed,
                    ),
                    ctxsw_script(),
                    about=f"ctxsw {mode}, {CTXSW_PAGES} pages; memory model {spec or 'off'}",
                    keep=(memmodel.STATS_FILE,) if spec else (),
                )
            )
    return out


def _stats(measured: Measured, label: str, spec: str | None) -> dict[str, object] | None:
    """What the boot's model counted (None: the boot had none)."""
    if spec is None:
        return None
    return memmodel.parse_stats(measured.text(label, memmodel.STATS_FILE), measured.where(label))


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    """The summary: every measurement, and each check's verdict."""
    profiles_run = _check(s)
    switches = s.integer("switches")
    off = parse(measured.lines(membench_label(None)), measured.where(membench_label(None)))
    profiles: dict[str, object] = {}
    for spec in profiles_run:
        label = membench_label(spec)
        ns = parse(measured.lines(label), measured.where(label))
        profile = memmodel.profile(spec)
        # As for the chase: the loop's own ns per load (which falls with P,
        # its overhead spread over more pages) taken out at each P.
        tlb_stall = {p: round(v - off["tlb"][p], 3) for p, v in ns["tlb"].items()}
        profiles[spec] = {
            "profile": profile,
            "chase_ns": {str(k): v for k, v in sorted(ns["chase"].items())},
            "chase_stall_ns": {
                str(k): round(v - off["chase"][k], 3) for k, v in sorted(ns["chase"].items())
            },
            "plateaus": [
                p.__dict__ | {"ok": p.within_tolerance}
                for p in plateaus(profile, ns["chase"], off["chase"])
            ],
            "contention": contention(profile, ns["contend"]),
            "tlb_stall_ns": {str(k): v for k, v in sorted(tlb_stall.items())},
            "tlb_knees": knees(profile, tlb_stall),
            "model": _stats(measured, label, spec),
        }
    ctx: dict[str, object] = {}
    for model in CTXSW_MODELS:
        by: dict[str, Handoffs] = {}
        for mode in CTXSW_MODES:
            label = ctxsw_label(mode, model)
            by[mode] = handoffs(
                s.board.counter_hz,
                mode,
                model,
                measured.lines(label),
                _stats(measured, label, model),
                measured.where(label),
            )
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
        ctx[model or "none"] = row
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": PERCORE,
        "quick": s.quick,
        "scenario": s.values,
        # Linux's seed (the scenario's one).
        "seeds": seeds(s),
        "quantum_ns": s.integer("quantum_ns"),
        "causal": s.text("causal"),
        "loads": s.integer("loads"),
        "tlb_loads": s.integer("tlb_loads"),
        "ctxsw_switches": switches,
        "ctxsw_pages": CTXSW_PAGES,
        "baseline": {
            "chase_ns": {str(k): v for k, v in sorted(off["chase"].items())},
            "contention": contention(None, off["contend"]),
        },
        "profiles": profiles,
        "ctxsw": ctx,
        "memmodel_profiles": {spec: memmodel.provenance(spec) for spec in profiles},
    }
    return summary


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
    chase = parse(result.lines, str(result.console_log), kinds=("chase",))["chase"]
    base = chase[4 * KIB]
    return plateaus(profile, chase, {s: base for s in chase})
