"""The instruments: measuring primitives the experiments are built on.

Guest-side latency measurements and their parsing (`measure`), per-core
instruction counts from a QEMU plugin (`pathcount`), the world switch's cost
from QEMU's execution log (`switchcost`), a world timeline as a Perfetto
trace (`perfetto`) and Linux's own scheduler events on the counter's clock
(`linuxsched`), the RTOS `ctxsw` application's hand-offs (`handoffs`), and
what a boot costs the host between points its commands mark, or at the
console's lines (`hostmarks`). Every bench, and `tandem trace`, is an
experiment (tandem/exp; issue 48): no run, summary or report is made here.
"""
