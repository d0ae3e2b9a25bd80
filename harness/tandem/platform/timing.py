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

from tandem.errors import TandemError

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


def check_quantum(quantum_ns: int) -> int:
    """`quantum_ns` if per-core timing accepts it as a quantum."""
    if not 1 <= quantum_ns <= MAX_QUANTUM_NS:
        raise TandemError(f"--quantum-ns must be 1..{MAX_QUANTUM_NS}, got {quantum_ns}")
    return quantum_ns


@dataclass(frozen=True)
class Timing:
    """A timing mode and its parameters; checked when made.

    `quantum_ns` matters in per-core timing only (the other modes keep it,
    so that a boot's options can switch modes, but never show it). A memory
    profile (issue 32: `memmodel: str | None`, QEMU's cache and bus model)
    belongs here too: a field, its check in __post_init__, its options in
    `qemu_args` and its words in `words`.
    """

    mode: str = HOST
    quantum_ns: int = DEFAULT_QUANTUM_NS

    def __post_init__(self) -> None:
        check_mode(self.mode)
        check_quantum(self.quantum_ns)

    @classmethod
    def parse(cls, mode: str, quantum_ns: int | None = None) -> Timing:
        """A Timing from a command line's or scenario's words."""
        return cls(mode, DEFAULT_QUANTUM_NS if quantum_ns is None else quantum_ns)

    @classmethod
    def of_summary(cls, summary: Mapping[str, object], key: str = "timing") -> Timing:
        """The timing a run recorded under `key` (a summary's `timing`,
        `sweep_timing`, ...), with the quantum its scenario or summary gives."""
        mode = summary.get(key)
        if not isinstance(mode, str):
            raise TandemError(f"summary without a timing mode under '{key}'")
        scenario = summary.get("scenario")
        quantum = scenario.get("quantum_ns") if isinstance(scenario, Mapping) else None
        if quantum is None:
            quantum = summary.get("quantum_ns")
        if quantum is None:
            return cls(mode)
        if not isinstance(quantum, int) or isinstance(quantum, bool):
            raise TandemError(f"summary's quantum_ns {quantum!r} is not a whole number")
        return cls(mode, quantum)

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

    def qemu_args(self) -> list[str]:
        """How QEMU runs the vCPUs (docs/harness.md): one host thread per
        vCPU (host), or one thread with one clock (virtual) or a clock per
        vCPU, the lowest running next for at most the quantum (percore,
        Tandem's QEMU patches, qemu/patches/)."""
        if self.mode == VIRTUAL:
            return ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off"]
        if self.mode == PERCORE:
            return [
                "-accel",
                "tcg,thread=single",
                "-icount",
                f"shift=0,sleep=off,quantum={self.quantum_ns}",
            ]
        return ["-accel", "tcg,thread=multi"]

    def words(self) -> str:
        """As reports say it in a sentence: "percore timing (Q = 1000 ns)"."""
        if self.percore:
            return f"{self.mode} timing (Q = {self.quantum_ns} ns)"
        return f"{self.mode} timing"

    def label(self) -> str:
        """As plot titles and lists say it: "percore timing, Q = 1000 ns"."""
        if self.percore:
            return f"{self.mode} timing, Q = {self.quantum_ns} ns"
        return f"{self.mode} timing"

    def caveats(self) -> str:
        """What QEMU does and does not model in this mode, for a report."""
        return CAVEATS[self.mode]


def modes_words(summary: Mapping[str, object]) -> str:
    """Every timing mode a run used, from its provenance ("host, percore
    (Q = 1000 ns)"): an experiment may run its parts in different modes."""
    provenance = summary.get("provenance")
    recorded = provenance.get("timing") if isinstance(provenance, Mapping) else None
    if isinstance(recorded, Mapping) and recorded:
        modes = sorted({str(v) for k, v in recorded.items() if k.endswith("timing")})
        quantum = recorded.get("quantum_ns")
        return ", ".join(modes) + (f" (Q = {quantum} ns)" if PERCORE in modes else "")
    return str(summary.get("timing", "?"))
