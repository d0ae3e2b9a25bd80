"""The main TLB's knee read as the change point of the sweep around its
set overflow (exp/memory/parse.main_crossing), on made-up sweeps that go either way,
and the older rule kept for runs whose sweep lacks the overflow."""

from __future__ import annotations

import pytest

from tandem.exp.memory.parse import knees, main_knee_tolerance
from tandem.exp.memory.script import overflow_pages, tlb_pages
from tandem.platform import memmodel

PLATEAU = 2.0
WALK_NS = 5.0


def _profile(main: int = 512, ways: int = 4, micro: int = 10) -> dict[str, object]:
    return {
        "tlb": {
            "micro_data_entries": micro,
            "main_entries": main,
            "main_ways": ways,
            "main_hit_ns": 1.6,
        }
    }


def _sweep(entries: int, ways: int, pages: list[int], noise: float = 0.0) -> dict[int, float]:
    """Stall per load of a cyclic sweep over a main TLB of `entries`
    entries in `ways` ways (LRU), above a micro-miss plateau; `noise`
    alternates in sign from point to point."""
    sets = entries // ways
    out = {}
    for i, p in enumerate(pages):
        if p <= 10:
            stall = 0.0
        elif p <= entries:
            stall = PLATEAU
        elif p <= entries + sets:
            stall = PLATEAU + WALK_NS * (ways + 1) * (p - entries) / p
        else:
            stall = PLATEAU + WALK_NS
        out[p] = stall + (noise if i % 2 else -noise)
    return out


def test_the_sweep_covers_each_profiles_main_tlb_overflow() -> None:
    for name in ("a53", "arm11-003"):
        profile = memmodel.profile(name)
        tlb = profile["tlb"]
        assert isinstance(tlb, dict)
        over = overflow_pages(int(tlb["main_entries"]), int(tlb["main_ways"]))
        assert len(set(over)) == 8 and set(over) <= set(tlb_pages(profile)), name
    assert overflow_pages(512, 4) == [528, 544, 560, 576, 592, 608, 624, 640]


def test_a_main_tlb_of_its_size_is_met_and_one_of_another_size_is_not() -> None:
    profile = _profile()
    pages = tlb_pages(profile)
    met = knees(profile, _sweep(512, 4, pages, noise=0.4))
    assert met["main_rule"] == "change point" and met["main_ok"], met
    assert abs(int(str(met["main_knee"])) - 512) <= 3, met
    # A main TLB that overflows 16 entries early: beyond the 8 allowed.
    early = knees(profile, _sweep(496, 4, pages, noise=0.4))
    assert not early["main_ok"] and int(str(early["main_knee"])) < 504, early
    assert main_knee_tolerance(512) == 8 and main_knee_tolerance(64) == 2


def test_a_sweep_that_never_rises_has_no_main_knee() -> None:
    profile = _profile()
    flat = {p: (0.0 if p <= 10 else PLATEAU) for p in tlb_pages(profile)}
    k = knees(profile, flat)
    assert k["main_knee"] is None and not k["main_ok"], k


def test_a_sweep_without_the_overflow_is_read_by_the_older_rule() -> None:
    """Runs before 30 Nov swept only around the main TLB's size: their
    summaries, remade from raw data, keep the older rule's knee."""
    profile = _profile()
    over = set(overflow_pages(512, 4))
    pages = [p for p in tlb_pages(profile) if p not in over]
    k = knees(profile, _sweep(512, 4, pages))
    # Even on an exact sweep the older rule reads two entries late: the
    # overflow's first sets add under its 0.1 ns.
    assert "main_rule" not in k and k["main_knee"] == 514 and k["main_ok"], k


@pytest.mark.parametrize("ways", [2, 4])
def test_the_crossing_is_exact_without_noise(ways: int) -> None:
    profile = _profile(main=64, ways=ways, micro=8)
    k = knees(profile, _sweep(64, ways, tlb_pages(profile)))
    assert k["main_knee"] == 64 and k["main_ok"], k
