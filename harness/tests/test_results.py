"""Host tests of the results directory: raw data compressed, reproducibly."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest

from tandem import provenance, results


def test_finish_compresses_large_raw_files_reproducibly(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        run = results.PartialRun(tmp_path / name)
        raw = run.dir / "raw"
        (raw / "sub").mkdir(parents=True)
        big = "".join(f"line {i}: console output\n" for i in range(5000))
        (raw / "boot.console.log").write_text(big)
        (raw / "sub" / "hits.csv").write_text(big)
        (raw / "boot.sh").write_text("echo small\n")
        runs.append((run.finish(), big))
    (first, big), (second, _) = runs
    assert not (first / "raw" / "boot.console.log").exists()
    packed = first / "raw" / "boot.console.log.gz"
    assert gzip.decompress(packed.read_bytes()).decode() == big
    assert (first / "raw" / "sub" / "hits.csv.gz").is_file()
    assert (first / "raw" / "boot.sh").read_text() == "echo small\n", "small files stay"
    assert packed.stat().st_size < len(big) // 5
    # No time stamp or name in the header: the same data, the same bytes.
    assert packed.read_bytes() == (second / "raw" / "boot.console.log.gz").read_bytes()
    assert (first.parent / "latest").resolve() == first.resolve()


def test_compress_raw_without_raw_directory_does_nothing(tmp_path: Path) -> None:
    assert results.compress_raw(tmp_path / "raw") == []


def test_provenance_ignores_results_but_names_other_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "results" / "x").mkdir(parents=True)
    (repo / "src.txt").write_text("a\n")
    (repo / "results" / "x" / "latest").write_text("1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(provenance, "ROOT", repo)
    (repo / "results" / "x" / "latest").write_text("2\n")
    assert provenance.changed_paths() == []
    (repo / "src.txt").write_text("b\n")
    assert provenance.changed_paths() == ["src.txt"]
