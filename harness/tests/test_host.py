"""Host tests of the harness: no QEMU needed (dtc and cpio only)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem import cli
from tandem.errors import TandemError
from tandem.instruments import switchcost
from tandem.platform import cpio, dtb
from tandem.platform.apps import AppRun, available, manifest, parse_setting, workload_blob
from tandem.platform.board import load_board
from tandem.platform.boot_options import choose_timing
from tandem.platform.configs import Ctxsw, Workload, load_config

BASE_DTS = """/dts-v1/;
/ {
	#address-cells = <2>;
	#size-cells = <2>;
	cpus {
		#address-cells = <1>;
		#size-cells = <0>;
		cpu-map { cluster0 { core0 { cpu = <&c0>; }; core1 { cpu = <&c1>; }; }; };
		c0: cpu@0 { device_type = "cpu"; reg = <0>; };
		c1: cpu@1 { device_type = "cpu"; reg = <1>; };
	};
	chosen { };
};
"""


def test_cpio_archive_lists_like_gnu_cpio(tmp_path: Path) -> None:
    data = cpio.archive({"tandem/exec.sh": (0o755, b"echo hi\n"), "a": (0o644, b"")})
    assert len(data) % 4 == 0
    listing = subprocess.run(
        ["cpio", "-t", "-v", "--quiet"], input=data, capture_output=True, check=True
    ).stdout.decode()
    names = [line.split()[-1] for line in listing.splitlines()]
    assert names == ["a", "tandem", "tandem/exec.sh"]
    assert "-rwxr-xr-x" in listing.splitlines()[2]
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-i", "-d", "--quiet"], input=data, cwd=out, check=True)
    assert (out / "tandem" / "exec.sh").read_text() == "echo hi\n"


def test_cpio_rejects_escaping_paths() -> None:
    with pytest.raises(ValueError):
        cpio.archive({"../etc/passwd": (0o644, b"")})
    with pytest.raises(ValueError):
        cpio.archive({"/init": (0o755, b"")})


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_fragment_merges_into_base_tree(tmp_path: Path) -> None:
    board = load_board()
    frag = dtb.tandem_fragment(board, 2, [0, 1], "console=ttyAMA0", 4096)
    source = tmp_path / "t.dts"
    source.write_text(BASE_DTS + frag)
    blob = tmp_path / "t.dtb"
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", blob, source], check=True)
    text = subprocess.run(
        ["dtc", "-q", "-I", "dtb", "-O", "dts", blob], capture_output=True, check=True
    ).stdout.decode()
    assert 'method = "smc";' in text
    assert "no-map;" in text
    assert f"tandem-shm@{board.shared.base:x}" in text
    assert 'compatible = "tandem,tandem";' in text
    assert "tandem,cores = <0x00 0x01>;" in text, "every core's part of the region"
    assert text.count('enable-method = "psci";') == 2
    end = board.initrd + 4096
    assert f"linux,initrd-end = <{end:#x}>;" in text, "one cell below 4 GiB"
    assert "idle-states" not in text and "cpu-idle-states" not in text


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_idle_states_are_the_boards_standby_on_every_linux_core(tmp_path: Path) -> None:
    board = load_board()
    (standby,) = board.idle_states
    assert (standby.name, standby.psci_suspend_param) == ("standby", 0)
    frag = dtb.tandem_fragment(board, 2, [1], "x", 16, idle_states=board.idle_states)
    source = tmp_path / "t.dts"
    source.write_text(BASE_DTS + frag)
    text = subprocess.run(
        ["dtc", "-q", "-I", "dts", "-O", "dts", source], capture_output=True, check=True
    ).stdout.decode()
    assert 'entry-method = "psci";' in text
    assert 'compatible = "arm,idle-state";' in text
    assert "arm,psci-suspend-param = <0x00>;" in text
    assert f"min-residency-us = <{standby.min_residency_us:#04x}>;" in text
    # cpu@1 points at the state; cpu@0, the RTOS's alone, is gone.
    assert text.count("cpu-idle-states = <") == 1 and "cpu@0" not in text


@pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")
def test_cores_not_for_linux_are_removed(tmp_path: Path) -> None:
    frag = dtb.tandem_fragment(load_board(), 2, [0], "x", 16)
    source = tmp_path / "t.dts"
    source.write_text(BASE_DTS + frag)
    out = subprocess.run(
        ["dtc", "-q", "-I", "dts", "-O", "dts", source], capture_output=True, check=True
    ).stdout.decode()
    assert "cpu@0" in out
    assert "cpu@1" not in out
    assert "cpu-map" not in out


def test_fragment_rejects_bad_input() -> None:
    board = load_board()
    with pytest.raises(TandemError, match="quotes"):
        dtb.tandem_fragment(board, 1, [0], 'a"b', 16)
    with pytest.raises(TandemError, match="no core"):
        dtb.tandem_fragment(board, 1, [], "x", 16)
    with pytest.raises(TandemError, match="shared region"):
        dtb.tandem_fragment(board, 1, [0], "x", board.shared.base)


def test_config_errors_name_file_key_and_allowed_values(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('default_policy = "both"\n')
    with pytest.raises(TandemError, match=r"bad.toml.*shared, rtos, linux.*'both'"):
        load_config("bad", tmp_path)
    (tmp_path / "typo.toml").write_text('defualt_policy = "shared"\n')
    with pytest.raises(TandemError, match=r"unknown key.*defualt_policy"):
        load_config("typo", tmp_path)
    (tmp_path / "core.toml").write_text('[cores]\nthree = "rtos"\n')
    with pytest.raises(TandemError, match="not a core index"):
        load_config("core", tmp_path)
    with pytest.raises(TandemError, match="unknown configuration 'nope'"):
        load_config("nope", tmp_path)


def test_config_policies_and_boot_blob() -> None:
    config = load_config("tandem")
    assert config.linux_cores(4) == [0, 1, 2, 3]
    hetero = load_config("heteroos")
    assert hetero.linux_cores(4) == [0, 1, 2]
    assert hetero.has_rtos(4) and not hetero.has_rtos(3)
    assert not load_config("linux-only").has_rtos(4)
    blob = hetero.boot_blob(4)
    assert len(blob) == 32
    assert blob[:8] == b"TNDMBOOT"
    assert blob[8:16] == struct.pack("<II", 5, 4)
    assert list(blob[16:24]) == [2, 2, 2, 1, 2, 2, 2, 2]
    assert struct.unpack("<II", blob[24:]) == (0, 1 << 3), "no features; RPC server on core 3"
    blob = hetero.boot_blob(4, steal_time=True, rpc_cores=())
    assert struct.unpack("<II", blob[24:]) == (1, 0), "stolen-time feature bit, no RPC"
    shared = load_config("tandem")
    assert struct.unpack("<II", shared.boot_blob(2, rpc_cores=(0, 1))[24:]) == (0, 3)
    assert struct.unpack("<II", shared.boot_blob(1)[24:]) == (0, 1)
    assert struct.unpack("<II", load_config("linux-only").boot_blob(4)[24:]) == (2, 0), (
        "no RTOS to run on: Linux's power-off ends the machine"
    )


def test_workloads_select_rtos_applications() -> None:
    hetero = load_config("heteroos")
    assert hetero.rtos_apps(4) == ()
    periodic = Workload(core=3, period_us=1000, work_us=500, dispatch="migrate")
    runs = hetero.rtos_apps(4, periodic)
    assert runs == (
        AppRun.of(
            "periodic",
            core=3,
            period_us=1000,
            work_us=500,
            dispatch="migrate",
            alt_work_us=0,
            alt_every_ms=0,
        ),
        AppRun.of("demo", jobs=0),
    )
    entries = blob_entries(workload_blob(runs))
    assert ("periodic", "dispatch", 1) in entries and ("demo", "jobs", 0) in entries
    with pytest.raises(TandemError, match="one workload"):
        hetero.rtos_apps(4, periodic, Ctxsw(core=3))


def blob_entries(blob: bytes) -> list[tuple[str, str, int]]:
    """The entries of a workload blob (abi/src/workload.rs)."""
    magic, version, count = struct.unpack_from("<QII", blob)
    assert (magic, version) == (int.from_bytes(b"TNDMWKLD", "little"), 1)
    out = []
    for i in range(count):
        app, key, value = struct.unpack_from("<16s16sQ", blob, 16 + 40 * i)
        out.append((app.rstrip(b"\0").decode(), key.rstrip(b"\0").decode(), value))
    return out


def test_workload_blob_checks_each_value_against_its_application() -> None:
    assert set(available()) >= {"demo", "periodic", "rpc_server", "ctxsw"}
    blob = workload_blob([AppRun("rpc_server"), AppRun.of("ctxsw", mode="flush", stray=True)])
    assert len(blob) == 2048
    assert blob_entries(blob) == [
        ("rpc_server", "", 0),
        ("ctxsw", "mode", 1),
        ("ctxsw", "stray", 1),
    ]
    assert blob_entries(workload_blob([])) == []
    merged = workload_blob([AppRun.of("demo", jobs=0), AppRun.of("demo", jobs=0)])
    assert blob_entries(merged) == [("demo", "jobs", 0)]
    for runs, message in [
        ([AppRun("nope")], "no RTOS application 'nope'.*available: .*periodic"),
        ([AppRun.of("demo", job=1)], "demo has no parameter 'job' \\(its parameters: jobs\\)"),
        ([AppRun.of("demo", jobs=2)], "demo: jobs = 2 is not allowed; want an integer in 0..1"),
        ([AppRun.of("ctxsw", mode="tagged")], "mode = 'tagged'.*one of 'asid', 'flush'"),
        ([AppRun.of("demo", jobs=0), AppRun.of("demo", jobs=1)], "jobs is given 0 and 1"),
    ]:
        with pytest.raises(TandemError, match=message):
            workload_blob(runs)
    assert parse_setting("periodic.dispatch=migrate") == ("periodic", "dispatch", "migrate")
    assert parse_setting("ctxsw.stray = true") == ("ctxsw", "stray", True)
    assert parse_setting("ctxsw.pages=0x10") == ("ctxsw", "pages", 16)
    with pytest.raises(TandemError, match=r"APP\.PARAM=VALUE"):
        parse_setting("pages=4")


def test_app_manifests_are_checked(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    for text, message in [
        ("[params.a]\nchoices = []\n", "choices must be a list of names"),
        ('[params.a]\nchoices = ["p"]\ndefault = "q"\n', "default 'q' is not one of"),
        ("[params.a]\nmin = 5\ndefault = 1\n", "min <= default <= max"),
        ("[params.a]\nmax = -1\n", "max must be an integer"),
        ("params = 1\n", "want description"),
    ]:
        (tmp_path / "x" / "app.toml").write_text(text)
        manifest.cache_clear()
        with pytest.raises(TandemError, match=message):
            manifest("x", tmp_path)
    manifest.cache_clear()


@pytest.mark.parametrize(
    ("config", "cores", "message"),
    [
        ("heteroos", (1,), "RPC server core 1"),
        ("tandem", (4,), "RPC server core 4"),
        ("tandem", (-1,), "RPC server core -1"),
        ("linux-only", (0,), "RPC server core 0"),
    ],
)
def test_bad_rpc_cores_are_refused_before_boot(
    config: str, cores: tuple[int, ...], message: str
) -> None:
    with pytest.raises(TandemError, match=message):
        load_config(config).boot_blob(8 if config == "tandem" else 4, rpc_cores=cores)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (Workload(core=1, period_us=1000, work_us=500), "must be a core running the RTOS"),
        (Workload(core=4, period_us=1000, work_us=500), "must be a core running the RTOS"),
        (Workload(core=3, period_us=50, work_us=10), "period 50 us"),
        (Workload(core=3, period_us=1000, work_us=1000), "work 1000 us"),
        (Workload(core=3, period_us=1000, work_us=1, alt_work_us=2000), "alternate work"),
        (Workload(core=3, period_us=1000, work_us=1, dispatch="random"), "dispatch 'random'"),
    ],
)
def test_bad_workloads_are_refused_before_boot(workload: Workload, message: str) -> None:
    hetero = load_config("heteroos")
    with pytest.raises(TandemError, match=message):
        hetero.rtos_apps(4, workload)


def test_board_matches_design() -> None:
    board = load_board()
    assert board.normal_ram.base == 0x4000_0000
    assert board.normal_ram.base <= board.shared.base < board.normal_ram.end
    assert board.kernel < board.dtb < board.initrd < board.shared.base


def test_cli_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["exec", "--smp", "9", "--", "true"]) == 2
    assert "--smp must be 1..8" in capsys.readouterr().err
    assert cli.main(["exec", "--config", "nope", "--", "true"]) == 2
    assert cli.main(["exec"]) == 2
    assert "give the commands" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "--timing", "sundial"])


def test_auto_timing_needs_a_host_core_per_emulated_core() -> None:
    assert choose_timing("auto", 4, 8)[0] == "host"
    assert choose_timing("auto", 4, 4)[0] == "host"
    timing, why = choose_timing("auto", 4, 2)
    assert timing == "percore" and "2 host cores for 4" in why
    assert choose_timing("host", 4, 2) == ("host", "as asked")
    assert choose_timing("virtual", 1, 8) == ("virtual", "as asked")


SWITCH_LOG = """\
IN:
0x00000500:  14000100  b        #0x900

IN:
0x00000900:  a9000400  stp      x0, x1, [sp]
0x00000904:  d69f03e0  eret

IN:
0x0e100100:  d4000003  smc      #0

IN:
0x00000400:  14000100  b        #0x800

IN:
0x00000800:  a9000400  stp      x0, x1, [sp]
0x00000804:  d503201f  nop
0x00000808:  d69f03e0  eret

IN:
0x0e100280:  14000000  b        #0

Trace 0: 0x7f0000000100 [00000000/0000000000000500/00000471/ff022200]
Stopped execution of TB chain before 0x7f0000000100 [0000000000000500]
Trace 0: 0x7f0000000100 [00000000/0000000000000500/00000471/ff022200]
Trace 0: 0x7f0000000200 [00000000/0000000000000900/00000471/ff022200]
Trace 0: 0x7f0000000300 [00000000/000000000e100280/00000471/ff022200]
Trace 0: 0x7f0000000400 [00000000/000000000e100100/00000471/ff022200]
Trace 0: 0x7f0000000500 [00000000/0000000000000400/00000471/ff022200]
Trace 0: 0x7f0000000600 [00000000/0000000000000800/00000471/ff022200]
"""


def test_switch_cost_replays_qemus_execution_log() -> None:
    log = switchcost.parse(SWITCH_LOG.splitlines())
    assert len(log.blocks) == 6 and len(log.executed) == 6
    symbols = switchcost.Symbols(
        [0x0, 0x800, 0x900, 0x0E10_0000],
        ["vectors", "lower_sync", "lower_fiq", "rtos::vectors"],
    )
    measured = switchcost.measure(log, symbols, 0x0, 0x0E10_0000)
    to_rtos = measured["linux_to_rtos"]
    to_linux = measured["rtos_to_linux"]
    assert isinstance(to_rtos, dict) and isinstance(to_linux, dict)
    # FIQ vector (1, logged twice but run once) + lower_fiq (2) before the
    # RTOS's IRQ vector.
    assert to_rtos["median_instructions"] == 3 and to_rtos["samples"] == 1
    # The smc (1) + sync vector (1) + lower_sync up to its eret (3).
    assert to_linux["median_instructions"] == 5
    assert to_linux["median_path"] == {
        "lower_sync": 3,
        "vectors": 1,
        "hw::yield_to_linux (smc)": 1,
    }


def test_rpc_cores_option() -> None:
    args = cli.parser().parse_args(["exec", "--rpc-cores", "1,2"])
    assert args.rpc_cores == (1, 2)
    assert cli.parser().parse_args(["exec", "--rpc-cores", "none"]).rpc_cores == ()
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["exec", "--rpc-cores", "1;2"])


def test_switch_cost_counts_the_translation_that_ran() -> None:
    """QEMU translates 0x800 twice (in icount mode a block touching a device
    is translated again to end there): each run counts its own translation."""
    log = switchcost.parse(
        """\
IN:
0x00000800:  d503201f  nop
0x00000804:  d503201f  nop
0x00000808:  d69f03e0  eret

Trace 0: 0x7f0000000100 [00000000/0000000000000800/00000471/ff022200]
IN:
0x00000800:  d503201f  nop

Trace 0: 0x7f0000000200 [00000000/0000000000000800/00000471/ff022200]
Trace 0: 0x7f0000000100 [00000000/0000000000000800/00000471/ff022200]
""".splitlines()
    )
    assert [len(log.run(i) or []) for i in range(3)] == [3, 1, 3]
    assert len(log.blocks[0x800]) == 1, "the latest translation"
