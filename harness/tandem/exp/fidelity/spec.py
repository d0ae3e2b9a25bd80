"""The `fidelity` experiment's name, scenario keys, its cells (one boot
each: a timing mode, and for per-core timing a quantum, counter rule and
memory model), the probes and their CPUs, and the checks' limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.exp.scenario import Key
from tandem.platform.timing import CAUSAL_OFF, DEFAULT_CAUSAL, MAX_QUANTUM_NS, Timing

NAME = "fidelity"

SCHEMA = {
    "quanta": Key(
        list,
        "per-core timing's quanta, one boot each; the first is booted again (d) and compared "
        "with the counter free or without the model",
        item=int,
        minimum=1,
        maximum=MAX_QUANTUM_NS,
    ),
    # tandem-probe's own limits (linux/tools/tandem-probe.c).
    "rounds": Key(int, "samples per probe", minimum=1, maximum=1_000_000),
    "iterations": Key(
        int, "overlap: loop iterations timed (2 instructions each)", minimum=1, maximum=10**9
    ),
    "config": Key(
        str, "platform configuration (configs/NAME.toml): Linux on CPUs 0-2, an RPC server"
    ),
    "smp": Key(int, "cores (the probes use CPUs 0-2)", minimum=3, maximum=8),
}

PROBES = ("overlap", "handoff", "notify_idle", "notify_busy")
# The line each part of the guest script begins with (`MARK PART`); the
# host's clocks are read at each (instruments/hostmarks.py).
MARK = "@@FIDELITY"
# The probes' CPUs: a and b for overlap and hand-off, the RPC client.
CPU_A, CPU_B, CLIENT_CPU = 1, 2, 0
# Pairs of boots with and without a memory model whose CPU time (e) judges
# the model's cost: the median of their ratios (issue 47).
COST_PAIRS = 3
# (e)'s limits: per-core timing without a model against virtual timing in
# host wall time, and the model against none in QEMU's user CPU time.
COST_LIMIT_WALL = 3
COST_LIMIT_CPU = 3.5
# The quantum (e) is judged at.
COST_QUANTUM_NS = 1000
# What a comparison boot is booted without.
COUNTER_FREE, MODEL_OFF = "counter free", "model off"


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
        """Its files' names under raw/ (as `bench fidelity` named them)."""
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


def cells(quanta: list[int], causal: str, memmodel: str | None) -> list[tuple[Cell, str | None]]:
    """Every boot of a run, in the order they boot (one at a time, that
    order alternates (e)'s pairs), each with what it is booted without to
    compare (None: a boot of its own, judged): virtual timing once,
    per-core timing once per quantum (with the counter rule `causal` and
    the model `memmodel`), and the first quantum once more for (d); with a
    model, twice more, and each of those three followed by the same boot
    without the model (the model's cost (e): COST_PAIRS pairs); with a
    counter rule, the first quantum with the counter free."""
    out: list[tuple[Cell, str | None]] = [(Cell("virtual", None), None)]
    out += [(Cell("percore", q, causal=causal, memmodel=memmodel), None) for q in quanta]
    if memmodel is None:
        out.append((Cell("percore", quanta[0], rep=2, causal=causal), None))
    else:
        for rep in range(1, COST_PAIRS + 1):
            if rep > 1:
                model = Cell("percore", quanta[0], rep=rep, causal=causal, memmodel=memmodel)
                out.append((model, None))
            out.append((Cell("percore", quanta[0], rep=rep, causal=causal), MODEL_OFF))
    if causal != CAUSAL_OFF:
        out.append((Cell("percore", quanta[0], causal=CAUSAL_OFF), COUNTER_FREE))
    return out
