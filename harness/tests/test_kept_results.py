"""results/ as kept in git (results/README.md, "What is kept"): every kept
experiment run's report and plots regenerate byte for byte from what is
kept, and scripts/check-results.py finds what the policy forbids."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tandem import exp
from tandem.platform.paths import RESULTS, ROOT

CHECK = ROOT / "scripts" / "check-results.py"


def _kept_runs() -> list[tuple[str, str]]:
    """(experiment, run id) of every finished run kept under results/."""
    return [
        (name, d.name)
        for name in exp.REGISTRY
        if (RESULTS / name).is_dir()
        for d in sorted((RESULTS / name).iterdir())
        if d.is_dir()
        and not d.is_symlink()
        and (d / "summary.json").is_file()
        and (d / "report.md").is_file()
    ]


@pytest.mark.parametrize(("name", "run_id"), _kept_runs())
def test_kept_reports_regenerate(tmp_path: Path, name: str, run_id: str) -> None:
    kept = RESULTS / name / run_id
    copy = tmp_path / name / run_id
    shutil.copytree(kept, copy)
    for drawn in [copy / "report.md", *copy.glob("*.png")]:
        drawn.unlink()
    exp.report(name, run_id, out_root=tmp_path)
    for path in [kept / "report.md", *kept.glob("*.png")]:
        assert (copy / path.name).read_bytes() == path.read_bytes(), f"{path} differs"


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    return repo


def _check(repo: Path, *args: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, str(CHECK), "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = run.stderr.splitlines()
    assert (run.returncode == 0) == (not lines), run
    return lines


def test_check_results_accepts_a_tree_that_keeps_the_policy(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "README.md": "worst 1.2 µs (run 20260101-000000)\n",
            "docs/x.md": "see `results/lhp/probe-20260102-why/README.md`; shards 1-2 of 4 "
            "in results/rpc/pending.tar.xz\n",
            "results/rpc/pending.tar.xz": "",
            "results/lhp/20260101-000000/summary.json": '{"provenance": {"commit": "c"}}',
            "results/lhp/20260101-000000/raw.tar.xz": "",
            "results/lhp/probe-20260102-why/README.md": "",
        },
    )
    assert _check(repo) == []


def test_check_results_finds_every_breach(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "README.md": "see results/rpc/20260103-000000/report.md\n",
            "results/lhp/20260101-000000/summary.json": "{}",
            "results/lhp/20260101-000000/raw/boot.console.log": "",
            "results/lhp/20260101-000000/raw/boot.sh": "",
            "results/lhp/probe-20260102-why/summarize.py": "",
        },
    )
    (repo / "results" / "rpc").mkdir()
    (repo / "results" / "rpc" / "pending.tar.xz").write_text("")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    found = "\n".join(_check(repo, "--max-files", "3"))
    assert "results/rpc/pending.tar.xz: kept shards that no README" in found
    assert "results/lhp/20260101-000000: cited by no" in found
    assert "results/lhp/probe-20260102-why: cited by no" in found
    assert "results/rpc/20260103-000000/report.md: cited, but not" in found
    assert "raw/boot.console.log: raw data as files" in found
    assert "summarize.py: code under results/" in found
    assert "results/lhp/20260101-000000: no provenance block" in found
    assert "holds 5 tracked files; it must hold fewer than 3" in found
    # As many files as the limit is one too many.
    assert "holds 5 tracked files; it must hold fewer than 5" in "\n".join(
        _check(repo, "--max-files", "5")
    )
