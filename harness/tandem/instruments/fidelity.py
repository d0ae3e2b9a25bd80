"""`tandem bench fidelity`: what each timing mode does between cores.

Guest-side probes, each run in stock virtual timing and in per-core timing
at several quanta (docs/harness.md, "Timing modes"):

a. overlap: CPU b times a loop of N instructions between two counter reads
   while CPU a spins (`tandem-probe overlap`): its clock should advance N ns;
b. cross-core interrupt: Linux stamps the counter and rings the RPC
   doorbell, an SGI to the RTOS's server core, whose first stamp ends the
   sample (`tandem-rpc bench`, the driver's `notify_ns`), with Linux idle
   and with Linux running hackbench on every core;
c. flag hand-off: CPU a stores a counter stamp that CPU b spins on
   (`tandem-probe handoff`);
d. determinism: the first per-core cell is booted twice (three times with
   a model); every sample of every run must agree;
e. cost: host wall time and QEMU's user CPU time (read from /proc while it
   runs) of the boot and of `hackbench -g 4 -l 100` (and hackbench's own
   time, in guest time). With a model, its cost is the median ratio of the
   CPU times of three alternated pairs of boots with and without it.

Per-core cells use the options' counter rule (`--causal`, free by default)
and memory model (`--memmodel`); with a rule, the first quantum is also
booted with the counter free (`causal=off`, what the rule costs) and, with a
model, without the model (what the model costs, side by side in one run).

Results: results/fidelity/<run-id>/ (summary.json, samples.csv, report.md,
fidelity.png).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from tandem import pool, provenance
from tandem.errors import TandemError
from tandem.platform import host_cpu
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.memmodel import provenance as memmodel_provenance
from tandem.platform.paths import RESULTS
from tandem.platform.timing import CAUSAL_OFF, DEFAULT_CAUSAL, Timing
from tandem.results import PartialRun, write_atomic

PROBES = ("overlap", "handoff", "notify_idle", "notify_busy")
MARK = "@@FIDELITY"
# The probes' CPUs: a and b for overlap and hand-off, the RPC client.
CPU_A, CPU_B, CLIENT_CPU = 1, 2, 0
# Pairs of boots with and without a memory model whose CPU time (e) judges
# the model's cost: the median of their ratios (issue 47).
COST_PAIRS = 3
COST_LIMIT_CPU = 3.5
HACKBENCH = "hackbench -g 4 -l 100"

SCRIPT = """\
set -e
echo {mark} overlap
tandem-probe overlap -a {a} -b {b} -n {rounds} -k {iters}
echo {mark} handoff
tandem-probe handoff -a {a} -b {b} -n {rounds} -s 1 -g {gap_ns}
echo {mark} notify_idle
tandem-rpc bench -m busy -n {rounds} -C {client} -d 200 1
echo {mark} notify_busy
hackbench -g 4 -l 1000000 > /dev/null 2>&1 &
hog=$!
sleep 0.2
tandem-rpc bench -m busy -n {rounds} -C {client} -d 200 1
kill $hog; wait $hog || true
{cost}echo {mark} end
"""
COST = """echo {mark} hackbench
{hackbench} | grep '^Time:'
"""


@dataclass(frozen=True)
class Cell:
    """One boot: a timing mode (and for per-core timing its quantum,
    counter rule and memory model)."""

    timing: str
    quantum_ns: int | None
    rep: int = 1
    causal: str = DEFAULT_CAUSAL
    memmodel: str | None = None

    @property
    def label(self) -> str:
        q = f"-q{self.quantum_ns}" if self.quantum_ns else ""
        more = ""
        if self.timing == "percore" and self.causal != CAUSAL_OFF:
            more += f"-causal-{self.causal}"
        if self.memmodel is not None:
            more += f"-mem-{Path(self.memmodel).stem}"
        return f"{self.timing}{q}{more}-rep{self.rep}"

    def timing_of(self) -> Timing:
        """The boot's Timing."""
        return Timing.parse(self.timing, self.quantum_ns, self.memmodel, self.causal)

    def words(self) -> str:
        """As progress lines name the cell."""
        return self.timing_of().words()


@dataclass
class Samples:
    """What one boot measured: each probe's samples (ns), the overlap loop's
    length in instructions, RPC calls the server had started before the
    doorbell (no notify sample), and the host's wall time of boot and
    hackbench."""

    probes: dict[str, list[int]] = field(default_factory=dict)
    overlap_insns: int = 0
    server_first: int = 0
    boot_s: float = 0.0
    hackbench_s: float = 0.0
    # QEMU's user CPU time (host s) to the first probe and over hackbench;
    # None where /proc could not say (the cost check (e) in CPU time).
    boot_user_s: float | None = None
    hackbench_user_s: float | None = None
    # hackbench's own "Time:" (guest time, s); None if it printed none.
    hackbench_guest_s: float | None = None
    # Hand-off rounds a core was interrupted in (the RTOS's turn, an IRQ,
    # QEMU running another vCPU): their times, not among the samples.
    handoff_interrupted: list[int] = field(default_factory=list)


def gap_ns(options: BootOptions) -> int:
    """How long a core's counter may jump between two reads in the hand-off
    probe before the round counts as interrupted: above what per-core
    timing's catching up may add (a quantum), below an RTOS job (about
    5 µs of the demo's)."""
    q = options.timing.quantum or 0
    return max(2000, 2 * q)


def script(rounds: int, iters: int, cost: bool = True, gap: int = 2000) -> str:
    """The guest script of one boot (with `cost`, hackbench is timed too;
    `gap`: see `gap_ns`)."""
    return SCRIPT.format(
        gap_ns=gap,
        mark=MARK,
        a=CPU_A,
        b=CPU_B,
        client=CLIENT_CPU,
        rounds=rounds,
        iters=iters,
        cost=COST.format(mark=MARK, hackbench=HACKBENCH) if cost else "",
    )


def parse(lines: list[str], where: str) -> Samples:
    """The probes' samples from one boot's output."""
    out = Samples(probes={p: [] for p in PROBES})
    probe = ""
    for line in lines:
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == MARK:
                probe = f[1]
            elif f[0] == "overlap" and probe == "overlap" and len(f) == 3:
                out.overlap_insns = int(f[1])
                out.probes["overlap"].append(int(f[2]))
            elif f[0] == "handoff" and probe == "handoff" and len(f) == 2:
                out.probes["handoff"].append(int(f[1]))
            elif f[0] == "handoff" and probe == "handoff" and f[2:] == ["interrupted"]:
                # A round a core did not spin through (tandem-probe.c): kept
                # apart, its time is the interruption's.
                out.handoff_interrupted.append(int(f[1]))
            elif f[0] == "rt" and probe.startswith("notify") and len(f) == 6:
                # 0: the server, still looking for work after the last call,
                # found this one before the doorbell rang.
                if int(f[5]) == 0:
                    out.server_first += 1
                else:
                    out.probes[probe].append(int(f[5]))
            elif f[0] == "Time:" and probe == "hackbench" and len(f) == 2:
                out.hackbench_guest_s = float(f[1])
            elif f[0] == "error":
                raise TandemError(f"{where}: a probe failed: {line}")
        except ValueError as e:
            raise TandemError(f"{where}: cannot read '{line}': {e}") from None
    if not out.probes["overlap"]:
        raise TandemError(f"{where}: no overlap samples")
    # In virtual timing CPU 2 sees the flag only after a turn of another
    # vCPU, so every round may be flagged interrupted: rounds are required,
    # uninterrupted ones are not (the report shows their count).
    if not out.probes["handoff"] and not out.handoff_interrupted:
        raise TandemError(f"{where}: no handoff rounds")
    if not out.probes["notify_idle"] and not out.probes["notify_busy"] and not out.server_first:
        raise TandemError(f"{where}: no RPC calls measured")
    return out


def boot(
    options: BootOptions,
    rounds: int,
    iters: int,
    raw: Path,
    label: str,
    cost: bool = True,
    ctx: pool.Context | None = None,
) -> Samples:
    """Boots once, runs the probes, keeps the console log under raw/
    (`ctx`: a boot of the pool, stopped with it)."""
    config = options.config
    servers = options.rpc_cores or config.default_rpc_cores(options.smp)
    if not servers:
        raise TandemError(f"configuration '{config.name}' runs no RPC server (no RTOS core)")
    if options.smp < 3 or CPU_B not in config.linux_cores(options.smp):
        raise TandemError(f"the probes need Linux on CPUs 0-{CPU_B}: use 3 or more cores")
    marks: dict[str, float] = {}
    cpu_marks: dict[str, float | None] = {}
    qemu_pid: list[int] = []

    def echo(line: str) -> None:
        f = line.split()
        if len(f) == 2 and f[0] == MARK:
            marks[f[1]] = time.monotonic()
            cpu_marks[f[1]] = host_cpu.user_cpu_s(qemu_pid[0]) if qemu_pid else None
            if ctx is not None:
                ctx.note(f[1])
            else:
                print(f"bench fidelity:   {label}: {f[1]}", file=sys.stderr, flush=True)

    text = script(rounds, iters, cost, gap_ns(options))
    result = run_exec(
        options,
        text,
        timeout_s=3600,
        echo=echo,
        cancel=None if ctx is None else ctx.cancel,
        spawned=qemu_pid.append,
    )
    raw.mkdir(parents=True, exist_ok=True)
    (raw / f"{label}.console.log").write_text(result.console_log.read_text(errors="replace"))
    (raw / f"{label}.sh").write_text(text)
    where = f"{label} (console: {result.console_log})"
    if result.status != 0:
        raise TandemError(f"{where}: the probes exited with {result.status}")
    samples = parse(result.lines, where)
    samples.boot_s = round(result.boot_s, 3)
    if "hackbench" in marks and "end" in marks:
        samples.hackbench_s = round(marks["end"] - marks["hackbench"], 3)
    first = cpu_marks.get("overlap")
    samples.boot_user_s = None if first is None else round(first, 2)
    start, end = cpu_marks.get("hackbench"), cpu_marks.get("end")
    if start is not None and end is not None:
        samples.hackbench_user_s = round(end - start, 2)
    return samples


def stats(values: list[int]) -> dict[str, float | None]:
    """min / median / max (ns; None without samples) and the count."""
    if not values:
        return {"samples": 0, "min_ns": None, "median_ns": None, "max_ns": None}
    return {
        "samples": len(values),
        "min_ns": min(values),
        "median_ns": statistics.median(values),
        "max_ns": max(values),
    }


def cell_summary(cell: Cell, s: Samples) -> dict[str, object]:
    """One boot's row of the summary."""
    row: dict[str, object] = {
        "timing": cell.timing,
        "quantum_ns": cell.quantum_ns,
        "rep": cell.rep,
        "causal": cell.causal if cell.timing == "percore" else None,
        "memmodel": cell.memmodel,
        "boot_s": s.boot_s,
        "hackbench_s": s.hackbench_s,
        "hackbench_guest_s": s.hackbench_guest_s,
        "boot_user_s": s.boot_user_s,
        "hackbench_user_s": s.hackbench_user_s,
        "overlap_insns": s.overlap_insns,
        "notify_server_first": s.server_first,
    }
    for p in PROBES:
        row[p] = stats(s.probes[p])
    handoff = s.probes["handoff"]
    row["handoff_early"] = sum(1 for v in handoff if v < 0)
    row["handoff_interrupted"] = len(s.handoff_interrupted)
    over = row["overlap"]
    assert isinstance(over, dict)
    row["overlap_median_error_ns"] = over["median_ns"] - s.overlap_insns
    return row


def is_comparison(row: dict[str, object]) -> bool:
    """A row booted only to compare with (a counter rule or model off)."""
    return bool(row.get("comparison"))


def checks(
    rows: list[dict[str, object]], identical: bool | None, judge_cost: bool = True
) -> list[tuple[str, bool]]:
    """The acceptance checks, on the per-core rows: (what, met); the cost
    (e) only if `judge_cost` (the boots ran one at a time)."""
    out: list[tuple[str, bool]] = []
    percore = [
        r for r in rows if r["timing"] == "percore" and r["rep"] == 1 and not is_comparison(r)
    ]
    # (b)'s limit holds for one path on an idle and a busy core; with caches
    # the busy core's path misses on what hackbench evicted, so with a
    # model the boot without it ("model off") is judged instead.
    judged_b = [r for r in percore if r.get("memmodel") in (None, "none")] + [
        r for r in rows if r.get("comparison") == "model off" and r["rep"] == 1
    ]
    for r in percore:
        q = int(str(r["quantum_ns"]))
        insns = int(str(r["overlap_insns"]))
        err = abs(float(str(r["overlap_median_error_ns"])))
        out.append(
            (
                f"(a) Q = {q} ns: overlap median {err:.0f} ns off {insns} instructions, "
                f"limit 1 % + Q = {0.01 * insns + q:.0f} ns",
                err <= 0.01 * insns + q,
            )
        )
    for r in judged_b:
        q = int(str(r["quantum_ns"]))
        idle, busy = r["notify_idle"], r["notify_busy"]
        assert isinstance(idle, dict) and isinstance(busy, dict)
        if idle["max_ns"] is None or busy["max_ns"] is None:
            out.append(
                (
                    f"(b) Q = {q} ns: no doorbell samples ({r['notify_server_first']} calls the "
                    "RTOS server found before their doorbell rang: it ran up to Q behind Linux "
                    "and read the request early)",
                    False,
                )
            )
            continue
        out.append(
            (
                f"(b) Q = {q} ns: interrupt to a busy core worst {busy['max_ns']} ns, to an "
                f"idle core (the path alone) worst {idle['max_ns']} ns, limit path + Q = "
                f"{idle['max_ns'] + q} ns",
                float(busy["max_ns"]) <= float(idle["max_ns"]) + q,
            )
        )
    if identical is not None:
        out.append(("(d) two boots with the same inputs give the same samples", identical))
    virtual = [r for r in rows if r["timing"] == "virtual"]

    def cost(r: dict[str, object]) -> float:
        return float(str(r["boot_s"])) + float(str(r["hackbench_s"]))

    q1 = [r for r in percore if r["quantum_ns"] == 1000]
    model_off = [
        r
        for r in rows
        if r.get("comparison") == "model off" and r["quantum_ns"] == 1000 and r["rep"] == 1
    ]
    if virtual and judge_cost:
        # Per-core timing without a model against virtual timing.
        plain = model_off or [r for r in q1 if not r.get("memmodel")]
        if plain:
            v, p = cost(virtual[0]), cost(plain[0])
            out.append(
                (
                    f"(e) Q = 1 µs: boot + hackbench {p:.1f} s of host time against {v:.1f} s "
                    f"in virtual timing ({p / v:.2f}x), limit 3x",
                    p <= 3 * v,
                )
            )
    pairs = cost_pairs(rows)
    if pairs:
        ratios = [m / p for m, p in pairs]
        mid = statistics.median(ratios)
        model = next(r["memmodel"] for r in q1 if r.get("memmodel"))
        out.append(
            (
                f"(e) Q = 1 µs: boot + hackbench in QEMU's user CPU time with the memory model "
                f"{model} against without, {len(pairs)} alternated pairs: "
                + ", ".join(f"{m:.1f} against {p:.1f} s" for m, p in pairs)
                + f"; median ratio {mid:.2f}x, limit {COST_LIMIT_CPU:g}x",
                mid <= COST_LIMIT_CPU,
            )
        )
    elif model_off and q1 and q1[0].get("memmodel") and judge_cost:
        # Runs from before the CPU time was read: host wall time.
        m, p = cost(q1[0]), cost(model_off[0])
        out.append(
            (
                f"(e) Q = 1 µs: boot + hackbench {m:.1f} s of host time with the memory model "
                f"{q1[0]['memmodel']} against {p:.1f} s without ({m / p:.2f}x), limit 3x",
                m <= 3 * p,
            )
        )
    return out


def user_cpu(row: dict[str, object]) -> float | None:
    """QEMU's user CPU seconds for boot + hackbench (None if not read)."""
    boot, hackbench = row.get("boot_user_s"), row.get("hackbench_user_s")
    if not isinstance(boot, int | float) or not isinstance(hackbench, int | float):
        return None
    return float(boot) + float(hackbench)


def cost_pairs(rows: list[dict[str, object]]) -> list[tuple[float, float]]:
    """(with the model, without) user CPU seconds of boot + hackbench at
    Q = 1 µs, one pair per rep that has both."""
    with_model: dict[int, float] = {}
    without: dict[int, float] = {}
    for r in rows:
        cpu = user_cpu(r)
        if r["timing"] != "percore" or r["quantum_ns"] != 1000 or cpu is None:
            continue
        if r.get("comparison") == "model off":
            without[int(str(r["rep"]))] = cpu
        elif r.get("memmodel") and not is_comparison(r):
            with_model[int(str(r["rep"]))] = cpu
    return [(with_model[k], without[k]) for k in sorted(with_model) if k in without]


def plot(rows: list[dict[str, object]], path: Path) -> None:
    """(b) against the quantum, with virtual timing's for reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    percore = sorted(
        (r for r in rows if r["timing"] == "percore" and r["rep"] == 1 and not is_comparison(r)),
        key=lambda r: int(str(r["quantum_ns"])),
    )
    virtual = [r for r in rows if r["timing"] == "virtual"]
    fig, ax = plt.subplots(figsize=(7.0, 4.2))

    def us(r: dict[str, object], probe: str, key: str) -> float | None:
        d = r[probe]
        assert isinstance(d, dict)
        return None if d[key] is None else float(d[key]) / 1000

    def series(rows: list[dict[str, object]], probe: str, key: str) -> list[float]:
        return [v for r in rows if (v := us(r, probe, key)) is not None]

    for probe, colour in (("notify_idle", "tab:blue"), ("notify_busy", "tab:red")):
        have = [r for r in percore if us(r, probe, "max_ns") is not None]
        qs = [int(str(r["quantum_ns"])) / 1000 for r in have]
        name = probe.replace("notify_", "receiver ")
        ax.plot(qs, series(have, probe, "max_ns"), "o-", color=colour, label=f"{name}: worst")
        ax.plot(
            qs,
            series(have, probe, "median_ns"),
            "s--",
            color=colour,
            alpha=0.6,
            label=f"{name}: median",
        )
        for r in virtual:
            v = us(r, probe, "max_ns")
            if v is not None:
                ax.axhline(v, color=colour, linestyle=":", label=f"{name}: worst in virtual timing")
    have = [r for r in percore if us(r, "notify_idle", "max_ns") is not None]
    if have:
        idle0 = us(have[0], "notify_idle", "max_ns")
        assert idle0 is not None
        qs = [int(str(r["quantum_ns"])) / 1000 for r in percore]
        ax.plot(qs, [idle0 + q for q in qs], color="grey", linewidth=1, label="path + Q")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("quantum Q (µs)")
    ax.set_ylabel("Linux's stamp to the RTOS's, across cores (µs)")
    ax.set_title("(b) cross-core interrupt (RPC doorbell SGI) against the quantum")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(summary: dict[str, object]) -> str:
    """report.md."""
    rows = summary["rows"]
    assert isinstance(rows, list)
    lines = [
        "# Timing fidelity: what each timing mode does between cores",
        "",
        f"Run `{summary['run']}`, QEMU (not hardware), {summary['smp']} cores, configuration "
        f"`{summary['config']}`, {summary['rounds']} rounds per probe. Reproduce: "
        f"`{summary['command']}`.",
        "",
        "Probes (`harness/tandem/instruments/fidelity.py`): (a) overlap: CPU 2 times a "
        "loop of known length while CPU 1 spins, error = counter time minus instructions; "
        "(b) Linux stamps the counter and rings the RPC doorbell (an SGI) on CPU 0, the "
        "RTOS's server stamps on its core, with Linux idle or running hackbench on every "
        "core; "
        "(c) CPU 1 stores a stamp CPU 2 spins on (early: CPU 2's clock behind the stamp; "
        "rounds in which either CPU stopped running, as when the RTOS takes its turn on "
        "the core, are counted after the figures and left out of them); "
        '(e) host wall time. "Server first": calls the RTOS server found before their '
        "doorbell rang (it looks again after each call), which give no (b) sample.",
        "",
        "| timing | Q ns | (a) overlap error median ns | (b) idle min / median / max ns | "
        "(b) busy min / median / max ns | (b) server first | (c) hand-off min / median / max "
        "ns | (c) early | boot s | hackbench s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    extended = any(isinstance(r, dict) and "causal" in r for r in rows)
    with_cpu = any(isinstance(r, dict) and "boot_user_s" in r for r in rows)
    if with_cpu:
        lines[-4] = lines[-4].replace(
            "(e) host wall time.", "(e) host wall time and QEMU's user CPU time."
        )
        lines[-2:] = [
            "| timing | Q ns | counter | memory model | (a) overlap error median ns | "
            "(b) idle min / median / max ns | (b) busy min / median / max ns | "
            "(b) server first | (c) hand-off min / median / max ns | (c) early | boot s | "
            "hackbench s | hackbench guest s | boot + hackbench user CPU s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    elif extended:
        lines[-2:] = [
            "| timing | Q ns | counter | memory model | (a) overlap error median ns | "
            "(b) idle min / median / max ns | (b) busy min / median / max ns | "
            "(b) server first | (c) hand-off min / median / max ns | (c) early | boot s | "
            "hackbench s | hackbench guest s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]

    def interrupted(r: dict[str, object]) -> str:
        # Runs from before tandem-probe flagged interrupted rounds lack it.
        n = r.get("handoff_interrupted")
        return f" ({n} interrupted)" if n else ""

    def mmm(d: object) -> str:
        assert isinstance(d, dict)
        if d["max_ns"] is None:
            return "-"
        return f"{d['min_ns']} / {d['median_ns']:g} / {d['max_ns']}"

    for r in rows:
        assert isinstance(r, dict)
        q = r["quantum_ns"] or "-"
        rep = f" (rep {r['rep']})" if r["rep"] != 1 else ""
        if extended:
            lines.append(
                f"| {r['timing']}{rep} | {q} | {r.get('causal') or '-'} | "
                f"{r.get('memmodel') or '-'} | {r['overlap_median_error_ns']:g} | "
                f"{mmm(r['notify_idle'])} | {mmm(r['notify_busy'])} | "
                f"{r['notify_server_first']} | {mmm(r['handoff'])}{interrupted(r)} | "
                f"{r['handoff_early']} | {r['boot_s']} | {r['hackbench_s']} | "
                f"{r.get('hackbench_guest_s') or '-'} |"
            )
            if with_cpu:
                cpu = user_cpu(r)
                lines[-1] += f" {'-' if cpu is None else f'{cpu:.2f}'} |"
            continue
        lines.append(
            f"| {r['timing']}{rep} | {q} | {r['overlap_median_error_ns']:g} | "
            f"{mmm(r['notify_idle'])} | {mmm(r['notify_busy'])} | "
            f"{r['notify_server_first']} | {mmm(r['handoff'])}{interrupted(r)} | "
            f"{r['handoff_early']} | "
            f"{r['boot_s']} | {r['hackbench_s']} |"
        )
    jobs = summary.get("jobs", 1)
    if isinstance(jobs, int) and jobs > 1:
        lines += [
            "",
            f"The boots ran {jobs} at a time (`--jobs {jobs}`): the samples are the same as "
            "one at a time, the host seconds are not, so (e) is not judged "
            "(`--jobs 1` measures it).",
        ]
        if with_cpu:
            lines[-1] = (
                f"The boots ran {jobs} at a time (`--jobs {jobs}`): the samples are the same "
                "as one at a time, the host's wall seconds are not, so (e) in wall time is "
                "not judged (`--jobs 1` measures it); (e) in CPU time is, with boots side by "
                "side sharing the host's caches."
            )
    lines += comparison_lines(rows)
    lines += ["", "## Checks", ""]
    for what, met in summary["checks"]:  # type: ignore[attr-defined]
        lines.append(f"- {what}: {'met' if met else 'NOT met'}")
    lines += [
        "",
        "## Reading it",
        "",
        "In virtual timing one clock counts every core's instructions and the cores take "
        "turns: the overlap loop is timed with the spinning core's turns in it, and an "
        "interrupt for a core waits for that core's turn. In per-core timing each core "
        "has its own clock; a halted core woken by another's interrupt wakes at the "
        "sender's clock, so the idle-receiver path does not depend on Q, while a busy "
        "receiver that is ahead takes it up to Q late. QEMU models no caches, no memory "
        "bus and no GIC latency, so these are instruction paths, not hardware times.",
        "",
        "Files: `summary.json`, `samples.csv` (every sample), `fidelity.png` ((b) "
        "against Q), `raw/` (each boot's script and console).",
        "",
    ]
    return "\n".join(lines)


def comparison_lines(rows: list[object]) -> list[str]:
    """What the counter's rule and the memory model change, against the
    same quantum's boot without them (nothing for a run without either)."""
    main = [
        r
        for r in rows
        if isinstance(r, dict)
        and r["timing"] == "percore"
        and r["rep"] == 1
        and not is_comparison(r)
        and "causal" in r
    ]
    out: list[str] = []
    for r in rows:
        # One paragraph per comparison: the reps of the model's cost pairs
        # are in (e).
        if not isinstance(r, dict) or not is_comparison(r) or r["rep"] != 1:
            continue
        ref = next((m for m in main if m["quantum_ns"] == r["quantum_ns"]), None)
        if ref is None:
            continue
        if r["comparison"] == "counter free":
            # The counter-free boot runs without the model: its reference is
            # the boot that differs from it only in the counter rule.
            ref = next(
                (
                    m
                    for m in rows
                    if isinstance(m, dict)
                    and m.get("comparison") == "model off"
                    and m["quantum_ns"] == r["quantum_ns"]
                    and m["rep"] == r["rep"]
                ),
                ref,
            )

        def d(row: dict[str, object], probe: str, key: str) -> str:
            v = row[probe]
            assert isinstance(v, dict)
            return "-" if v[key] is None else f"{v[key]:g}"

        what = r["comparison"]
        name = (
            f"the counter rule `{ref['causal']}`"
            if what == "counter free"
            else f"the memory model `{ref['memmodel']}`"
        )
        guest, guest_ref = r.get("hackbench_guest_s"), ref.get("hackbench_guest_s")
        host = float(str(ref["boot_s"])) + float(str(ref["hackbench_s"]))
        host_ref = float(str(r["boot_s"])) + float(str(r["hackbench_s"]))
        out += [
            "",
            f"**What {name} changes** (Q = {r['quantum_ns']} ns, against the same boot "
            f"{'with the counter free' if what == 'counter free' else 'without the model'}): "
            f"(a) overlap error median {ref['overlap_median_error_ns']:g} against "
            f"{r['overlap_median_error_ns']:g} ns; (b) busy median / worst "
            f"{d(ref, 'notify_busy', 'median_ns')} / {d(ref, 'notify_busy', 'max_ns')} against "
            f"{d(r, 'notify_busy', 'median_ns')} / {d(r, 'notify_busy', 'max_ns')} ns; "
            f"(c) hand-off median / worst {d(ref, 'handoff', 'median_ns')} / "
            f"{d(ref, 'handoff', 'max_ns')} against {d(r, 'handoff', 'median_ns')} / "
            f"{d(r, 'handoff', 'max_ns')} ns, early {ref['handoff_early']} against "
            f"{r['handoff_early']}; hackbench's own time {guest_ref} against {guest} s of guest "
            f"time; host time of boot + hackbench {host:.1f} against {host_ref:.1f} s "
            f"({host / host_ref:.2f}x).",
        ]
    return out


def run(
    base: BootOptions,
    quanta: list[int],
    rounds: int,
    iters: int,
    command: str,
    out_root: Path = RESULTS,
    jobs: int | None = 1,
) -> Path:
    """Boots virtual timing once, per-core timing once per quantum and the
    first quantum once more (with a model: twice more, each time also
    without the model), `jobs` at a time (None: one per host core); writes
    results/fidelity/<run-id>/.

    The probes count guest time, the same whatever `jobs`; the cost (e) in
    the host's wall time, which boots side by side share, is judged only
    one at a time; in QEMU's user CPU time, always."""
    if not quanta:
        raise TandemError("bench fidelity: give at least one quantum")
    causal, memmodel = base.timing.causal, base.timing.memmodel
    cells = [Cell("virtual", None)]
    cells += [Cell("percore", q, causal=causal, memmodel=memmodel) for q in quanta]
    # What the counter's rule and the model cost: the first quantum without each.
    comparisons: dict[Cell, str] = {}
    if memmodel is None:
        cells.append(Cell("percore", quanta[0], rep=2, causal=causal))
    else:
        # The model's cost (e) in CPU time: its boot and the same boot
        # without it, alternated, COST_PAIRS times (rep 2 is also (d)'s).
        for rep in range(1, COST_PAIRS + 1):
            if rep > 1:
                cells.append(Cell("percore", quanta[0], rep=rep, causal=causal, memmodel=memmodel))
            off = Cell("percore", quanta[0], rep=rep, causal=causal)
            comparisons[off] = "model off"
            cells.append(off)
    if causal != CAUSAL_OFF:
        free = Cell("percore", quanta[0], causal=CAUSAL_OFF)
        comparisons[free] = "counter free"
        cells.append(free)
    jobs = pool.choose_jobs(jobs, [c.timing_of() for c in cells], "bench fidelity's")
    # Taken before the first boot, from every boot's options, as `tandem
    # exp run` does.
    stamp = provenance.collect([replace(base, timing=c.timing_of()) for c in cells], jobs)
    run_dir = PartialRun(out_root / "fidelity")
    raw = run_dir.dir / "raw"

    def task(cell: Cell) -> pool.Task[Samples]:
        options = replace(base, timing=cell.timing_of())
        return pool.Task(
            cell.label,
            cell.words(),
            lambda ctx: boot(options, rounds, iters, raw, cell.label, ctx=ctx),
        )

    samples = pool.run("bench fidelity", [task(c) for c in cells], jobs)
    measured = list(zip(cells, samples, strict=True))
    first = [
        s
        for c, s in measured
        if c.timing == "percore" and c.quantum_ns == quanta[0] and c not in comparisons
    ]
    identical = all(s.probes == first[0].probes for s in first[1:])
    rows = [cell_summary(c, s) for c, s in measured]
    for (c, _), row in zip(measured, rows, strict=True):
        if c in comparisons:
            row["comparison"] = comparisons[c]
    summary: dict[str, object] = {
        "benchmark": "fidelity",
        "run": run_dir.final.name,
        "command": command,
        "config": base.config.name,
        "smp": base.smp,
        "rounds": rounds,
        "overlap_iterations": iters,
        "causal": causal,
        "memmodel": memmodel or "none",
        "memmodel_profile": memmodel_provenance(memmodel),
        "rows": rows,
        "deterministic": identical,
        # Boots side by side: the host times (e) are shared between them.
        "jobs": jobs,
        "provenance": stamp,
    }
    summary["checks"] = checks(rows, identical, judge_cost=jobs == 1)
    with (run_dir.dir / "samples.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timing", "quantum_ns", "causal", "memmodel", "rep", "probe", "round", "ns"])
        for cell, s in measured:
            for probe, values in s.probes.items():
                for i, v in enumerate(values):
                    w.writerow(
                        [
                            cell.timing,
                            cell.quantum_ns or "",
                            cell.causal if cell.timing == "percore" else "",
                            cell.memmodel or "",
                            cell.rep,
                            probe,
                            i,
                            v,
                        ]
                    )
    write_atomic(run_dir.dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    plot(rows, run_dir.dir / "fidelity.png")
    write_atomic(run_dir.dir / "report.md", report(summary))
    return run_dir.finish()
