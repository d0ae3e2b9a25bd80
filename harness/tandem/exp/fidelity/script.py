"""What each `fidelity` boot runs: the probes one after another, each
begun with a mark line (`MARK PROBE`), and with `cost`, hackbench timed on
the host between two marks."""

from __future__ import annotations

from tandem.exp.fidelity.spec import CLIENT_CPU, CPU_A, CPU_B, MARK

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


def gap_ns(quantum_ns: int | None) -> int:
    """How long a core's counter may jump between two reads in the hand-off
    probe before the round counts as interrupted: above what per-core
    timing's catching up may add (a quantum), below an RTOS job (about
    5 µs of the demo's). Virtual timing (no quantum): the floor."""
    return max(2000, 2 * (quantum_ns or 0))


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
