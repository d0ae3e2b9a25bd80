"""Runs measured boot by boot, with boots side by side (`--jobs`) and in
shards merged afterwards (`--shard`, `tandem exp merge`) give the same run.

The host tests replay a kept run's boots (`replay`: each boot's console
log and instrument files from its raw.tar.xz, in place of QEMU), so they
check the harness's side: the split, the pool, the raw data, the merge's
checks and the summary made from raw data. The QEMU test checks the guest's
side: boots side by side measure what boots one after another do."""

from __future__ import annotations

import importlib
import io
import json
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tandem import exp, pool, provenance
from tandem.errors import TandemError
from tandem.exp import pending, scenario, shards, units
from tandem.exp.common import Boot, finished_runs
from tandem.exp.shards import Shard
from tandem.platform.boot import ExecResult, PartitionResult
from tandem.platform.commands_output import read_console_log, script_output
from tandem.platform.paths import RESULTS

# What differs between runs of the same boots and is not a measurement:
# what made the run and where (provenance), how long the host took, the
# host's load, how many boots ran side by side.
HOST_FACTS = ("provenance", "host_seconds", "host_loadavg_before", "parallel_boots")
# Values a summary takes from another kept run, not from its boots: rpc's
# world-switch round trip is the latest `bench switch` run's (issue 50
# shortened the switch after the kept rpc run, from 278 to 203 ns).
REFERENCES = ("switch_round_trip_ns", "switch_run")
# A run's `command` is how to make it again with the harness's defaults of
# the day; these keys' defaults changed after runs were kept: per-core
# timing's counter rule (off, then lamport since issue 47).
INVOCATION = ("command",)
# What a kept run's scenario lacks it ran with: keys added, or given a
# default other than what was measured before, after it was kept (domains'
# issue 49 defaults of 30 Nov: the arm11-003 model with windows, the
# paper's reads-only load, five seeds; ctxsw's profiles none and a53).
KEPT_WITHOUT: dict[str, object] = {
    "memmodel": "none",
    "windows": False,
    "memory_load": "memrate",
    "seeds": [0],
    "profiles": ["none"],
}
CHANGED_DEFAULTS = ("causal", *KEPT_WITHOUT)
# Defaults an experiment's scenario changed after its kept run, per
# experiment: rpc's issue-49 run (1 Dec) boots 4 repetitions of each seed
# with one task-pair run per boot; lhp, capacity and linux-rt boot 4
# repetitions of each seed for issue 49 (1 Dec, before their runs).
CHANGED_SINCE_KEPT: dict[str, tuple[str, ...]] = {
    "rpc": ("reps", "pair_runs"),
    "lhp": ("reps", "sweep_reps"),
    "capacity": ("reps",),
    "linux-rt": ("reps",),
}


def kept_overrides(name: str, summary: dict[str, object]) -> dict[str, object]:
    """The overrides that make today's scenario of `name` the kept run's:
    its values where today's defaults differ, and for a key its scenario
    lacks, what it ran with (KEPT_WITHOUT)."""
    here = scenario.load(name, exp.get(name).schema, quick=bool(summary["quick"]))
    kept = summary["scenario"]
    assert isinstance(kept, dict)
    overrides = {k: v for k, v in kept.items() if here.values.get(k) != v}
    for k, v in KEPT_WITHOUT.items():
        if k not in kept and k in here.values and here.values[k] != v:
            overrides[k] = v
    return overrides


def measurements(value: object) -> object:
    """A summary without HOST_FACTS and REFERENCES, at any depth."""
    if isinstance(value, dict):
        return {
            k: measurements(v)
            for k, v in value.items()
            if k not in HOST_FACTS and k not in REFERENCES and k not in INVOCATION
        }
    if isinstance(value, list):
        return [measurements(v) for v in value]
    return value


def contains(kept: object, new: object, where: str = "") -> list[str]:
    """Where `new` lacks or changes a value of `kept` (new keys are fine)."""
    if isinstance(kept, dict) and isinstance(new, dict):
        out = []
        for key, value in kept.items():
            if key not in new:
                out.append(f"{where}.{key}: missing")
            else:
                out += contains(value, new[key], f"{where}.{key}")
        return out
    if isinstance(kept, list) and isinstance(new, list) and len(kept) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(kept, new, strict=True))
            for d in contains(a, b, f"{where}[{i}]")
        ]
    return [] if kept == new else [f"{where}: {str(kept)[:80]} / {str(new)[:80]}"]


def replay(run: Path, logs: Path) -> Callable[[Boot, pool.Context], ExecResult]:
    """A stand-in for booting (units.boot): each boot "prints" what the
    boot of the same label printed in `run` (its kept console logs) and its
    instruments "write" that boot's kept files, into a log directory under
    `logs` as run_exec would."""
    with tarfile.open(run / "raw.tar.xz") as tar:
        kept = {
            m.name.removeprefix("raw/"): f.read()
            for m in tar.getmembers()
            if (f := tar.extractfile(m)) is not None
        }

    def boot(unit: Boot, ctx: pool.Context) -> ExecResult:
        assert not ctx.cancel.is_set()
        logs.mkdir(parents=True, exist_ok=True)
        log_dir = Path(tempfile.mkdtemp(prefix=f"{unit.label}-", dir=logs))
        console = kept[f"{unit.label}.console.log"]
        (log_dir / "console.log").write_bytes(console)
        (log_dir / "secure.log").write_bytes(kept.get(f"{unit.label}.secure.log", b""))
        for name in unit.keep:
            (log_dir / name).write_bytes(kept[f"{unit.label}.{name}"])
        others = {}
        for name, _ in unit.options.partition_scripts:
            log = log_dir / f"console-{name}.log"
            log.write_bytes(kept[f"{unit.label}.{name}.console.log"])
            status, lines = script_output(log.read_text().splitlines())
            others[name] = PartitionResult(1 if status is None else status, lines, log)
        out = read_console_log(console)
        return ExecResult(
            status=1 if out.status is None else out.status,
            output="\n".join(out.lines),
            console_log=log_dir / "console.log",
            secure_log=log_dir / "secure.log",
            qemu_status=0,
            boot_s=0.0,
            poweroff_s=0.0,
            reboots=out.reboots,
            lines=out.lines,
            partitions=others,
        )

    return boot


# The kept runs whose every boot's console is in their raw archive.
REMADE = ("lhp", "capacity", "linux-rt", "rpc", "domains", "rpmsg", "memory")


def kept_run(name: str) -> Path:
    """The kept run of `name` a test replays: its `latest`, or its newest
    run where results/ keeps no `latest` link for it (memory's)."""
    latest = RESULTS / name / "latest"
    if latest.exists():
        return latest.resolve()
    runs = finished_runs(name, RESULTS)
    assert runs, f"no kept run of {name}"
    return RESULTS / name / runs[0][0]


@pytest.mark.parametrize("name", REMADE)
def test_a_kept_run_is_remade_from_its_raw_data(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every value of a kept run's summary comes back when its boots are
    replayed, two at a time: the summary is made from the raw data alone,
    and the pool hands each boot's data to its unit."""
    kept = kept_run(name)
    summary = json.loads((kept / "summary.json").read_text())
    overrides = kept_overrides(name, summary)
    monkeypatch.setattr(units, "boot", replay(kept, tmp_path / "logs"))
    out = exp.run(name, summary["quick"], overrides, out_root=tmp_path / "r", jobs=2)
    remade = json.loads((out / "summary.json").read_text())
    assert contains(measurements(summary), measurements(remade)) == []
    # A new run of an experiment with claims declares the statistics it is
    # judged by (issue 49's, tandem/stats.py); one without claims does not.
    has_claims = exp.get(name).claims is not exp.no_claims
    assert remade.get("stats") == ("issue-49" if has_claims else None), name
    # The command reproduces the run with today's defaults: a default
    # changed since (the counter's rule, 30 Nov) adds its `--set`, nothing else.
    # A setting that is today's default (domains' model since 30 Nov) drops out.
    kept_command, remade_command = summary.get("command"), str(remade.get("command"))
    if kept_command is not None:
        kept_words, remade_words = shlex.split(str(kept_command)), shlex.split(remade_command)
        added = [w for w in remade_words if w not in kept_words]
        dropped = [w for w in kept_words if w not in remade_words]
        changed = (*CHANGED_DEFAULTS, *CHANGED_SINCE_KEPT.get(name, ()))
        assert all(w == "--set" or w.split("=")[0] in changed for w in added), added
        assert all(w == "--set" or w.split("=")[0] not in overrides for w in dropped), dropped


# What a fidelity row holds that the host measured, not the guest: a
# replay has none (units.boot's stand-in reads no clocks).
FIDELITY_HOST_TIMES = ("boot_s", "hackbench_s", "boot_user_s", "hackbench_user_s")


def test_fidelitys_kept_run_is_remade_from_its_raw_data_with_the_same_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept run of `bench fidelity --memmodel a53 --quanta 1000`:
    `exp run fidelity` with its options boots the same labels with the same
    scripts, byte for byte, and its consoles give the same rows and the
    same checks (a), (b) and (d); (e) is the host's, which a replay lacks.
    (The run this test first replayed, 20261129-133226, was made by the
    bench before it was an experiment: `git show daac05c:results/fidelity`.)"""
    kept = RESULTS / "fidelity" / "20261129-224747"
    summary = json.loads((kept / "summary.json").read_text())
    command = "./tandem exp run fidelity --set 'quanta=[1000]' --set memmodel=a53"
    assert summary["command"] == command
    monkeypatch.setattr(units, "boot", replay(kept, tmp_path / "logs"))
    # The model's profile is read by a built tool, which a host test lacks;
    # what made the run is not what this test compares.
    fidelity = importlib.import_module("tandem.exp.fidelity")
    monkeypatch.setattr(fidelity, "memmodel_provenance", lambda spec: {"profile": spec})
    monkeypatch.setattr(
        provenance, "collect", lambda boots, jobs, inputs=None: {"boots": len(boots)}
    )
    # The kept run's counter was free, the default then (lamport since).
    overrides: dict[str, object] = {"memmodel": "a53", "quanta": [1000], "causal": "off"}
    out = exp.run("fidelity", False, overrides, out_root=tmp_path / "r", jobs=2)
    remade = json.loads((out / "summary.json").read_text())

    def guest(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in r.items() if k not in FIDELITY_HOST_TIMES} for r in rows]

    assert guest(remade["rows"]) == guest(summary["rows"])
    same = ("config", "smp", "rounds", "overlap_iterations", "causal", "memmodel", "deterministic")
    assert {k: remade[k] for k in same} == {k: summary[k] for k in same}
    assert [c for c in remade["checks"] if not c[0].startswith("(e)")] == [
        c for c in summary["checks"] if not c[0].startswith("(e)")
    ]

    def scripts(run: Path) -> dict[str, bytes]:
        with tarfile.open(run / "raw.tar.xz") as tar:
            return {
                m.name: f.read()
                for m in tar.getmembers()
                if m.name.endswith(".sh") and (f := tar.extractfile(m)) is not None
            }

    assert len(scripts(kept)) == 7 and scripts(out) == scripts(kept)


LHP_QUICK: dict[str, object] = {"patch_runs": 15}  # the kept run's boots ran 15


def _files(run: Path) -> dict[str, bytes]:
    """A finished run's files, its raw archive's entries by name (the
    units' records, which hold host facts, left out)."""
    out = {p.name: p.read_bytes() for p in run.iterdir() if p.name not in ("raw.tar.xz",)}
    with tarfile.open(run / "raw.tar.xz") as tar:
        for m in tar.getmembers():
            f = tar.extractfile(m)
            if f is not None and not m.name.endswith(f".{units.RECORD}"):
                out[m.name] = f.read()
    return out


@pytest.fixture
def lhp_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lhp's boots replayed from its kept run; returns where runs go."""
    kept = (RESULTS / "lhp" / "latest").resolve()
    monkeypatch.setattr(units, "boot", replay(kept, tmp_path / "logs"))
    return tmp_path / "r"


def test_lhp_quick_in_shards_merged_is_the_serial_run(lhp_replayed: Path) -> None:
    out = lhp_replayed
    serial = exp.run("lhp", True, LHP_QUICK, out_root=out, jobs=1)
    parallel = exp.run("lhp", True, LHP_QUICK, out_root=out, jobs=3)
    parts = [
        exp.run("lhp", True, LHP_QUICK, out_root=out, jobs=1, shard=Shard(i, 2)) for i in (1, 2)
    ]
    assert all(p.name.endswith(".partial") for p in parts), "a shard is no run"
    assert not (parts[0] / "summary.json").exists()
    merged = exp.merge("lhp", parts, out_root=out)
    want = json.loads((serial / "summary.json").read_text())
    assert len(want["period_sweep"]) == 9 and want["bench"] and want["overhead"]
    for run in (parallel, merged):
        got = json.loads((run / "summary.json").read_text())
        assert measurements(got) == measurements(want)
        files = _files(run)
        for name, data in _files(serial).items():
            if name == "report.md":
                # Its first line names the run.
                assert data.decode().splitlines()[3:] == files[name].decode().splitlines()[3:]
            elif name != "summary.json":
                assert files[name] == data, name
        assert sorted(files) == sorted(_files(serial))
    got = json.loads((merged / "summary.json").read_text())
    assert [s["shard"] for s in got["provenance"]["shards"]] == ["1/2", "2/2"]
    assert got["stats"] == want["stats"] == "issue-49"
    assert (out / "lhp" / "latest").resolve() == merged


def test_shards_split_the_sorted_units_round_robin() -> None:
    s = scenario.load("lhp", exp.get("lhp").schema, quick=True)
    boots = exp.get("lhp").units(s)
    labels = sorted(b.label for b in boots)
    parts = [Shard(i, 3).select(boots) for i in (1, 2, 3)]
    assert [b.label for b in parts[1]] == sorted(labels[1::3], key=[b.label for b in boots].index)
    assert sorted(b.label for p in parts for b in p) == labels, "each unit in exactly one"
    assert Shard.parse("2/3") == Shard(2, 3) and Shard(2, 3).tag == "shard2of3"
    with pytest.raises(TandemError, match="--array=1-N"):
        Shard.parse("0/3")
    with pytest.raises(TandemError, match="expected I/N"):
        Shard.parse("1-3")


def _shards(out: Path, count: int = 2) -> list[Path]:
    return [
        exp.run("lhp", True, LHP_QUICK, out_root=out, jobs=1, shard=Shard(i, count))
        for i in range(1, count + 1)
    ]


def _edit_plan(shard: Path, change: Callable[[dict[str, object]], None]) -> None:
    path = shard / shards.PLAN
    plan = json.loads(path.read_text())
    change(plan)
    path.write_text(json.dumps(plan))


def test_merge_refuses_a_missing_or_duplicate_unit(lhp_replayed: Path) -> None:
    one, two = _shards(lhp_replayed)
    before = sorted((lhp_replayed / "lhp").iterdir())
    with pytest.raises(TandemError, match="missing \\(no shard measured them\\): e1-alone-rep2, "):
        exp.merge("lhp", [one], out_root=lhp_replayed)
    copy = lhp_replayed / "copy-of-one"
    shutil.copytree(one, copy)
    with pytest.raises(TandemError, match="e1-10000us-migrate-rep1 measured more than once: in"):
        exp.merge("lhp", [one, two, copy], out_root=lhp_replayed)
    record = next((two / "raw").glob(f"*.{units.RECORD}"))
    record.unlink()
    label = record.name.removesuffix(f".{units.RECORD}")
    with pytest.raises(TandemError, match=f"missing \\(no shard measured them\\): {label}$"):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)
    assert sorted((lhp_replayed / "lhp").iterdir()) == before, "a refused merge leaves nothing"


def test_merge_refuses_links_in_a_shards_raw_data(lhp_replayed: Path) -> None:
    """Issue 46, hole 5b: a shard's raw/ is packed into the run's archive,
    which is committed. A link there (to a private key, say) would put
    what it points at into the archive; a link in place of raw/ itself,
    a whole folder."""
    one, two = _shards(lhp_replayed)
    key = lhp_replayed / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    before = sorted((lhp_replayed / "lhp").iterdir())
    script = next((two / "raw").glob("*.sh"))
    script.unlink()
    script.symlink_to(key)
    with pytest.raises(TandemError, match=f"merge: {script}: a link .* refused"):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)
    assert sorted((lhp_replayed / "lhp").iterdir()) == before, "a refused merge leaves nothing"
    script.unlink()
    script.write_text("true\n")
    elsewhere = lhp_replayed / "elsewhere"
    (two / "raw").rename(elsewhere)
    (two / "raw").symlink_to(elsewhere)
    with pytest.raises(TandemError, match=f"merge: {two / 'raw'}: a link .* refused"):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)
    assert sorted((lhp_replayed / "lhp").iterdir()) == before


def test_merge_refuses_shards_of_another_commit_scenario_or_unfinished(
    lhp_replayed: Path,
) -> None:
    one, two = _shards(lhp_replayed)

    def commit(plan: dict[str, object]) -> None:
        stamp = plan["provenance"]
        assert isinstance(stamp, dict)
        stamp["commit"] = "0123abc"

    _edit_plan(two, commit)
    with pytest.raises(
        TandemError, match=r"differ in:\n  provenance\.commit: '[0-9a-f]+' / '0123abc'"
    ):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)

    def host(plan: dict[str, object]) -> None:
        stamp = plan["provenance"]
        assert isinstance(stamp, dict)
        stamp["commit"] = json.loads((one / shards.PLAN).read_text())["provenance"]["commit"]
        stamp["host"] = {"name": "node17", "jobs": 64}

    _edit_plan(two, host)
    assert exp.merge("lhp", [one, two], out_root=lhp_replayed).is_dir(), "hosts may differ"

    def reps(plan: dict[str, object]) -> None:
        values = plan["scenario"]
        assert isinstance(values, dict)
        values["sweep_reps"] = 3

    _edit_plan(two, reps)
    with pytest.raises(TandemError, match=r"scenario\.sweep_reps: 2 / 3"):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)
    _edit_plan(two, lambda plan: plan.update(host_seconds=None))
    with pytest.raises(TandemError, match="shard 2/2 did not finish"):
        exp.merge("lhp", [one, two], out_root=lhp_replayed)
    with pytest.raises(TandemError, match="a shard of 'lhp', not of 'rpc'"):
        exp.merge("rpc", [one], out_root=lhp_replayed)
    with pytest.raises(TandemError, match="not a shard"):
        exp.merge("lhp", [lhp_replayed], out_root=lhp_replayed)


def test_shards_kept_over_sittings_merge_as_their_directories_do(lhp_replayed: Path) -> None:
    """A run longer than a sitting: shards kept one sitting at a time in
    results/NAME/pending.tar.xz merge into the run their directories make;
    a shard kept twice, unfinished or of another commit is refused and the
    archive left as it was."""
    out = lhp_replayed
    one, two, three = _shards(out, 3)
    archive, held = pending.keep("lhp", [two], root=out)
    assert archive == out / "lhp" / pending.ARCHIVE and held == ["2/3"]
    archive, held = pending.keep("lhp", [three, one], root=out)
    assert held == ["1/3", "2/3", "3/3"]
    before = archive.read_bytes()
    with pytest.raises(TandemError, match="already kept"):
        pending.keep("lhp", [one], root=out)
    again = out / "shard-one-again"
    shutil.copytree(one, again)
    with pytest.raises(TandemError, match="shard 1/3 twice"):
        pending.keep("lhp", [again], root=out)
    _edit_plan(again, lambda plan: plan.update(host_seconds=None))
    with pytest.raises(TandemError, match="shard 1/3 did not finish"):
        pending.keep("lhp", [again], root=out)

    def commit(plan: dict[str, object]) -> None:
        stamp = plan["provenance"]
        assert isinstance(stamp, dict)
        stamp["commit"] = "0123abc"
        plan["host_seconds"] = 1.0

    _edit_plan(again, commit)
    with pytest.raises(TandemError, match=r"provenance\.commit: '[0-9a-f]+' / '0123abc'"):
        pending.keep("lhp", [again], root=out)
    assert archive.read_bytes() == before, "a refused shard leaves the archive as it was"
    from_dirs = exp.merge("lhp", [one, two, three], out_root=out)
    from_archive = exp.merge("lhp", [archive], out_root=out)
    want = json.loads((from_dirs / "summary.json").read_text())
    got = json.loads((from_archive / "summary.json").read_text())
    assert measurements(got) == measurements(want)
    assert [s["shard"] for s in got["provenance"]["shards"]] == ["1/3", "2/3", "3/3"]


def test_an_archive_of_shards_with_a_link_is_refused(tmp_path: Path) -> None:
    """What merge unpacks may come from anyone: a link (to a private key,
    say) or a path out of its shard's folder is refused before anything
    is written."""
    key = tmp_path / "id_ed25519"
    key.write_text("secret\n")
    for name, kind in (
        ("x-shard1of2.partial/raw/a.out", tarfile.SYMTYPE),
        ("../a", tarfile.REGTYPE),
    ):
        archive = tmp_path / "pending.tar.xz"
        with tarfile.open(archive, "w:xz") as tar:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = str(key) if kind == tarfile.SYMTYPE else ""
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
        into = tmp_path / "into"
        with pytest.raises(TandemError, match="refused"):
            pending.unpack(archive, into)
        assert not into.exists()


def test_shards_unpack_on_a_python_without_extractalls_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debian bookworm's Python 3.11.2 has no `filter` for
    TarFile.extractall (make fresh-test failed on it): unpacking kept shards
    must not need it, and gives back their folders and files byte for byte."""

    def old_extractall(self: tarfile.TarFile, path: str = ".", members: object = None) -> None:
        raise AssertionError("extractall")

    archive = tmp_path / "pending.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for name, data in (("x-shard1of2.partial", None), ("x-shard1of2.partial/raw/a", b"1\n")):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE if data is None else tarfile.REGTYPE
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    monkeypatch.setattr(tarfile.TarFile, "extractall", old_extractall)
    dirs = pending.unpack(archive, tmp_path / "into")
    assert dirs == [tmp_path / "into" / "x-shard1of2.partial"]
    assert (dirs[0] / "raw" / "a").read_bytes() == b"1\n"


def test_host_timing_refuses_boots_side_by_side(tmp_path: Path) -> None:
    with pytest.raises(TandemError, match="--jobs 2: ctxsw's boots in host timing"):
        exp.run("ctxsw", True, {"timings": ["percore", "host"]}, out_root=tmp_path, jobs=2)
    assert not (tmp_path / "ctxsw").exists(), "refused before anything is written"


@pytest.mark.qemu
def test_rpc_boots_side_by_side_measure_what_one_at_a_time_do(tmp_path: Path) -> None:
    """`./tandem exp run rpc --quick --jobs 2` and `--jobs 1`: the same
    summary but for the host's facts (two repetitions, so that two boots
    really run at once, each at its own phase)."""
    overrides: dict[str, object] = {"reps": 2, "sizes": [1, 10000]}
    one = exp.run("rpc", True, overrides, out_root=tmp_path, jobs=1)
    two = exp.run("rpc", True, overrides, out_root=tmp_path, jobs=2)
    a, b = (json.loads((d / "summary.json").read_text()) for d in (one, two))
    assert a["provenance"]["host"]["jobs"] == 1 and b["provenance"]["host"]["jobs"] == 2
    assert measurements(a) == measurements(b)
    assert (
        a["models"][0] != a["models"][1] or a["rows"][0]["runs_ms"][0] != a["rows"][0]["runs_ms"][1]
    ), "the two repetitions start at different phases"
