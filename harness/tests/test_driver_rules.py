"""Host tests of the `tandem` driver's rules that need no kernel: C
programs beside the driver (linux/driver/*_test.c) built with the host's
compiler against the driver's own headers, then run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tandem.platform.paths import ROOT

DRIVER = ROOT / "linux" / "driver"


def build_and_run(source: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.fail("no host C compiler (cc): make setup installs one")
    binary = tmp_path / source.stem
    flags = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{DRIVER}"]
    subprocess.run(
        [compiler, *flags, "-o", str(binary), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=120)


def test_an_rpc_channel_never_rewrites_a_request_in_flight_nor_wedges(tmp_path: Path) -> None:
    """Issue 31, hole 8b: a refused doorbell (RPC_NOTIFY) after the request
    was published must leave the request outstanding, not free the channel
    for the next call while the server may still answer it."""
    r = build_and_run(DRIVER / "tandem_rpc_chan_test.c", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok:"), r.stdout
