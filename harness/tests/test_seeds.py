"""Linux's seeds as a factor (issue 49): the scenario key `seeds` every
experiment has, the boots it plans (each cell once per seed and
repetition, seed by seed), the summaries' `run_seeds` beside each per-boot
list (what tandem/stats.by_seed pairs cells by), and the device tree each
seed gives Linux. Host tests: no QEMU (the kept runs' boots are replayed,
test_jobs_and_shards.replay), no build (QEMU's tree is a stand-in)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from test_boot_steps import fake_qemu_dts
from test_jobs_and_shards import kept_overrides, kept_run, replay

from tandem import exp, pool, stats
from tandem.errors import TandemError
from tandem.exp import ctxsw, domains, scenario, units
from tandem.exp.common import Boot, one_seed
from tandem.platform import boot_options, dtb, memmodel, qemu_command
from tandem.platform.board import load_board
from tandem.platform.boot import ExecResult
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import KERNEL_DTS

SHIPPED_DOMAINS = (Path(__file__).resolve().parents[2] / "experiments" / "domains.toml").read_text()
# domains.toml without its seeds (issue 49's runs: five), so that the key's
# default shows.
SEEDS_LINE = "seeds = [0, 1, 2, 3, 4]\n"
assert SEEDS_LINE in SHIPPED_DOMAINS
GOOD_DOMAINS = SHIPPED_DOMAINS.replace(SEEDS_LINE, "", 1)
needs_dtc = pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")


def _domains(tmp_path: Path, text: str = GOOD_DOMAINS, **overrides: object) -> scenario.Scenario:
    (tmp_path / "domains.toml").write_text(text)
    return scenario.load("domains", domains.SCHEMA, overrides=overrides, directory=tmp_path)


def test_seeds_default_to_zero_and_take_a_list(tmp_path: Path) -> None:
    assert _domains(tmp_path).integers("seeds") == [0]
    s = _domains(tmp_path, seeds=[5, 3, 0])
    # In the order given, not sorted: the order the boots run in.
    assert s.integers("seeds") == [5, 3, 0]
    name, value = scenario.parse_override("seeds=[0,1]")
    assert (name, value) == ("seeds", [0, 1])
    # In the file, and in its [quick] table, as any key.
    text = GOOD_DOMAINS.replace("reps = 4\n", "reps = 4\nseeds = [1, 2]\n", 1)
    assert _domains(tmp_path, text).integers("seeds") == [1, 2]
    # Every experiment has it, the ones that are a scenario file alone too.
    for name in [*exp.REGISTRY, *exp.app_scenarios()]:
        # Issue 49's runs: five seeds for domains, rpc, lhp, capacity and
        # linux-rt, twenty for ctxsw (one boot per seed in per-core timing:
        # twenty pairs).
        five = ("domains", "rpc", "lhp", "capacity", "linux-rt")
        want = [0, 1, 2, 3, 4] if name in five else list(range(20)) if name == "ctxsw" else [0]
        assert scenario.load(name, exp.get(name).schema).integers("seeds") == want, name


def test_a_default_seeds_list_is_each_runs_own(tmp_path: Path) -> None:
    a, b = _domains(tmp_path), _domains(tmp_path)
    seeds = a.values["seeds"]
    assert isinstance(seeds, list) and seeds is not b.values["seeds"]
    assert seeds is not scenario.OPTIONAL["seeds"][1]


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ([3, 3], "no repeats"),
        ([-1], "each 0 or more"),
        ([], "seeds = [] is not allowed"),
        ([True], "seeds = [True] is not allowed"),
        ([1.5], "seeds = [1.5] is not allowed"),
        (3, "seeds = 3 is not allowed; want list of int, each 0 or more"),
        ("[0, 1]", "seeds = '[0, 1]' is not allowed"),
    ],
)
def test_bad_seeds_are_refused_saying_what_is_allowed(
    tmp_path: Path, value: object, where: str
) -> None:
    with pytest.raises(TandemError, match=re.escape(where)) as e:
        _domains(tmp_path, seeds=value)
    assert "Linux's seeds" in str(e.value)
    text = GOOD_DOMAINS.replace("reps = 4\n", "reps = 4\nseeds = [2, 2]\n", 1)
    with pytest.raises(TandemError, match=re.escape(f"{tmp_path / 'domains.toml'}: seeds")):
        _domains(tmp_path, text)


def test_a_negative_seed_is_refused_by_the_boot_options_too() -> None:
    with pytest.raises(TandemError, match="Linux's seed must be 0 or more, got -2"):
        boot_options.check(BootOptions(linux_seed=-2))


def _cell(label: str) -> str:
    """A boot's cell: its label without its seed and repetition."""
    return re.sub(r"-?seed\d+-rep\d+$", "", label)


def test_seeds_and_reps_plan_each_cells_boots_seed_by_seed() -> None:
    """seeds [3, 5] and reps 2: four boots per cell, seed 3's two
    repetitions then seed 5's, each at its repetition's phase, every cell
    of one seed and repetition back to back (the boots a claim pairs)."""
    for name in ("capacity", "domains", "linux-rt", "rpc"):
        s = scenario.load(
            name, exp.get(name).schema, quick=True, overrides={"seeds": [3, 5], "reps": 2}
        )
        boots = exp.get(name).units(s)
        cells: dict[str, list[Boot]] = {}
        for b in boots:
            cells.setdefault(_cell(b.label), []).append(b)
        for cell, mine in cells.items():
            assert [(b.options.linux_seed, b.options.phase_us) for b in mine] == [
                (3, 0),
                (3, 1370),
                (5, 0),
                (5, 1370),
            ], (name, cell)
            assert [b.label.removeprefix(cell) for b in mine] == [
                f"{'-' if cell else ''}seed{n}-rep{r}" for n, r in ((3, 1), (3, 2), (5, 1), (5, 2))
            ], (name, cell)
        # Run order: every cell of (seed, rep) before the next (seed, rep).
        runs = [(b.options.linux_seed, b.options.phase_us) for b in boots]
        assert runs == sorted(runs, key=lambda r: ([3, 5].index(r[0]), r[1])), name
        assert len({b.label for b in boots}) == len(boots) == 4 * len(cells), name


def test_lhp_and_ctxsw_plan_every_part_per_seed() -> None:
    s = scenario.load(
        "lhp",
        exp.get("lhp").schema,
        quick=True,
        overrides={"seeds": [3, 5], "reps": 2, "sweep_reps": 2, "patch_boots": 2},
    )
    boots = exp.get("lhp").units(s)
    seeds = Counter(b.options.linux_seed for b in boots)
    assert seeds[3] == seeds[5] == len(boots) // 2
    labels = [b.label for b in boots]
    assert "e1-alone-seed5-rep2" in labels and "e2-static-seed3-rep1" in labels
    assert "patch-on-seed5-boot2" in labels and "e3-migrate-seed3" in labels
    # E2's modes of one seed and repetition, and the patch's off / on, adjacent.
    e2 = [b.label for b in boots if b.label.startswith("e2-")]
    assert [x.split("-seed")[1] for x in e2] == sorted(
        (x.split("-seed")[1] for x in e2), key=lambda r: (r[0], r[-1])
    )
    patch = [b.label for b in boots if b.label.startswith("patch-")]
    assert patch[:2] == ["patch-off-seed3-boot1", "patch-on-seed3-boot1"]
    s = scenario.load("ctxsw", ctxsw.SCHEMA, quick=True, overrides={"seeds": [3, 5]})
    boots = [b for b in exp.get("ctxsw").units(s) if not b.label.startswith("path-")]
    assert {b.options.linux_seed for b in boots} == {3, 5}
    first = [b.label for b in boots[: len(s.texts("modes"))]]
    # asid and flush of one cell, seed and repetition back to back.
    assert len({re.sub(r"-(asid|flush)-", "-", x) for x in first}) == 1, first


def test_with_seed_0_alone_the_labels_are_as_before() -> None:
    s = scenario.load("capacity", exp.get("capacity").schema, quick=True)
    assert all(re.search(r"-rep\d+$", b.label) for b in exp.get("capacity").units(s))
    assert not any("seed" in b.label for b in exp.get("capacity").units(s))
    s = scenario.load("capacity", exp.get("capacity").schema, quick=True, overrides={"seeds": [4]})
    assert all("-seed4-rep" in b.label for b in exp.get("capacity").units(s))


@pytest.mark.parametrize("name", ["trace", "switch", "latency", "rpmsg", "restart", "memory"])
def test_an_experiment_that_boots_once_takes_one_seed(name: str) -> None:
    schema = exp.get(name).schema
    s = scenario.load(name, schema, quick=True, overrides={"seeds": [7]})
    assert {b.options.linux_seed for b in exp.get(name).units(s)} == {7}
    s = scenario.load(name, schema, quick=True, overrides={"seeds": [0, 1]})
    with pytest.raises(TandemError, match=r"seeds = \[0, 1\] is not allowed; .* one Linux seed"):
        exp.get(name).units(s)
    with pytest.raises(TandemError, match="takes one Linux seed"):
        one_seed(s, "it boots once")


def _reseeded(kept: Path, logs: Path) -> object:
    """The kept run's boots replayed for any seed: a boot labelled with a
    seed prints what the kept boot of its label without the seed printed
    (so every seed's values are the kept run's, in the kept order)."""
    inner = replay(kept, logs)

    def plain(label: str) -> str:
        return re.sub(r"-seed\d+$", "", re.sub(r"(^|-)seed\d+-", r"\1", label))

    # A kept run made over seeds (rpc's since 1 Dec) replays its lowest
    # seed's boots for every seed.
    with tarfile.open(kept / "raw.tar.xz") as tar:
        labels = sorted(
            Path(n).name.removesuffix(".console.log")
            for n in tar.getnames()
            if n.endswith(".console.log")
        )
    first: dict[str, str] = {}
    for label in labels:
        first.setdefault(plain(label), label)

    def boot(unit: Boot, ctx: pool.Context) -> ExecResult:
        label = first[plain(unit.label)]
        return inner(Boot(label, unit.options, unit.script, keep=unit.keep), ctx)

    return boot


# Per-boot lists of each experiment's rows, which run_seeds sits beside.
PER_BOOT = {
    "capacity": [("rows", "runs_s")],
    "domains": [("rows", "rep_max_us"), ("rows", "rep_avg_us")],
    "linux-rt": [("rows", "rep_max_us"), ("rows", "rep_p99_us"), ("cause", "rep_max_us")],
    "rpc": [("rows", "runs_ms")],
    "lhp": [
        ("period_sweep", "long_spin_waits_runs"),
        ("bench", "runs_s"),
        ("overhead", "rep_max_us"),
        ("overhead", "handoff_wait_rep_max_us"),
        ("patch", "runs_s"),
    ],
}


@pytest.mark.parametrize("name", sorted(PER_BOOT))
def test_run_seeds_line_up_with_each_per_boot_list(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept run's boots replayed for seeds [3, 5]: every per-boot list is
    the kept one for seed 3, then the same for seed 5, and `run_seeds`
    beside it says so; the summary records the seeds; stats.by_seed pairs
    a cell with itself into zero differences on both seeds."""
    kept = kept_run(name)
    summary = json.loads((kept / "summary.json").read_text())
    overrides = kept_overrides(name, summary)
    monkeypatch.setattr(units, "boot", _reseeded(kept, tmp_path / "logs"))
    if name == "lhp":
        overrides["patch_runs"] = 15  # test_jobs_and_shards.LHP_QUICK
    out = exp.run(
        name, summary["quick"], overrides | {"seeds": [3, 5]}, out_root=tmp_path / "r", jobs=2
    )
    once = exp.run(
        name, summary["quick"], overrides | {"seeds": [0]}, out_root=tmp_path / "r", jobs=2
    )
    got = json.loads((out / "summary.json").read_text())
    base = json.loads((once / "summary.json").read_text())
    assert got["seeds"] == [3, 5] and got["scenario"]["seeds"] == [3, 5]
    assert base["seeds"] == [0]
    # The report says which seeds; a run of seed 0 alone reads as before.
    assert "for each of Linux's seeds 3, 5" in (out / "report.md").read_text()
    assert "Linux's seeds" not in (once / "report.md").read_text()
    checked = 0
    for part, key in PER_BOOT[name]:
        rows, base_rows = got.get(part) or [], base.get(part) or []
        assert len(rows) == len(base_rows), (part, key)
        for row, b in zip(rows, base_rows, strict=True):
            if key not in b:
                continue
            n = len(b[key])
            assert b["run_seeds"] == [0] * n, (part, key)
            assert row[key] == b[key] + b[key], (part, key)
            assert row["run_seeds"] == [3] * n + [5] * n, (part, key)
            by = stats.by_seed(row, key)
            assert by == {3: [float(x) for x in b[key]], 5: [float(x) for x in b[key]]}
            assert stats.differences(by, by) == {3: [0.0] * n, 5: [0.0] * n}
            checked += 1
    assert checked, name
    if name == "lhp":
        assert (
            "alone on the boot's Linux seed in this run (seed 3: "
            in (out / "report.md").read_text()
        )
        # One threshold of "long" per seed, each Linux alone's longest.
        assert got["thresholds"] == [
            {"seed": seed, "us": base["long_spin_threshold_us"]} for seed in (3, 5)
        ]
        assert got["baseline_run_seeds"] == [3] * len(base["baseline_longest"]) + [5] * len(
            base["baseline_longest"]
        )
    raw = {p.name for p in (out / "raw").iterdir()} if (out / "raw").is_dir() else set()
    names = raw or {
        n
        for n in subprocess.run(
            ["tar", "-tJf", str(out / "raw.tar.xz")], check=True, capture_output=True, text=True
        ).stdout.split()
    }
    # Every raw file of a boot names its seed.
    boot_files = [n for n in names if n.endswith(".console.log")]
    assert boot_files and all("seed3" in n or "seed5" in n for n in boot_files), boot_files


def test_ctxsw_rows_keep_each_boots_time_and_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctxsw (no kept raw data to replay): each cell's boots' ns per
    hand-off in runs_ns, with run_seeds, from a made-up record per boot;
    with a memory profile, each boot's translation stall per hand-off
    from a made-up memmodel.json, and the median as model_refill_ns."""
    s = scenario.load(
        "ctxsw",
        ctxsw.SCHEMA,
        quick=True,
        overrides={"seeds": [3, 5], "timings": ["percore"], "profiles": ["none", "a53"]},
    )
    boots = [b for b in exp.get("ctxsw").units(s) if not b.label.startswith("path-")]
    assert len(boots) == 2 * 2 * len(s.texts("modes")) * len(s.integers("pages"))
    modelled = [b for b in boots if b.options.timing.memmodel == "a53"]
    assert len(modelled) == len(boots) // 2
    assert all(b.keep == ("memmodel.json",) and "-a53-" in b.label for b in modelled)
    assert all(b.keep == () and "-a53-" not in b.label for b in boots if b not in modelled)

    seen: list[tuple[int, str]] = []

    def fake_record(lines: list[str], where: str) -> dict[str, int]:
        label = where.split(" ")[0]
        boot = next(b for b in boots if b.label == label)
        assert boot.options.ctxsw is not None
        seen.append((boot.options.linux_seed, label))
        return {
            "mode": ["asid", "flush"].index(boot.options.ctxsw.mode),
            "pages": boot.options.ctxsw.pages,
            "switches": 10,
        }

    class FakeMeasured:
        def lines(self, label: str) -> list[str]:
            return []

        def where(self, label: str) -> str:
            return f"{label} (console)"

        def text(self, label: str, name: str) -> str:
            # Seed 3's boot stalled 50 ns per hand-off translating, seed 5's 70.
            assert name == "memmodel.json" and "-a53-" in label
            stall = 500 if "-seed3-" in label else 700
            return json.dumps({"cores": [{"translation_stall_ns": stall}]})

    monkeypatch.setattr(ctxsw, "parse_record", fake_record)
    # Seed 3's hand-offs take 100 ns, seed 5's 200 ns.
    monkeypatch.setattr(
        ctxsw, "per_switch", lambda record, hz: (100.0 * (1 + (seen[-1][0] == 5)), 90.0)
    )
    monkeypatch.setattr(ctxsw, "_path_timing", lambda s: None)
    summary = ctxsw.summarize(s, tmp_path, FakeMeasured())  # type: ignore[arg-type]
    rows = summary["rows"]
    assert isinstance(rows, list) and rows
    for row in rows:
        assert row["runs_ns"] == [100.0, 200.0] and row["run_seeds"] == [3, 5]
        assert row["boots"] == 2
        if row["profile"] == "a53":
            assert row["model_refill_runs_ns"] == [50.0, 70.0]
            assert row["model_refill_ns"] == 60.0
        else:
            assert row["profile"] == "none" and "model_refill_ns" not in row
    assert {r["profile"] for r in rows} == {"none", "a53"}
    assert summary["seeds"] == [3, 5]
    # A model named in memmodel is refused: each boot's is its profile's.
    with pytest.raises(TandemError, match="name them in `profiles`"):
        exp.get("ctxsw").units(scenario.load("ctxsw", ctxsw.SCHEMA, overrides={"memmodel": "a53"}))
    # A stats file without the tasks' core is an error, not a zero.
    with pytest.raises(TandemError, match="no counters for 1 core"):
        ctxsw.translation_stall_ns(json.dumps({"cores": []}), 1, "x")
    with pytest.raises(TandemError, match="core 0's translation_stall_ns is -1"):
        ctxsw.translation_stall_ns(json.dumps({"cores": [{"translation_stall_ns": -1}]}), 1, "x")
    # One reader for every counter (bench memory's hand-offs too): a missing
    # one is an error, not a None.
    with pytest.raises(TandemError, match="core 0's main_tlb_misses is None"):
        memmodel.core_counter({"cores": [{"translation_stall_ns": 5}]}, 0, "main_tlb_misses", "x")


def _fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """QEMU's dump behind dtb.qemu_dts, without QEMU: each dump writes
    test_boot_steps' stand-in for QEMU's tree with fresh random seeds in
    /chosen (as QEMU does), through dtc. Returns the list the dumps are
    counted in."""
    dumps: list[int] = []
    monkeypatch.setattr(dtb, "DTB_DIR", tmp_path / "dtb")

    def run(argv: list[str], what: str) -> subprocess.CompletedProcess[bytes]:
        if argv == qemu_command.version_argv():
            return subprocess.CompletedProcess(argv, 0, b"QEMU emulator version 0.0\n", b"")
        out = Path(argv[argv.index("-machine") + 1].split("dumpdtb=")[1].split(",")[0])
        words = " ".join(f"0x{(len(dumps) * 97 + i) * 7919:08x}" for i in range(10))
        rng, kaslr = words.split()[:8], words.split()[8:]
        source = tmp_path / "dump.dts"
        chosen = f"\tchosen {{ rng-seed = <{' '.join(rng)}>; kaslr-seed = <{' '.join(kaslr)}>; }};"
        source.write_text(fake_qemu_dts(load_board(), 4).replace("\tchosen { };", chosen))
        subprocess.run(
            ["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(out), str(source)], check=True
        )
        dumps.append(1)
        return subprocess.CompletedProcess(argv, 0, b"", b"")

    monkeypatch.setattr(qemu_command, "run", run)
    return dumps


@needs_dtc
def test_seed_3s_device_tree_differs_from_seed_0s_and_is_the_same_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumps = _fake_qemu(tmp_path, monkeypatch)
    board = load_board()
    zero = dtb.qemu_dts(board, 4)
    three = dtb.qemu_dts(board, 4, seed=3)
    again = dtb.qemu_dts(board, 4, seed=3)
    assert len(dumps) == 1, "the dump is cached, whatever the seed"
    assert three != zero and three == again
    # A fresh cache (another build folder): QEMU's new random words, the
    # same trees.
    monkeypatch.setattr(dtb, "DTB_DIR", tmp_path / "other")
    assert dtb.qemu_dts(board, 4, seed=3) == three and dtb.qemu_dts(board, 4) == zero
    assert len(dumps) == 2
    # Only the seeds differ between the two.
    seeds = re.compile(r"(?:rng|kaslr)-seed = <[^>]*>;")
    assert seeds.sub("", three) == seeds.sub("", zero)
    assert dtb.seed_words(3)[:4].hex() in three.replace("0x", "").replace(" ", "")


@needs_dtc
def test_a_boots_device_tree_has_its_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through build_dtb, as a boot's preparation calls it."""
    _fake_qemu(tmp_path, monkeypatch)
    board = load_board()

    def tree(seed: int, name: str) -> bytes:
        out = tmp_path / f"{name}.dtb"
        dtb.build_dtb(board, 4, [0, 1], "console=ttyAMA0", 4096, out, seed=seed)
        return out.read_bytes()

    assert tree(3, "a") == tree(3, "b") != tree(0, "c")


def test_a_tree_without_seeds_gets_them_for_a_seed_other_than_0() -> None:
    """The EVK's tree from the kernel source has no seeds: seed 0 leaves
    it as every run on it booted, another seed adds /chosen's."""
    tree = '/dts-v1/;\n/ {\n\tchosen {\n\t\tstdout-path = "/serial@30890000";\n\t};\n};\n'
    assert dtb.add_seeds(tree, 0) == tree
    three = dtb.add_seeds(tree, 3)
    assert three.startswith(tree) and three != dtb.add_seeds(tree, 4)
    assert three == dtb.add_seeds(tree, 3)
    seeds = re.findall(r"(rng-seed|kaslr-seed) = <([^>]*)>;", three)
    assert [(k, len(v.split())) for k, v in seeds] == [("rng-seed", 8), ("kaslr-seed", 2)]
    assert f"0x{dtb.seed_words(3)[:4].hex()}" in three
    with pytest.raises(TandemError, match="already has seeds"):
        dtb.add_seeds(three, 3)
    with pytest.raises(TandemError, match="negative"):
        dtb.add_seeds(tree, -1)


@needs_dtc
def test_the_evks_tree_with_a_seed_compiles(tmp_path: Path) -> None:
    """The EVK's own tree (from the build, if made) with seed 3's /chosen
    seeds: dtc takes it, and the seeds are in /chosen."""
    board = load_board("imx8mp-evk")
    assert board.linux_dtb is not None
    if not (KERNEL_DTS / board.linux_dtb).exists():
        pytest.skip("the EVK's tree is not built")
    source = tmp_path / "evk.dts"
    source.write_text(dtb.qemu_dts(board, 4, seed=3))
    out = tmp_path / "evk.dtb"
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(out), str(source)], check=True)
    back = subprocess.run(
        ["dtc", "-q", "-I", "dtb", "-O", "dts", str(out)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    chosen = back[back.index("\tchosen {") :]
    chosen = chosen[: chosen.index("\t};")]
    assert "rng-seed = <" in chosen and "kaslr-seed = <" in chosen
    assert dtb.qemu_dts(board, 4) == dtb.kernel_dts(board, 4)
