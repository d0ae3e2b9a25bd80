#!/usr/bin/env python3
"""Checks results/ against its policy (results/README.md, "What is kept").

    scripts/check-results.py [--repo DIR] [--max-files N]

Run by `make lint` on the files git tracks under results/:

- every run folder (results/NAME/RUN-ID, results/boot/CONFIG/RUN-ID for
  `bench boot`'s runs before it was an experiment, a probe's
  results/NAME/probe-...) is cited by the project's prose
  (README.md, results/CLAIMS.md, results/README.md, docs/*.md) or is a
  `latest` link's target: a run nothing cites is superseded, and git's
  history keeps it;
- every run's results/... path the prose cites exists;
- a run's raw data is one archive, raw.tar.xz, not a raw/ folder of files;
- no guest or host script (.sh) and no code (.py) under results/: scripts
  are in a run's archive, probes' code in harness/tandem/exp/NAME/probes.py;
- every finished run (a run folder but a `.partial` one) has a
  summary.json with a provenance block (tandem/provenance.py: commit,
  QEMU, kernel, board and firmware, timing, host), but the runs listed in
  NO_PROVENANCE, each with why it has none: made before their command
  stamped runs, and not remade since; nothing may write one for them
  after the fact;
- a run's finished shards kept between sittings (results/NAME/pending.tar.xz,
  `tandem exp keep`) are cited by the prose, which says whose run they are
  and what is missing; the merge's run replaces them;
- results/ holds fewer than --max-files tracked files.

Prints each breach and exits 1 if there is one."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

# A run, or a shard of one (tandem exp run --shard: never kept, merge it).
RUN_ID = re.compile(r"\d{8}-\d{6}(?:-\d+)?(?:-shard\d+of\d+)?(?:\.partial)?")
PROBE = re.compile(r"probe-\d{8}-[A-Za-z0-9-]+")
# A results/... path written in prose (up to the first character that no
# path of ours holds); not one in git's history (`git show COMMIT:results/...`).
CITED_PATH = re.compile(r"(?<![:/\w])results/[A-Za-z0-9_./-]*[A-Za-z0-9_]")
FORBIDDEN_SUFFIXES = {".sh": "a script", ".py": "code"}
DEFAULT_MAX_FILES = 300
# A run's finished shards kept between sittings (harness/tandem/exp/pending.py).
PENDING = "pending.tar.xz"

# Runs kept without a provenance block, and why: each was measured before
# its command wrote one (exp run from 2026-11-24, 8e5ecc2; the benches and
# `tandem trace` as they were until issue 48 gave bench memory and bench
# fidelity one), and remaking it means hours of boots. A run remade
# through a command that stamps it replaces its entry here; none is added.
_BEFORE_EXP = "exp run before runs were stamped (provenance since 8e5ecc2, 2026-11-24)"
_BENCH = "`tandem bench {}`, which wrote no provenance when this run was made"
NO_PROVENANCE = {
    "results/boot/heteroos/20261121-064041": _BENCH.format("boot"),
    "results/boot/linux-only/20261121-064047": _BENCH.format("boot"),
    "results/boot/tandem/20261121-064035": _BENCH.format("boot"),
    "results/fidelity/20261126-133209": _BENCH.format("fidelity"),
    "results/fidelity/20261127-114229": _BENCH.format("fidelity"),
    "results/fidelity/20261127-152650": _BENCH.format("fidelity"),
    "results/latency/20261124-164553": _BENCH.format("latency"),
    "results/latency/20261127-083006": _BENCH.format("latency"),
    "results/latency/20261127-083204": _BENCH.format("latency"),
    "results/latency/20261127-142128": _BENCH.format("latency"),
    "results/latency/20261127-142242": _BENCH.format("latency"),
    "results/lhp/20261121-205934": _BEFORE_EXP,
    "results/switch/20261124-174422": _BENCH.format("switch"),
    "results/switch/20261124-224208": _BENCH.format("switch"),
    "results/switch/20261125-031930": _BENCH.format("switch"),
    "results/switch/20261125-034828": _BENCH.format("switch"),
    "results/switch/20261126-123840": _BENCH.format("switch"),
    "results/switch/20261126-123950": _BENCH.format("switch"),
    "results/switch/20261126-141512": _BENCH.format("switch"),
    "results/switch/20261127-141956": _BENCH.format("switch"),
    "results/switch/20261127-142018": _BENCH.format("switch"),
    "results/switch/20261129-030212": _BENCH.format("switch"),
    "results/switch/20261129-033028": _BENCH.format("switch"),
    "results/trace/20261127-083325": "`tandem trace` before it was an experiment (issue 48): it wrote no provenance",
    "results/trace/20261127-083341": "`tandem trace` before it was an experiment (issue 48): it wrote no provenance",
    "results/trace/20261127-083548": "`tandem trace` before it was an experiment (issue 48): it wrote no provenance",
    "results/threadtest/20261127-152300": "threadtest run by hand through `tandem exec`, no "
    "summary: its README.md gives the tree, timing and configuration it ran with",
}


def tracked(repo: Path) -> list[PurePosixPath]:
    """The files git tracks under results/."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "results"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [PurePosixPath(p) for p in out.split("\0") if p]


def prose(repo: Path) -> str:
    """The text that may cite runs."""
    paths = [
        repo / "README.md",
        repo / "results" / "CLAIMS.md",
        repo / "results" / "README.md",
    ]
    paths += sorted((repo / "docs").glob("*.md"))
    return "\n".join(p.read_text() for p in paths if p.is_file())


def run_folder(path: PurePosixPath) -> PurePosixPath | None:
    """The run (or probe) folder a tracked file belongs to, if any."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if RUN_ID.fullmatch(part) or PROBE.fullmatch(part):
            return PurePosixPath(*parts[: i + 1])
    return None


def latest_targets(repo: Path, files: list[PurePosixPath]) -> set[PurePosixPath]:
    """The run folders that `latest` links point at."""
    out = set()
    for f in files:
        if f.name == "latest" and (repo / f).is_symlink():
            out.add(f.parent / (repo / f).readlink().as_posix())
    return out


def provenance_breaches(repo: Path, runs: list[PurePosixPath]) -> list[str]:
    """Finished runs without a provenance block (but NO_PROVENANCE's), and
    NO_PROVENANCE's runs that have one (their entry is no longer needed)."""
    out = []
    for run in runs:
        if PROBE.fullmatch(run.name) or run.name.endswith(".partial"):
            continue
        summary = repo / run / "summary.json"
        try:
            stamp = json.loads(summary.read_text()).get("provenance")
        except (OSError, ValueError, AttributeError):
            stamp = None
        excused = str(run) in NO_PROVENANCE
        if not (isinstance(stamp, dict) and stamp) and not excused:
            out.append(f"{run}: no provenance block in summary.json (tandem/provenance.py)")
        elif isinstance(stamp, dict) and stamp and excused:
            out.append(f"{run}: has a provenance block; drop it from NO_PROVENANCE")
    return out


def breaches(repo: Path, max_files: int) -> list[str]:
    files = tracked(repo)
    text = prose(repo)
    cited_ids = set(RUN_ID.findall(text)) | set(PROBE.findall(text))
    latest = latest_targets(repo, files)
    out = []
    runs = sorted({r for f in files if (r := run_folder(f)) is not None})
    for run in runs:
        if run.name not in cited_ids and run not in latest:
            out.append(
                f"{run}: cited by no README, CLAIMS.md or docs/ page (superseded?)"
            )
    for cited in sorted(set(CITED_PATH.findall(text))):
        name = cited.rstrip(".")
        if not (RUN_ID.search(name) or PROBE.search(name)):
            continue  # an experiment's folder, named before it has a run
        target = repo / name
        if not target.exists() and not target.is_symlink():
            out.append(f"{name}: cited, but not in results/")
    for f in files:
        if "raw" in f.parts[:-1]:
            out.append(f"{f}: raw data as files; a run keeps it in one raw.tar.xz")
        elif f.suffix in FORBIDDEN_SUFFIXES:
            out.append(
                f"{f}: {FORBIDDEN_SUFFIXES[f.suffix]} under results/ "
                "(scripts go in the run's raw.tar.xz, code in harness/tandem/exp/NAME/probes.py)"
            )
    for f in files:
        if f.name == PENDING and str(f) not in text:
            out.append(
                f"{f}: kept shards that no README, CLAIMS.md or docs/ page cites "
                "(say whose run they are and what is missing)"
            )
    out += provenance_breaches(repo, runs)
    if len(files) >= max_files:
        out.append(
            f"results/ holds {len(files)} tracked files; it must hold fewer than {max_files}"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repo", type=Path, default=Path(__file__).resolve().parents[1]
    )
    parser.add_argument("--max-files", type=int, default=DEFAULT_MAX_FILES)
    args = parser.parse_args()
    found = breaches(args.repo, args.max_files)
    for line in found:
        print(f"check-results: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
