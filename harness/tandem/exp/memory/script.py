"""What the `memory` experiment's membench boots run: `tandem-membench`'s
pointer chase, contention and TLB sweep, with the line size and the TLB
sweep's page counts its memory profile decides (its ctxsw boots run
`instruments/handoffs.py`'s script)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tandem.exp.memory.spec import CHASE_SIZES, DRAM_SIZE, STREAMS

# Marks each part of a membench boot's output (parse.py reads by them).
MARK = "@@MEMBENCH"


def line_bytes(profile: Mapping[str, object]) -> int:
    l1d = profile["l1d"]
    assert isinstance(l1d, dict)
    return int(l1d["line_bytes"])


def tlb_pages(profile: Mapping[str, object]) -> list[int]:
    """The page counts swept: every count around each TLB's size, sparser between."""
    tlb = profile["tlb"]
    assert isinstance(tlb, dict)
    micro, main = int(tlb["micro_data_entries"]), int(tlb["main_entries"])
    pages = {1, 2, 4}
    pages |= set(range(max(1, micro - 3), micro + 4))
    pages |= set(range(max(1, main - 4), main + 5))
    p = 16
    while p < 4 * main:
        pages.add(p)
        p *= 2
    pages |= {main * 3 // 4, main * 3 // 2, 2 * main, 4 * main}
    pages |= set(overflow_pages(main, int(tlb["main_ways"])))
    return sorted(pages)


def overflow_pages(main: int, ways: int) -> list[int]:
    """Eight page counts over the main TLB's set overflow, from its size to
    a set more than its size per set (main + main / ways): there the main
    knee is read as where a line crosses the plateau (parse.knees)."""
    sets = max(1, main // ways)
    return [main + sets * j // 8 for j in range(1, 9)]


def script(
    profile: Mapping[str, object], loads: int, tlb_loads: int, pages: Sequence[int] = ()
) -> str:
    """One boot's guest commands (the profile decides line size and TLB
    sweep; `pages`, if given, the TLB sweep's page counts)."""
    line = line_bytes(profile)
    sizes = " ".join(str(s) for s in CHASE_SIZES)
    swept = " ".join(str(p) for p in (pages or tlb_pages(profile)))
    contend = "\n".join(
        f"tandem-membench contend -l {line} -n {loads} {DRAM_SIZE} {k}" for k in STREAMS
    )
    return (
        "set -e\n"
        f"echo {MARK} chase\n"
        f"tandem-membench chase -l {line} -n {loads} {sizes}\n"
        f"echo {MARK} contend\n"
        f"{contend}\n"
        f"echo {MARK} tlb\n"
        f"tandem-membench tlb -n {tlb_loads} {swept}\n"
        f"echo {MARK} end\n"
    )
