"""RPMsg between Linux and the RTOS (issue 36): Linux's stock virtio-rpmsg
over the tandem driver's remoteproc in attach mode, the RTOS's `rpmsg`
application at the other end (rtos/rpmsg, docs/rpc.md). Clients: Linux's
own rpmsg_client_sample module, and tandem-rpmsg, a user program using
/dev/rpmsg_ctrl0 and /dev/rpmsgN as any RPMsg application does. Hostile
rings and doorbell floods must cost the RTOS nothing; a restarted Linux
attaches again. Per-core timing, so a missed release would be the
system's, not the host's."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tandem import exp
from tandem.errors import TandemError
from tandem.exp.rpmsg.parse import parse, rows
from tandem.exp.rpmsg.plot import plot
from tandem.exp.rpmsg.report import report
from tandem.platform import abi_generated as abi
from tandem.platform import rtos_status
from tandem.platform.board import DEFAULT_BOARD, load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import load_config
from tandem.platform.timing import Timing

SYSFS = "/sys/bus/platform/devices/tandem"
RPROC = "/sys/class/remoteproc/remoteproc0/state"
# Each flood's seconds (default 1 for `make test`).
FLOOD_S = int(os.environ.get("TANDEM_RPMSG_FLOOD_S", "1"))
# What the RTOS publishes for each hostile case of `tandem-rpmsg hostile`:
# the fault code (`tandem_rpmsg::vring::Fault::code`).
FAULTS = {
    "index": 1,  # the available index past the ring
    "head": 2,  # a head past the descriptor table
    "next": 3,  # a chain's next past the table
    "loop": 5,  # a descriptor chained to itself: more buffers than taken
    "indirect": 6,  # an indirect descriptor (not offered)
    "outside": 7,  # a buffer in the RTOS's own RAM, outside the pool
    "write": 8,  # a device-writable buffer in the send ring
}
STATE = {"ready": abi.RPMSG_STATE_READY, "running": abi.RPMSG_STATE_RUNNING}


def percore(**options: object) -> BootOptions:
    return BootOptions(timing=Timing("percore"), **options)  # type: ignore[arg-type]


def tagged(lines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        tag, sep, rest = line.partition(": ")
        if sep:
            out.setdefault(tag, []).append(rest)
    return out


def control(name: str) -> str:
    return f"$(cat {SYSFS}/rpmsg_{name})"


REATTACH = f"echo detach > {RPROC}; echo start > {RPROC}; sleep 0.1"


@pytest.mark.qemu
def test_the_client_sample_and_a_user_program_get_their_messages_back() -> None:
    script = "\n".join(
        [
            # Linux's own sample: 100 messages to the RTOS's
            # rpmsg-client-sample service, each answer counted.
            "insmod /lib/modules/rpmsg_client_sample.ko",
            "sleep 1",
            'echo "sample-in: $(dmesg | grep -c "rpmsg_client_sample.*incoming msg")"',
            'echo "sample-bye: $(dmesg | grep -c "rpmsg_client_sample.*goodbye")"',
            # A user program: an endpoint through /dev/rpmsg_ctrl0, echoes
            # of every size an RPMsg buffer takes.
            *(
                f'echo "echo-{n}: $(tandem-rpmsg echo -n 20 -l {n})"'
                for n in (1, 64, abi.RPMSG_MAX_PAYLOAD)
            ),
            # An application's service from the table (the demo's).
            'echo "status: $(tandem-rpmsg call -s tandem-status x)"',
            # Bad input: clear errors.
            f'tandem-rpmsg echo -l {abi.RPMSG_MAX_PAYLOAD + 1}; echo "too-long: $?"',
            'tandem-rpmsg echo -s no-such-service; echo "no-service: $?"',
            f'echo "served: {control("served")} state: {control("state")} dropped: '
            f'{control("dropped")}"',
            'echo "devices: $(ls /sys/bus/rpmsg/devices | tr "\\n" " ")"',
        ]
    )
    r = run_exec(percore(), script + "\n", timeout_s=600)
    assert r.status == 0, r.console_log
    t = tagged(r.lines)
    assert t["sample-in"] == ["100"], r.lines
    assert t["sample-bye"] == ["1"], r.lines
    for n in (1, 64, abi.RPMSG_MAX_PAYLOAD):
        assert re.fullmatch(
            rf"ok 20 echoes of {n} bytes from 'tandem-echo' at 0x[0-9a-f]+ over /dev/rpmsg\d+",
            t[f"echo-{n}"][0],
        ), t[f"echo-{n}"]
    assert re.match(r"\d+ s \| core0: \d+ jobs, 0 missed", t["status"][0]), t["status"]
    assert t["too-long"] == ["2"] and t["no-service"] == ["1"], r.lines
    served = r.lines[-2]
    # 100 from the sample (its probe sends one, its callback 99 more),
    # 60 echoes, the status call; bad input sent nothing.
    assert served == f"served: {100 + 60 + 1} state: {STATE['running']} dropped: 0", served
    for name in ("tandem-echo", "rpmsg-client-sample", "tandem-status", "rpmsg_ctrl"):
        assert f".{name}." in t["devices"][0], t["devices"]
    secure = r.secure_log.read_text()
    assert "rpmsg: serving 3 services on core 3" in secure
    rtos_status.check_ran_on(rtos_status.last(secure))


def hostile_script() -> str:
    """Each hostile ring in turn (a new session after each), then floods
    from cores 0-2: doorbells while serving, doorbells at a refused session,
    messages from three clients at once."""
    out = ["set -e"]
    for case in FAULTS:
        out += [
            f"tandem-rpmsg hostile {case} > /dev/null",
            "sleep 0.05",
            f'echo "{case}: {control("state")} {control("fault")}"',
            REATTACH,
            f'echo "{case}-after: $(tandem-rpmsg echo -n 2)"',
        ]
    kicks = f"tandem-smc repeat {FLOOD_S} {abi.SMC_RPMSG_NOTIFY:#x} 1"
    flood = "for c in 0 1 2; do taskset -c $c {} > /tmp/{}$c & done; wait"
    out += [
        flood.format(kicks, "kicks"),
        'for c in 0 1 2; do echo "kicks: $(cat /tmp/kicks$c)"; done',
        "tandem-rpmsg hostile index > /dev/null",
        flood.format(kicks, "refused"),
        'for c in 0 1 2; do echo "refused: $(cat /tmp/refused$c)"; done',
        f'echo "refused-state: {control("state")}"',
        REATTACH,
        flood.format("tandem-rpmsg echo -n 300 -l 200", "clients"),
        'for c in 0 1 2; do echo "clients: $(cat /tmp/clients$c)"; done',
        f'echo "end: $(tandem-rpmsg echo -n 2) refused {control("refused")}"',
        # The RTOS's next status line covers the test.
        "sleep 1.1",
    ]
    return "\n".join(out) + "\n"


@pytest.mark.qemu
def test_hostile_rings_and_floods_cost_the_rtos_nothing() -> None:
    hostile_rings_and_floods(DEFAULT_BOARD)


def hostile_rings_and_floods(board: str) -> None:
    """test_hostile_rings_and_floods_cost_the_rtos_nothing on `board`
    (test_hostile_imx8mp.py: the i.MX 8M Plus EVK)."""
    # The RTOS alone on core 3 (heteroos), which serves RPMsg; Linux on
    # cores 0-2 attacks from all three.
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore"),
        config=load_config("heteroos"),
        rpc_cores=(3,),
    )
    r = run_exec(options, hostile_script(), timeout_s=600 + 120 * FLOOD_S)
    assert r.status == 0, r.console_log
    t = tagged(r.lines)
    refused = abi.RPMSG_STATE_REFUSED
    for case, code in FAULTS.items():
        # Refused with the fault the case is, and served again in the
        # next session.
        assert t[case] == [f"{refused} {code}"], (case, t[case])
        assert t[f"{case}-after"][0].startswith("ok 2 echoes"), (case, t[f"{case}-after"])
    for flood in ("kicks", "refused"):
        assert len(t[flood]) == 3 and all("0 answers differed" in c for c in t[flood]), t[flood]
    assert t["refused-state"] == [str(refused)]
    assert len(t["clients"]) == 3 and all(c.startswith("ok 300 echoes") for c in t["clients"])
    assert t["end"][0].startswith("ok 2 echoes") and t["end"][0].endswith(
        f"refused {len(FAULTS) + 1}"
    ), t["end"]
    # No release missed or lost on any RTOS core, across the whole boot,
    # and the RTOS's status lines went on (no hang).
    secure = r.secure_log.read_text()
    rtos_status.check_ran_on(rtos_status.last(secure))
    assert secure.count("rpmsg: session") == len(FAULTS) + 1, "each refusal logged once"


GENERATION = f'g=$(cat {SYSFS}/linux_generation)\necho "generation $g"\n'


@pytest.mark.qemu
def test_a_restarted_linux_attaches_again_and_its_echo_works() -> None:
    script = GENERATION + (
        f'echo "echo-$g: $(tandem-rpmsg echo -n 5 -l 100)"\n'
        f'echo "sessions-$g: {control("sessions")} session {control("session")}"\n'
        'echo "dmesg-$g: $(dmesg | grep -o "RPMsg: session [0-9]* acknowledged")"\n'
        'if [ "$g" = 1 ]; then sleep 0.2; reboot -f; fi\n'
        "sleep 1.1\n"
    )
    r = run_exec(percore(), script, timeout_s=600)
    assert r.reboots == 1, r.console_log
    t = tagged(r.lines)
    for g in (1, 2):
        assert t[f"echo-{g}"][0].startswith("ok 5 echoes of 100 bytes"), r.lines
    # The RTOS served a session per Linux: the first ended by the restart,
    # the second started from the new Linux's zeroed rings.
    # Linux's session number carries on from what the region holds.
    assert t["sessions-1"] == ["1 session 1"], r.lines
    assert t["sessions-2"] == ["2 session 2"], r.lines
    assert t["dmesg-2"] == ["RPMsg: session 2 acknowledged"], r.lines
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))


@pytest.mark.qemu
def test_unbinding_under_a_busy_endpoint_fails_its_calls_without_an_oops() -> None:
    # A client echoes without pause while the tandem driver is unbound: its
    # endpoint goes with the remote processor, its read fails (EPIPE), and
    # after a bind a new session serves again. (Its error path only closes
    # the endpoint: Linux 6.1's RPMSG_DESTROY_EPT_IOCTL racing the control
    # device's removal destroys the endpoint device twice, an oops in
    # rpmsg_char that is not Tandem's; docs/rpc.md.)
    script = "\n".join(
        [
            "tandem-rpmsg echo -n 1000000 > /tmp/client 2>&1 &",
            "sleep 0.05",
            "echo tandem > /sys/bus/platform/drivers/tandem/unbind",
            "wait",
            'echo "client: $(cat /tmp/client)"',
            'echo "endpoints: $(ls /dev | grep -c rpmsg)"',
            "echo tandem > /sys/bus/platform/drivers/tandem/bind",
            "sleep 0.2",
            'echo "after: $(tandem-rpmsg echo -n 3)"',
            f'echo "session: {control("session")}"',
            'echo "oops: $(dmesg | grep -c -E "Oops|WARNING|BUG")"',
        ]
    )
    r = run_exec(percore(), script + "\n", timeout_s=600)
    assert r.status == 0, r.console_log
    t = tagged(r.lines)
    # Its call failed (EPIPE on the read, or the write, whichever it was in).
    assert re.fullmatch(r"tandem-rpmsg: (read|write of 64 bytes): .+", t["client"][0]), r.lines
    assert t["endpoints"] == ["0"], "rpmsg_ctrl0 and the endpoint went with the driver"
    assert t["after"][0].startswith("ok 3 echoes"), r.lines
    # Attach, detach (the unbind's stop), attach again.
    assert t["session"] == ["3"] and t["oops"] == ["0"], r.lines


# --- on the host -------------------------------------------------------------


def test_the_bench_reads_its_samples_into_rows_a_report_and_a_plot(tmp_path: Path) -> None:
    lines = ["rt rpmsg 1 14000", "rt rpmsg 1 15000", "rt rpmsg 1 16000"]
    lines += ["rt rpc-block 1 6000 5000", "rt rpc-block 1 7000 5500", "noise: not a sample"]
    samples = parse(lines)
    assert samples["rpmsg"] == {1: [14000, 15000, 16000]}
    assert samples["rpc-block-driver"] == {1: [5000, 5500]}
    (row,) = rows(samples, (1,))
    assert row["rpmsg_median_ns"] == 15000 and row["rpc_block_median_ns"] == 6500
    assert row["rpmsg_max_ns"] == 16000 and row["rpmsg_over_rpc_block"] == round(15000 / 6500, 3)
    summary: dict[str, object] = {
        "experiment": "rpmsg",
        "timing_described": "percore timing (Q = 1000 ns)",
        "smp": 4,
        "config": "tandem",
        "server_core": "3",
        "calls": 3,
        "rows": [row],
        "rtos_missed_total": 0,
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    text = report(tmp_path, "./tandem exp run rpmsg")
    assert "| 1 | 15.00 (16.00) | 6.50 (7.00) | 5.25 (5.50) | 2.308 |" in text, text
    plot(tmp_path, summary)
    assert (tmp_path / "rpmsg.png").stat().st_size > 0
    # A size with no samples, or a line the bench never prints, is an error.
    with pytest.raises(TandemError, match="no rpmsg samples at 64 bytes"):
        rows(samples, (64,))
    with pytest.raises(TandemError, match="cannot read"):
        parse(["rt rpc-block 1 6000"])
    with pytest.raises(TandemError, match=r"sizes = \[0, 497\] is not allowed"):
        exp.run("rpmsg", False, {"sizes": [0, 497]}, out_root=tmp_path)
