"""Inter-OS RPC (paper 002): /dev/tandem-rpc against the RTOS's servers, in
QEMU (marker `qemu`, virtual timing). Good calls in every wait mode, and bad
input of every kind: each gets a clear error, no data crosses channels, and
the RTOS meets every deadline meanwhile."""

from __future__ import annotations

import re

import pytest

from tandem.platform import rtos_status
from tandem.platform.apps import AppRun
from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.timing import Timing

pytestmark = pytest.mark.qemu

SYSFS = "/sys/bus/platform/devices/tandem"
# The RPC server's test operation (OP_STALL) on for a boot.
TEST_OPS = (AppRun.of("rpc_server", test_ops=1),)


def run(script: str, **options: object) -> ExecResult:
    result = run_exec(BootOptions(timing=Timing("virtual"), **options), script, timeout_s=600)  # type: ignore[arg-type]
    assert result.qemu_status == 0, f"QEMU exited {result.qemu_status} ({result.console_log})"
    return result


def tagged(r: ExecResult) -> dict[str, str]:
    """Lines 'TAG: text' of the script's output, by tag."""
    out: dict[str, str] = {}
    for line in r.lines:
        tag, sep, rest = line.partition(": ")
        if sep and " " not in tag:
            out[tag] = rest
    return out


def no_misses(r: ExecResult) -> None:
    last = rtos_status.last(r.secure_log.read_text())
    assert last.cores and last.missed == 0, last


# Channels 0 and 2 are served on core 2, 1 and 3 on core 3.
SCRIPT = f"""
t() {{ tag=$1; shift; echo "$tag: $(tandem-rpc "$@" 2>&1)"; }}
echo "x_opt: $(cat {SYSFS}/rpc_x_opt)"
echo "model: $(cat {SYSFS}/rpc_t_ctx_ns {SYSFS}/rpc_t_c_hdr_ns {SYSFS}/rpc_t_s2_ns \
{SYSFS}/rpc_v_server_bytes_per_ms | tr '\\n' ' ')"
t busy call -m busy send 64
t block call -m block -c 1 send 64
t echo call -m block -c 3 echo 65536
t echo0 call echo 0
t fast call -m busy echo 256
t slow call -m busy -c 2 echo 257
t over call send 65537
t negative call send -1
t channel call -c 4 send 1
t rtos_over call -u send 100000
t rtos_negative call -u send -5
t long_stall call -a 5000 stall 0
echo 1 > {SYSFS}/rpc_calibrate; echo "recalibrated: $? $(cat {SYSFS}/rpc_x_opt)"
echo 0 > {SYSFS}/rpc_x_opt
t auto_block call send 64
echo 65537 > {SYSFS}/rpc_x_opt
t auto_busy call send 65536
echo 70000 2>/dev/null > {SYSFS}/rpc_x_opt; echo "bad_x_opt: $?"
t stress stress -j 16 -n 20 -k 4 -s 8192
t stall call -t 100 -a 1000 stall 0
t behind call -t 20 send 64
t other call -c 1 -t 100 send 64
t after call -t 3000 echo 4096
tandem-rpc call -m block -t 5000 -a 300 stall 0 > /dev/null & pid=$!
sleep 0.05; kill -9 $pid; wait $pid; echo "killed_block: $?"
tandem-rpc call -m busy -c 1 -t 5000 -a 300 stall 0 > /dev/null & pid=$!
sleep 0.05; kill -9 $pid; wait $pid; echo "killed_busy: $?"
t after_kill call -t 3000 echo 4096
t after_kill1 call -c 1 -t 3000 -m block echo 100
echo "calls: $(cat {SYSFS}/rpc_calls)"
sleep 1
"""


def test_rpc_calls_and_bad_input() -> None:
    r = run(SCRIPT, rpc_cores=(2, 3), apps=TEST_OPS)
    out = tagged(r)
    ok = re.compile(r"ok mode (\w+) core (\d) seq \d+ len (\d+) .*checksum (match|n/a)$")

    def good(tag: str, mode: str, core: int, length: int) -> None:
        m = ok.match(out[tag])
        assert m, f"{tag}: {out[tag]}"
        assert (m[1], int(m[2]), int(m[3])) == (mode, core, length), out[tag]

    assert 0 < int(out["x_opt"]) <= 65537
    assert all(int(v) > 0 for v in out["model"].split()), out["model"]
    status, x_opt = out["recalibrated"].split()
    assert status == "0" and 0 < int(x_opt) <= 65537
    good("busy", "busy", 2, 64)
    good("block", "block", 3, 64)
    good("echo", "block", 3, 65536)
    good("echo0", "busy", 2, 0)
    # The last size the doorbell's handler answers, and the first the task does.
    good("fast", "busy", 2, 256)
    good("slow", "busy", 2, 257)
    # Refused by the driver, before the RTOS sees anything.
    assert out["over"].startswith("error EMSGSIZE (90)")
    assert out["negative"].startswith("error EINVAL (22)")
    assert out["channel"].startswith("error ECHRNG (44)")
    assert out["long_stall"].startswith("error EINVAL (22)")
    # Passed through unchecked: the RTOS refuses them itself (status -1).
    assert out["rtos_over"] == "error EMSGSIZE (90) status -1"
    assert out["rtos_negative"] == "error EMSGSIZE (90) status -1"
    # The per-call override of auto through the threshold.
    good("auto_block", "block", 2, 64)
    good("auto_busy", "busy", 2, 65536)
    assert out["bad_x_opt"] != "0"
    # Sixteen clients on four channels, every answer their own data.
    assert out["stress"] == "stress clients 16 calls 20 channels 4 failed_clients 0"
    # A stopped server: the caller times out, the next caller on that
    # channel is told the previous call is still there, other servers'
    # channels are unaffected, and the channel works once the server is back.
    assert out["stall"].startswith("error ETIMEDOUT")
    assert out["behind"].startswith("error EBUSY")
    good("other", "busy", 3, 64)
    good("after", "busy", 2, 4096)
    # Clients killed in the middle of a call (blocked and spinning).
    assert out["killed_block"] == "137" and out["killed_busy"] == "137"
    good("after_kill", "busy", 2, 4096)
    good("after_kill1", "block", 3, 100)
    no_misses(r)


def test_the_stall_test_operation_is_refused_unless_the_boot_asks_for_it() -> None:
    """Issue 31, hole 8e: OP_STALL stops a server core's RPC service for up
    to 2 s; a production boot refuses it with its own status (-4, EACCES),
    and only a boot whose workload blob (secure flash, out of Linux's
    reach) says `rpc_server.test_ops = 1` serves it."""
    call = "tandem-rpc call -t 3000 -a 10 stall 0"
    r = run(f'echo "off: $({call} 2>&1)"; echo "send: $(tandem-rpc call send 64 2>&1)"')
    out = tagged(r)
    assert out["off"] == "error EACCES (13) status -4", out
    assert out["send"].startswith("ok mode"), out
    r = run(f'echo "on: $({call} 2>&1)"', apps=TEST_OPS)
    assert tagged(r)["on"].startswith("ok mode"), r.lines


def test_no_rpc_server_is_a_clear_error() -> None:
    r = run(
        "tandem-rpc call send 64; tandem-smc call 0xc2000002 0; dmesg | grep -c 'RPC: no server'",
        rpc_cores=(),
    )
    assert r.lines[0] == "error ENODEV (19) status 0"
    assert int(r.lines[1].split()[0]) == -1, "RPC_NOTIFY: NOT_SUPPORTED"
    assert r.lines[2] == "1"


def test_calibration_in_host_timing() -> None:
    # In host timing every round trip carries hundreds of microseconds of
    # doorbell latency noise, more than a 64 KiB copy takes: the driver must
    # still measure every parameter (the server times its own copy), at load
    # and again through sysfs, never leave them at zero.
    keys = "t_ctx_ns t_c_hdr_ns t_s2_ns v_server_bytes_per_ms x_opt"
    script = f"""
m() {{ echo "$1: $(cd {SYSFS} && cat $(for k in {keys}; do echo rpc_$k; done) | tr '\\n' ' ')"; }}
m load
echo 1 > {SYSFS}/rpc_calibrate; echo "recalibrated: $?"
m again
dmesg | grep -c 'RPC: calibration failed' || true
"""
    r = run_exec(BootOptions(timing=Timing("host"), smp=2, rpc_cores=(1,)), script, timeout_s=600)
    assert r.qemu_status == 0, f"QEMU exited {r.qemu_status} ({r.console_log})"
    out = tagged(r)
    assert out["recalibrated"] == "0"
    for tag in ("load", "again"):
        *params, x_opt = (int(v) for v in out[tag].split())
        assert all(p > 0 for p in params), f"{tag}: {out[tag]}"
        assert 0 <= x_opt <= 65537
        # The server's copy speed: about 1 byte/ns on QEMU, not noise.
        assert 100_000 < params[3] < 100_000_000, f"{tag}: {out[tag]}"
    assert r.lines[-1] == "0"


UNBIND = f"""
drv=/sys/bus/platform/drivers/tandem
t() {{ tag=$1; shift; echo "$tag: $(tandem-rpc "$@" 2>&1)"; }}
# Two calls asleep in the server (a 1 s stall), one busy, a fourth waiting
# for the first's channel; the driver is unbound under all of them.
t sleeping call -m block -t 5000 -a 1000 stall 0 > /tmp/sleeping &
t spinning call -m busy -c 1 -t 5000 -a 1000 stall 0 > /tmp/spinning &
# The fourth only once the first holds the channel (started together, the
# scheduler may run it first, and a 64-byte call is over at once).
sleep 0.05
t queued call -m block -t 5000 send 64 > /tmp/queued &
sleep 0.1
echo tandem > $drv/unbind; echo "unbind: $?"
wait
cat /tmp/sleeping /tmp/spinning /tmp/queued
t after_unbind call send 64
echo "x_opt_after: $(cat {SYSFS}/rpc_x_opt 2>&1)"
sleep 1.2
echo tandem > $drv/bind; echo "bind: $?"
t rebound call -m block -t 3000 echo 4096
echo "oops: $(dmesg | grep -c -e 'Unable to handle' -e 'Oops' -e 'BUG:' -e 'WARNING:')"
"""


def test_unbinding_under_sleeping_calls_fails_them_without_an_oops() -> None:
    r = run(UNBIND, rpc_cores=(2, 3), apps=TEST_OPS)
    out = tagged(r)
    assert out["unbind"] == "0", r.console_log
    # Every call in flight returns an error at once (not after its 5 s).
    for tag in ("sleeping", "spinning"):
        assert out[tag].startswith("error ENODEV"), f"{tag}: {out[tag]}"
    assert out["queued"].startswith("error ENODEV") or out["queued"].startswith("error EBUSY"), out[
        "queued"
    ]
    # The device is gone, then back.
    assert "No such file" in out["after_unbind"] or "ENOENT" in out["after_unbind"], out
    assert "No such file" in out["x_opt_after"], out
    assert out["bind"] == "0", r.console_log
    assert out["rebound"].startswith("ok mode block"), out["rebound"]
    assert out["oops"] == "0", r.console_log


# A call whose data is a userfaultfd page nobody serves for 20 s: the
# driver's copy of the caller's data waits in that page fault. Unbinding the
# driver meanwhile must not wait for it (issue 31, hole 8a).
UFFD_UNBIND = """
drv=/sys/bus/platform/drivers/tandem
tandem-rpc call -U 20 -t 30000 send 4096 > /tmp/held 2>/dev/null &
held=$!
sleep 1
(echo tandem > $drv/unbind; echo "unbind: $?" > /tmp/unbind) &
n=0
while [ ! -s /tmp/unbind ] && [ $n -lt 50 ]; do usleep 100000; n=$((n + 1)); done
echo "unbind_waited_ds: $n"
cat /tmp/unbind
wait $held
echo "held: $(cat /tmp/held)"
wait
echo tandem > $drv/bind; echo "bind: $?"
echo "rebound: $(tandem-rpc call -m block -t 3000 echo 4096 2>&1)"
# An echo whose answer cannot be written back (a read-only buffer): kept
# and copied after the call let go of the channel, then EFAULT.
echo "read_only: $(tandem-rpc call -R echo 4096 2>&1)"
echo "after_read_only: $(tandem-rpc call echo 4096 2>&1)"
echo "oops: $(dmesg | grep -c -e 'Unable to handle' -e 'Oops' -e 'BUG:' -e 'WARNING:')"
"""


def test_unbinding_does_not_wait_for_a_callers_page_fault() -> None:
    r = run(UFFD_UNBIND, rpc_cores=(2, 3))
    out = tagged(r)
    # Unbinding returns at once (within 5 s of guest time; the fault is
    # held for 20 s), the held call then fails cleanly.
    assert int(out["unbind_waited_ds"]) < 50, f"unbind waited for the page fault: {out}"
    assert out["unbind"] == "0", out
    assert out["held"].startswith("error ENODEV"), out
    assert out["bind"] == "0" and out["rebound"].startswith("ok mode block"), out
    assert out["read_only"].startswith("error EFAULT (14)"), out
    assert out["after_read_only"].startswith("ok mode"), out
    assert out["oops"] == "0", r.console_log
