"""Linux's seeds in QEMU's device tree: QEMU writes random `rng-seed` and
`kaslr-seed` words into every tree it dumps, so two build folders (two
machines, a fresh clone) booted the same commit into different runs; the
harness pins them (`dtb.pin_seeds`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import dtb
from tandem.platform.board import load_board

SEEDS = re.compile(r"(?:rng|kaslr)-seed = <[^>]*>;")


def _tree(rng: str, kaslr: str) -> str:
    return (
        "/ {\n\tchosen {\n"
        f"\t\trng-seed = <{rng}>;\n\t\tkaslr-seed = <{kaslr}>;\n"
        '\t\tstdout-path = "/pl011@9000000";\n\t};\n};\n'
    )


def test_two_dumps_with_different_seeds_give_one_tree() -> None:
    a = _tree("0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", "0x9 0xa")
    b = _tree("0xb 0xc 0xd 0xe 0xf 0x10 0x11 0x12", "0x13 0x14")
    assert a != b
    assert dtb.pin_seeds(a) == dtb.pin_seeds(b)
    pinned = dtb.pin_seeds(a)
    # Only the seeds change, each keeping its number of cells.
    assert SEEDS.sub("", pinned) == SEEDS.sub("", a)
    assert [len(s.split()) for s in SEEDS.findall(pinned)] == [10, 4]


def test_each_linux_seed_gives_its_own_fixed_words() -> None:
    tree = _tree("0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", "0x9 0xa")
    # Seed 0 is what every run before issue 49 booted with.
    assert dtb.pin_seeds(tree, 0) == dtb.pin_seeds(tree)
    words = {tuple(SEEDS.findall(dtb.pin_seeds(tree, seed))) for seed in range(6)}
    assert len(words) == 6, "two seeds gave the same words"
    assert dtb.pin_seeds(tree, 3) == dtb.pin_seeds(_tree("0xff " * 7 + "0xff", "0x0 0x0"), 3)
    # Seed 0's words are those the kept runs booted with.
    kept = hashlib.sha256(b"tandem: Linux's seeds, the same for every build").digest()
    assert dtb.seed_words(0) == kept
    first = int.from_bytes(kept[:4], "big")
    assert f"rng-seed = <0x{first:08x} " in dtb.pin_seeds(tree)
    with pytest.raises(TandemError, match="negative"):
        dtb.pin_seeds(tree, -1)


def test_a_seed_of_an_unexpected_size_is_refused() -> None:
    with pytest.raises(TandemError, match="rng-seed of 9 cells"):
        dtb.pin_seeds(_tree(" ".join(["0x1"] * 9), "0x1 0x2"))


@pytest.mark.qemu
def test_two_build_folders_dump_the_same_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check that failed before the seeds were pinned: QEMU's tree
    dumped into two empty caches, as on two machines."""
    board = load_board()
    trees = []
    for folder in ("first", "second"):
        monkeypatch.setattr(dtb, "DTB_DIR", tmp_path / folder)
        trees.append(dtb.qemu_dts(board, 4))
    assert SEEDS.findall(trees[0]), "QEMU's tree has no seeds to pin"
    assert trees[0] == trees[1]


@pytest.mark.qemu
def test_the_evk_tree_from_the_kernel_source_has_no_seeds() -> None:
    """The i.MX 8M Plus EVK boots the kernel source's own tree, placed by
    QEMU's generic loader, which leaves it as it is: nothing random there
    to pin, and the check says so if that ever changes."""
    tree = dtb.qemu_dts(load_board("imx8mp-evk"), 4)
    assert not SEEDS.findall(tree)
