"""The instruments: what measures Tandem on QEMU, and the benchmarks built on them.

Guest-side latency measurements and their parsing (`measure`), per-core
instruction counts from a QEMU plugin (`pathcount`), the world switch's cost
from QEMU's execution log (`switchcost`), the monitor's trace rings as a
timeline (`trace`, `tandem trace`), and what a boot costs the host between
points its commands mark (`hostmarks`, `tandem bench fidelity`'s cost).
`bench boot`, `latency`, `switch` and `fidelity` are experiments
(tandem/exp/boot, latency, switch, fidelity).
"""
