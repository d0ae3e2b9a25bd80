"""Pairing the path-count plugin's marker hits into dispatch paths (host)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.instruments import pathcount
from tandem.instruments.pathcount import Dispatches, DispatchPath, Hit

NM = """\
0000000000000178 t lower_irq
00000000000001dc t lower_fiq
0000000000002f94 0000000000000040 t tandem_monitor::trap::lower_fiq
0000000000006000 0000000000000360 T memcpy
0000000000007000 0000000000000010 b tandem_monitor::DATA
"""


def test_parse_nm_keeps_code_symbols_and_their_span() -> None:
    symbols = pathcount.parse_nm(NM, "monitor")
    assert symbols.addresses["lower_fiq"] == [0x1DC]
    assert symbols.addresses["tandem_monitor::trap::lower_fiq"] == [0x2F94]
    assert "tandem_monitor::DATA" not in symbols.addresses, "data is not code"
    assert symbols.code == (0x178, 0x6360)
    assert symbols.sizes[0x2F94] == 0x40


def _firmware(**rtos_extra: int) -> tuple[pathcount.Symbols, pathcount.Symbols]:
    rtos_names = {
        "tandem_rtos::periodic::stamp_request": 0xE100100,
        "tandem_rtos_firmware::stats::reschedule_sent": 0xE100200,
        "irq_entry": 0xE100300,
        "tandem_rtos::periodic::run_periodic": 0xE100400,
    }
    rtos = pathcount.Symbols(
        {name: [a] for name, a in rtos_names.items()} | {n: [a] for n, a in rtos_extra.items()},
        {0xE100400: 0x100},
        (0xE100000, 0xE101000),
    )
    monitor = pathcount.parse_nm(NM, "monitor")
    return rtos, monitor


def test_markers_and_counted_code_come_from_the_symbols() -> None:
    rtos, monitor = _firmware()
    addresses = pathcount.marker_addresses(rtos, monitor)
    assert addresses == {
        "requested": 0xE100100,
        "sent": 0xE100200,
        "rtos_irq": 0xE100300,
        "monitor_fiq": 0x1DC,
        "monitor_irq": 0x178,
        "started": 0xE100400,
    }
    # The task body is left out but for the block its first instruction starts.
    assert pathcount.counted_code(rtos, monitor) == [
        (0x178, 0x6360),
        (0xE100000, 0xE100404),
        (0xE100500, 0xE101000),
    ]


def test_a_missing_or_doubled_marker_symbol_is_an_error() -> None:
    rtos, monitor = _firmware()
    del rtos.addresses["tandem_rtos_firmware::stats::reschedule_sent"]
    with pytest.raises(TandemError, match="reschedule_sent is missing"):
        pathcount.marker_addresses(rtos, monitor)
    rtos, monitor = _firmware()
    rtos.addresses["irq_entry"].append(0xE100900)
    with pytest.raises(TandemError, match="irq_entry is defined 2 times"):
        pathcount.marker_addresses(rtos, monitor)


def test_the_count_needs_one_host_thread(tmp_path: Path) -> None:
    with pytest.raises(TandemError, match="needs virtual or per-core timing"):
        pathcount.qemu_args(tmp_path / "x.csv", "host")


def _csv(tmp_path: Path, body: str, end: bool = True) -> Path:
    path = tmp_path / "hits.csv"
    path.write_text("core,marker,instructions\n" + body + ("-1,end,0\n" if end else ""))
    return path


def test_read_hits_checks_the_file(tmp_path: Path) -> None:
    hits = pathcount.read_hits(_csv(tmp_path, "1,requested,10\n1,started,616\n"))
    assert hits == [Hit(1, "requested", 10), Hit(1, "started", 616)]
    for body, end, why in [
        ("1,requested,10\n", False, "incomplete"),
        ("1,jumped,10\n", True, "bad row"),
        ("1,requested,ten\n", True, "bad row"),
        ("1,requested,10,4\n", True, "bad row"),
        ("1,requested,10\n1,started,9\n", True, "goes back"),
    ]:
        with pytest.raises(TandemError, match=why):
            pathcount.read_hits(_csv(tmp_path, body, end))
    (tmp_path / "hits.csv").write_text("vcpu,marker\n")
    with pytest.raises(TandemError, match="not a path count"):
        pathcount.read_hits(tmp_path / "hits.csv")


def test_local_path_is_the_requesting_cores_own_count() -> None:
    hits = [
        Hit(1, "monitor_fiq", 100),
        Hit(1, "requested", 546),
        # Another core's work in between (its turn) is not this path's.
        Hit(0, "rtos_irq", 5000),
        Hit(0, "sent", 5100),
        Hit(1, "started", 1152),
    ]
    got = pathcount.dispatch_paths(hits)
    assert got == Dispatches([DispatchPath(1, 1, 606, 0)], 0, 0)
    assert not got.paths[0].remote and got.paths[0].instructions == 606


def test_remote_path_adds_both_cores_parts() -> None:
    hits = [
        Hit(1, "requested", 1000),
        Hit(1, "sent", 1135),
        # Core 2 enters EL3 for the SGI after a turn of other vCPUs.
        Hit(3, "rtos_irq", 70000),
        Hit(2, "monitor_fiq", 2000),
        Hit(2, "rtos_irq", 2300),
        Hit(2, "started", 2856),
    ]
    got = pathcount.dispatch_paths(hits)
    assert got == Dispatches([DispatchPath(1, 2, 135, 856)], 0, 0)
    assert got.paths[0].remote and got.paths[0].instructions == 991


def test_remote_pairing_takes_the_longest_reading() -> None:
    # Two SGIs sent; core 2 entered once before the second and once after.
    hits = [
        Hit(1, "requested", 0),
        Hit(1, "sent", 100),
        Hit(2, "monitor_fiq", 1000),
        Hit(1, "sent", 300),
        Hit(2, "rtos_irq", 1500),
        Hit(2, "started", 2000),
    ]
    # First SGI: 100 + (2000 - 1000) = 1100; second: 300 + (2000 - 1500) = 800.
    paths = pathcount.dispatch_paths(hits).paths
    assert paths == [DispatchPath(1, 2, 100, 1000)]


def test_a_remote_start_without_an_sgi_and_an_entry_is_counted_not_timed() -> None:
    hits = [Hit(1, "requested", 0), Hit(2, "rtos_irq", 50), Hit(2, "started", 500)]
    assert pathcount.dispatch_paths(hits) == Dispatches([], 0, 1)
    # An entry before the SGI was sent cannot have been for it: core 2 was
    # already on its way into the RTOS and found the task queued (seen in
    # lhp's E3 with the a9-rcar-h1 memory model, 1 Dec).
    hits = [
        Hit(0, "monitor_fiq", 40),
        Hit(1, "requested", 0),
        Hit(2, "rtos_irq", 50),
        Hit(1, "sent", 100),
        Hit(2, "started", 500),
        # The next request pairs as before.
        Hit(1, "requested", 1000),
        Hit(1, "sent", 1135),
        Hit(2, "monitor_fiq", 2000),
        Hit(2, "started", 2856),
    ]
    assert pathcount.dispatch_paths(hits) == Dispatches([DispatchPath(1, 2, 135, 856)], 0, 1)


def test_starts_without_a_request_are_not_paths_and_lost_requests_are_counted() -> None:
    hits = [
        Hit(1, "started", 10),  # a job that queued behind an overrun
        Hit(1, "requested", 20),
        Hit(1, "requested", 900),  # the first found no start
        Hit(1, "started", 1506),
        Hit(1, "requested", 3000),  # the run ended first
    ]
    got = pathcount.dispatch_paths(hits)
    assert got == Dispatches([DispatchPath(1, 1, 606, 0)], 2, 0)


def test_summarize() -> None:
    paths = [
        DispatchPath(1, 1, 606, 0),
        DispatchPath(1, 1, 1917, 0),
        DispatchPath(1, 2, 135, 856),
        DispatchPath(1, 3, 887, 854),
    ]
    s = pathcount.summarize(paths)
    assert s["local"] == {"samples": 2, "min": 606, "median": 1261.5, "max": 1917}
    assert s["remote"] == {"samples": 2, "min": 991, "median": 1366.0, "max": 1741}
    assert s["remote_requesting_part"] == {"samples": 2, "min": 135, "median": 511.0, "max": 887}
    assert s["all"] == {"samples": 4, "min": 606, "median": 1366.0, "max": 1917}
    assert pathcount.summarize([])["all"] == {"samples": 0}
