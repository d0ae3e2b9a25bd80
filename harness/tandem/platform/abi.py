"""The ABI's numbers by name, for tests and scripts that look them up: the
module `tandem-abi-gen` prints from abi/ (abi_generated.py), one source with
the firmware and the C header."""

from __future__ import annotations

from tandem.platform import abi_generated


def constants() -> dict[str, int]:
    """Every integer constant of the generated module."""
    return {
        name: value
        for name, value in vars(abi_generated).items()
        if name.isupper() and isinstance(value, int)
    }


# Each kind of part of the shared region every core has, on pages of its
# own (abi/src/layout.rs): the constants' names of its offset and stride.
_PER_CORE = {
    "record": ("SHM_CORE_RECORDS_OFFSET", "SHM_CORE_RECORD_STRIDE"),
    "trace": ("TRACE_OFFSET", "TRACE_RING_STRIDE"),
    "latency": ("LATENCY_OFFSET", "LATENCY_STRIDE"),
    "spin": ("SPIN_OFFSET", "SPIN_STRIDE"),
    "dispatch": ("DISPATCH_OFFSET", "DISPATCH_STRIDE"),
    "steal": ("STEAL_OFFSET", "STEAL_STRIDE"),
}


def core_parts(core: int) -> dict[str, tuple[int, int]]:
    """Where `core`'s own parts of the shared region lie: name -> (offset,
    bytes), each whole pages of that core alone."""
    c = constants()
    return {
        name: (c[offset] + core * c[stride], c[stride])
        for name, (offset, stride) in _PER_CORE.items()
    }


def tandem_parts() -> dict[str, tuple[int, int]]:
    """The parts only the partition with Tandem's driver has: the
    context-switch record and each RPC channel, name -> (offset, bytes)."""
    c = constants()
    parts = {"ctxsw": (c["CTXSW_OFFSET"], c["RPC_OFFSET"] - c["CTXSW_OFFSET"])}
    for ch in range(c["RPC_CHANNELS"]):
        parts[f"rpc{ch}"] = (c["RPC_OFFSET"] + ch * c["RPC_CHANNEL_SIZE"], c["RPC_CHANNEL_SIZE"])
    return parts
