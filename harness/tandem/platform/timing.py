"""How QEMU keeps time for a boot: the one place a timing mode is parsed,
checked, turned into QEMU's options and described in words.

Modes (docs/harness.md, "Timing modes"):

- `host`: multi-threaded TCG in real time, for parallel throughput on a host
  with a core per vCPU;
- `virtual`: one clock for all vCPUs, one instruction per virtual
  nanosecond, for path lengths;
- `percore`: Tandem's QEMU, a clock per vCPU, the lowest one running next
  for at most the quantum, for response times and throughput that repeat.

A run's summary records the mode (and, in the scenario, the quantum); a
report reads its timing back with `Timing.of_summary`, never from the
harness's current defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import memmodel as memory_model

HOST = "host"
VIRTUAL = "virtual"
PERCORE = "percore"
# In the order reports list them.
MODES = (HOST, VIRTUAL, PERCORE)
# The modes in which a boot repeats exactly (instructions, not host time).
DETERMINISTIC_MODES = (VIRTUAL, PERCORE)
# Per-core timing's default quantum (docs/harness.md, results/fidelity/).
DEFAULT_QUANTUM_NS = 1000
MAX_QUANTUM_NS = 1_000_000
# Per-core timing's generic counter (QEMU patches 0007 and 0010,
# docs/harness.md): `off` lets a core that is behind read an earlier time
# than another core read before it (the counter goes backwards between
# cores); `max` gives it that later time instead (its counter stands still
# until its clock catches up); `stall` moves its clock on to that time,
# charged as a stall. Both take the latest time any core read, so what one
# core times on its own clock carries the cores' skew. `lamport` raises a
# core's counter only to the time of a core whose release it acquired
# (locks, atomics, store-release and load-acquire): it moves only when the
# core consumes data from a core ahead of it. It is the default since
# Linux's own timers/threadtest passes under it (docs/harness.md).
CAUSAL_OFF = "off"
CAUSAL_MAX = "max"
CAUSAL_LAMPORT = "lamport"
CAUSAL_MODES = (CAUSAL_OFF, CAUSAL_MAX, "stall", CAUSAL_LAMPORT)
DEFAULT_CAUSAL = CAUSAL_LAMPORT

# What QEMU does and does not model in each mode, for every report.
CAVEATS = {
    VIRTUAL: (
        "Virtual timing (`-icount shift=0,sleep=off`): one guest instruction is one "
        "nanosecond and all vCPUs take turns in one host thread. Path lengths are exact "
        "and repeatable, as long as no other vCPU's turn falls inside the path (the clock "
        "counts every vCPU's instructions); and a core whose interrupt fires waits until "
        "the round robin reaches its vCPU, so with several busy cores the response times "
        "include QEMU's scheduling slices (tens to hundreds of µs), which real hardware "
        "does not have. QEMU models no caches and no memory bus: a memory load costs no "
        "more than any other instructions."
    ),
    PERCORE: (
        "Per-core timing (Tandem's QEMU, `-icount shift=0,sleep=off,quantum=Q`): each "
        "vCPU has its own clock (its own instructions, one per nanosecond); the vCPU with "
        "the lowest clock runs next for at most the quantum Q, so the cores advance "
        "together within Q, a timer interrupt reaches a waiting (WFI) core exactly at its "
        "deadline (a core that other cores keep interrupting may take it up to about 2 Q "
        "late: docs/security.md), an event between cores (an interrupt, a store another "
        "core waits for) is seen within Q, and a rerun with the same inputs is the same "
        "run. QEMU models no caches, no TLB cost, no memory bus and no GIC latency: a "
        "memory load costs no more than any other instruction, and loaded cores do not "
        "slow each other down."
    ),
    HOST: (
        "Host timing (multi-threaded TCG, real time): each vCPU is a host thread. On a "
        "host with fewer cores than vCPUs the host's scheduler preempts vCPUs for "
        "milliseconds, which shows up as latency. QEMU models no caches and no memory "
        "bus, so memory load only competes for host CPU time."
    ),
}


def check_mode(mode: str) -> str:
    """`mode` if it is a timing mode, else an error naming the modes."""
    if mode not in MODES:
        raise TandemError(f"timing must be one of {', '.join(MODES)}, got '{mode}'")
    return mode


def check_causal(causal: str) -> str:
    """`causal` if it is a rule for per-core timing's counter."""
    if causal not in CAUSAL_MODES:
        raise TandemError(f"causal must be one of {', '.join(CAUSAL_MODES)}, got '{causal}'")
    return causal


def check_quantum(quantum_ns: int) -> int:
    """`quantum_ns` if per-core timing accepts it as a quantum."""
    if not 1 <= quantum_ns <= MAX_QUANTUM_NS:
        raise TandemError(f"--quantum-ns must be 1..{MAX_QUANTUM_NS}, got {quantum_ns}")
    return quantum_ns


@dataclass(frozen=True)
class Timing:
    """A timing mode and its parameters; checked when made.

    `quantum_ns`, `causal` and `memmodel` matter in per-core timing only
    (the other modes keep the quantum and the counter's rule, so that a
    boot's options can switch modes, but never show them). `memmodel`: a
    memory profile (`tandem.platform.memmodel`), QEMU's cache, bus and TLB
    model charged into each core's clock; None: no model, QEMU as before.
    """

    mode: str = HOST
    quantum_ns: int = DEFAULT_QUANTUM_NS
    memmodel: str | None = None
    causal: str = DEFAULT_CAUSAL

    def __post_init__(self) -> None:
        check_mode(self.mode)
        check_quantum(self.quantum_ns)
        check_causal(self.causal)
        if self.memmodel is not None:
            memory_model.check_profile(self.memmodel)
            if self.mode != PERCORE:
                raise TandemError(
                    f"--memmodel needs per-core timing (its stalls go into each core's own "
                    f"clock), not {self.mode}"
                )

    @classmethod
    def parse(
        cls,
        mode: str,
        quantum_ns: int | None = None,
        memmodel: str | None = None,
        causal: str | None = None,
    ) -> Timing:
        """A Timing from a command line's or scenario's words (`memmodel`
        "none" or empty: no model)."""
        return cls(
            mode,
            DEFAULT_QUANTUM_NS if quantum_ns is None else quantum_ns,
            None if memmodel in (None, "", "none") else memmodel,
            DEFAULT_CAUSAL if causal is None else causal,
        )

    @classmethod
    def of_summary(cls, summary: Mapping[str, object], key: str = "timing") -> Timing:
        """The timing a run recorded under `key` (a summary's `timing`,
        `sweep_timing`, ...), with the quantum, memory profile and counter
        rule its scenario or summary gives. A run that recorded no memory
        profile had none, and one that recorded no counter rule ran before
        there was one (`off`)."""
        mode = summary.get(key)
        if not isinstance(mode, str):
            raise TandemError(f"summary without a timing mode under '{key}'")
        scenario = summary.get("scenario")

        def recorded(name: str) -> object:
            value = scenario.get(name) if isinstance(scenario, Mapping) else None
            return summary.get(name) if value is None else value

        quantum = recorded("quantum_ns")
        if quantum is None:
            quantum = DEFAULT_QUANTUM_NS
        if not isinstance(quantum, int) or isinstance(quantum, bool):
            raise TandemError(f"summary's quantum_ns {quantum!r} is not a whole number")
        memmodel = recorded("memmodel")
        causal = recorded("causal")
        if memmodel is not None and not isinstance(memmodel, str):
            raise TandemError(f"summary's memmodel {memmodel!r} is not a profile")
        if causal is not None and not isinstance(causal, str):
            raise TandemError(f"summary's causal {causal!r} is not a counter rule")
        if mode != PERCORE:
            memmodel = None
        return cls(
            mode,
            quantum,
            None if memmodel in (None, "", "none") else memmodel,
            CAUSAL_OFF if causal is None else causal,
        )

    @classmethod
    def of_run(cls, summary: Mapping[str, object], mode: str) -> Timing:
        """Timing `mode` as the run of `summary` ran it (an experiment that
        boots several modes records the per-core parameters once)."""
        return cls.of_summary({**summary, "__mode": mode}, "__mode")

    def recorded(self) -> dict[str, object]:
        """What a summary records beside the mode and quantum, for
        `of_summary` to read back: the memory profile and the counter rule."""
        return {"memmodel": self.memmodel or "none", "causal": self.causal}

    @property
    def deterministic(self) -> bool:
        """Whether a boot repeats exactly: time is counted in instructions."""
        return self.mode in DETERMINISTIC_MODES

    @property
    def percore(self) -> bool:
        return self.mode == PERCORE

    @property
    def quantum(self) -> int | None:
        """The quantum, where the mode has one (a summary's `quantum_ns`)."""
        return self.quantum_ns if self.percore else None

    def qemu_args(self, run_dir: Path | None = None) -> list[str]:
        """How QEMU runs the vCPUs (docs/harness.md): one host thread per
        vCPU (host), or one thread with one clock (virtual) or a clock per
        vCPU, the lowest running next for at most the quantum (percore,
        Tandem's QEMU patches, qemu/patches/), its counter causal unless
        `off` (patch 0007), with the memory model's plugin if a profile is
        set (its counters into `run_dir`, or nowhere without one)."""
        if self.mode == VIRTUAL:
            return ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off"]
        if self.mode == PERCORE:
            icount = f"shift=0,sleep=off,quantum={self.quantum_ns}"
            if self.causal != CAUSAL_OFF:
                icount += f",causal={self.causal}"
            args = ["-accel", "tcg,thread=single", "-icount", icount]
            if self.memmodel is not None:
                out = (run_dir / memory_model.STATS_FILE) if run_dir else Path("/dev/null")
                args += memory_model.plugin_args(self.memmodel, self.quantum_ns, out)
            return args
        return ["-accel", "tcg,thread=multi"]

    def _extras(self) -> list[str]:
        """What per-core timing has beyond the quantum, in words (nothing
        for a run before the counter's rule and without a model)."""
        extras = []
        if self.causal != CAUSAL_OFF:
            extras.append(f"causal counter: {self.causal}")
        if self.memmodel is not None:
            extras.append(f"memory model {self.memmodel}")
        return extras

    def words(self) -> str:
        """As reports say it in a sentence: "percore timing (Q = 1000 ns)"."""
        if self.percore:
            extras = "".join(", " + e for e in self._extras())
            return f"{self.mode} timing (Q = {self.quantum_ns} ns{extras})"
        return f"{self.mode} timing"

    def label(self) -> str:
        """As plot titles and lists say it: "percore timing, Q = 1000 ns"."""
        if self.percore:
            extras = "".join(", " + e for e in self._extras())
            return f"{self.mode} timing, Q = {self.quantum_ns} ns{extras}"
        return f"{self.mode} timing"

    def caveats(self) -> str:
        """What QEMU does and does not model in this mode, for a report."""
        if not self.percore:
            return CAVEATS[self.mode]
        text = CAVEATS[self.mode]
        if self.memmodel is not None:
            text = text.replace(PERCORE_NO_MEMORY, PERCORE_MEMORY.format(profile=self.memmodel))
        if self.causal != CAUSAL_OFF:
            text += " " + CAUSAL_CAVEATS[self.causal]
        return text


# The sentence of the per-core caveat a memory model replaces.
PERCORE_NO_MEMORY = (
    "QEMU models no caches, no TLB cost, no memory bus and no GIC latency: a "
    "memory load costs no more than any other instruction, and loaded cores do not "
    "slow each other down."
)
PERCORE_MEMORY = (
    "Tandem's memory model (profile `{profile}`, harness/memmodel) adds each access's "
    "stall to its core's clock: per-core L1 caches, a shared L2 where the profile has one, "
    "one shared bus to DRAM with a service time per line (loaded cores slow each other "
    "down, each waiting a turn per other core at the bus), ASID-tagged TLBs with page "
    "walks through the caches, fixed device costs, and an L1 data prefetcher where the "
    "profile has one; no write buffers, hit-under-miss beyond the prefetcher's, or GIC "
    "latency (docs/harness.md)."
)
CAUSAL_CAVEATS = {
    "max": (
        "The generic counter is causal (`max`): no core reads an earlier time than "
        "another read before it; a core behind reads that later time instead, so an "
        "interval it times meanwhile can read up to about Q short, and a latency it "
        "times from its own timer's deadline up to about Q long."
    ),
    "stall": (
        "The generic counter is causal (`stall`): a core behind that reads the counter "
        "is moved on to the latest time another core read, the jump charged as a stall."
    ),
    "lamport": (
        "The generic counter is causal (`lamport`): a core that acquires what a core "
        "ahead of it released (a lock, an atomic, a store-release) reads no earlier time "
        "than that core had when it released it; its counter moves only then, by at most "
        "that lead (about Q). Data passed by plain loads and stores alone is not ordered."
    ),
}
assert PERCORE_NO_MEMORY in CAVEATS[PERCORE]


def modes_words(summary: Mapping[str, object]) -> str:
    """Every timing mode a run used, from its provenance ("host, percore
    (Q = 1000 ns)"): an experiment may run its parts in different modes;
    with the memory profile(s) its per-core boots ran on ("percore (Q =
    1000 ns), memory model arm11-ne1"), which the claims table shows
    beside the mode (issue 49)."""
    provenance = summary.get("provenance")
    recorded = provenance.get("timing") if isinstance(provenance, Mapping) else None
    if isinstance(recorded, Mapping) and recorded:
        # Read from the boots ("modes"), or, in runs before, from the
        # scenario's keys named after timing.
        listed = recorded.get("modes")
        modes = (
            sorted(str(m) for m in listed)
            if isinstance(listed, list)
            else sorted({str(v) for k, v in recorded.items() if k.endswith("timing")})
        )
        quantum = recorded.get("quantum_ns")
        words = ", ".join(modes) + (f" (Q = {quantum} ns)" if PERCORE in modes else "")
        model = recorded.get("memmodel")
        if isinstance(model, list):
            return words + ", memory models " + ", ".join(str(m) for m in model)
        if isinstance(model, str) and model != "none":
            return words + f", memory model {model}"
        return words
    return str(summary.get("timing", "?"))
