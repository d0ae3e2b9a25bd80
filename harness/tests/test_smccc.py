"""SMCCC's general queries of the SiP range from Linux (marker `qemu`):
`tandem-smc uid` names Tandem, the Call UID query's registers are the
generated header's, and the issue's SMC64 forms of the IDs, which SMCCC
does not define, answer NOT_SUPPORTED (docs/monitor.md)."""

from __future__ import annotations

import pytest

from tandem.platform import abi_generated as abi
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.timing import Timing


def sip_calls() -> list[int]:
    """The SiP range's function IDs the dispatch table implements (owner
    2): what the Call Count query counts."""
    return [fid for fid in abi.SMC_IMPLEMENTED_IDS if (fid >> 24) & 0x3F == 2]


@pytest.mark.qemu
def test_linux_reads_tandems_uid_revision_and_call_count() -> None:
    script = (
        "tandem-smc uid\n"
        f"tandem-smc call {abi.SMC_SIP_CALL_UID:#x}\n"
        f"tandem-smc call {abi.SMC_SIP_CALL_UID | 1 << 30:#x}\n"
        f"tandem-smc call {abi.SMC_SIP_REVISION:#x}\n"
    )
    r = run_exec(BootOptions(timing=Timing("percore"), smp=1), script, timeout_s=600)
    assert r.status == 0, r.output
    major, minor = abi.ABI_VERSION >> 16, abi.ABI_VERSION & 0xFFFF
    assert r.lines[0] == (
        f"b647d0eb-4f38-4fec-8f69-906a453188d3 (Tandem) revision {major}.{minor} "
        f"calls {len(sip_calls())}"
    ), r.output
    words = r.lines[1].split()
    assert int(words[0]) == abi.SIP_UID_0, r.output
    assert [int(w, 16) for w in words[1:]] == [abi.SIP_UID_1, abi.SIP_UID_2, abi.SIP_UID_3]
    smc64 = abi.SMC_SIP_CALL_UID | 1 << 30
    assert r.lines[2].split()[0] == str(abi.SMC_NOT_SUPPORTED), "SMC64 form: not defined"
    # ... and tandem-smc points at the SMC32 form (stderr).
    assert r.lines[3] == (
        f"tandem-smc: {smc64:#x} is the SMC64 form of an SMCCC general query; "
        f"SMCCC defines them as SMC32: {abi.SMC_SIP_CALL_UID:#x} (or tandem-smc uid)"
    ), r.output
    revision = r.lines[4].split()
    assert (int(revision[0]), int(revision[1], 0)) == (major, minor), r.output
