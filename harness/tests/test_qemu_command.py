"""Host tests of QEMU's command line: every device named, nothing implicit,
one place that builds it, and QEMU tests marked as such."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import qemu_command
from tandem.platform.board import load_board
from tandem.platform.paths import ROOT
from tandem.platform.timing import (
    CAUSAL_LAMPORT,
    CAUSAL_MAX,
    CAUSAL_OFF,
    DEFAULT_CAUSAL,
    Timing,
    modes_words,
)

BOARD = load_board()


def _boot(timing: str = "virtual", disk: Path | None = None) -> list[str]:
    return qemu_command.boot_argv(
        BOARD,
        4,
        Timing.parse(timing),
        Path("fw.bin"),
        [qemu_command.Load(Path("Image"), 0x4020_0000)],
        Path("secure.log"),
        interactive=False,
        disk=disk,
    )


def _options(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == name]


def test_boot_names_every_device_and_takes_no_defaults() -> None:
    argv = _boot(disk=Path("disk.img"))
    assert argv[0] == qemu_command.program()
    assert "-nodefaults" in argv
    assert _options(argv, "-serial") == ["stdio", "file:secure.log"]
    assert _options(argv, "-monitor") == ["none"]
    assert _options(argv, "-display") == ["none"]
    assert _options(argv, "-device") == [
        "loader,file=Image,addr=0x40200000,force-raw=on",
        "virtio-blk-device,drive=disk0",
    ]
    # Nothing that would pull in a network device or its option ROM.
    assert not {"-nic", "-net", "-netdev"} & set(argv)
    assert _options(argv, "-drive") == ["file=disk.img,if=none,format=raw,id=disk0"]


def test_a_throttled_disk_keeps_its_requests_in_flight() -> None:
    argv = qemu_command.boot_argv(
        BOARD, 1, Timing("host"), Path("fw"), [], Path("s"), False, Path("d.img"), disk_bps=16384
    )
    assert _options(argv, "-drive") == [
        "file=d.img,if=none,format=raw,id=disk0,throttling.bps-total=16384"
    ]


def test_interactive_boot_multiplexes_the_monitor_onto_the_console() -> None:
    argv = qemu_command.boot_argv(
        BOARD, 1, Timing("host"), Path("fw"), [], Path("s.log"), interactive=True
    )
    assert _options(argv, "-serial") == ["mon:stdio", "file:s.log"]
    assert _options(argv, "-accel") == ["tcg,thread=multi"]


def test_dtb_dump_describes_the_same_machine_as_a_boot() -> None:
    dump = qemu_command.dump_dtb_argv(BOARD, 2, Path("fw"), Path("out.dtb"))
    boot = qemu_command.boot_argv(BOARD, 2, Timing("host"), Path("fw"), [], Path("s"), False)
    assert _options(dump, "-machine") == [f"{BOARD.qemu_machine},dumpdtb=out.dtb"]
    for name in ("-cpu", "-smp", "-m"):
        assert _options(dump, name) == _options(boot, name)
    assert "-nodefaults" in dump


def test_unknown_timing_is_refused() -> None:
    with pytest.raises(TandemError, match="timing must be one of host, virtual"):
        _boot(timing="fast")


def test_timing_gives_qemu_its_clock_options_and_says_itself_in_words() -> None:
    assert _options(_boot("virtual"), "-icount") == ["shift=0,sleep=off"]
    # Per-core timing's counter is causal by default (lamport), and says so.
    assert DEFAULT_CAUSAL == CAUSAL_LAMPORT
    default = Timing("percore", 250)
    assert default.qemu_args() == [
        "-accel",
        "tcg,thread=single",
        "-icount",
        "shift=0,sleep=off,quantum=250,causal=lamport",
    ]
    assert default.words() == "percore timing (Q = 250 ns, causal counter: lamport)"
    assert "`lamport`" in default.caveats()
    # The free counter is asked for and then named by what it lacks: nothing.
    percore = Timing("percore", 250, causal=CAUSAL_OFF)
    assert _options(percore.qemu_args(), "-icount") == ["shift=0,sleep=off,quantum=250"]
    assert percore.words() == "percore timing (Q = 250 ns)"
    causal = Timing("percore", 250, causal=CAUSAL_MAX)
    assert _options(causal.qemu_args(), "-icount") == ["shift=0,sleep=off,quantum=250,causal=max"]
    assert causal.words() == "percore timing (Q = 250 ns, causal counter: max)"
    assert causal.label() == "percore timing, Q = 250 ns, causal counter: max"
    assert percore.deterministic and Timing("virtual").deterministic
    assert not Timing("host").deterministic
    assert Timing("host", 250).words() == "host timing", "a quantum only in per-core timing"
    with pytest.raises(TandemError, match=r"--quantum-ns must be 1\.\.1000000, got 0"):
        Timing("percore", 0)


def test_a_report_reads_the_timing_its_run_recorded() -> None:
    summary: dict[str, object] = {
        "timing": "percore",
        "sweep_timing": "virtual",
        "scenario": {"quantum_ns": 500},
        "provenance": {"timing": {"timing": "percore", "sweep_timing": "host", "quantum_ns": 500}},
    }
    # A run from before the counter's rule ran with the counter free.
    assert Timing.of_summary(summary) == Timing("percore", 500, causal="off")
    assert Timing.of_summary(summary, "sweep_timing").words() == "virtual timing"
    assert modes_words(summary) == "host, percore (Q = 500 ns)"
    with pytest.raises(TandemError, match="without a timing mode under 'patch_timing'"):
        Timing.of_summary(summary, "patch_timing")


def test_the_timing_mode_is_parsed_and_described_in_one_module() -> None:
    """Only platform/timing.py spells the modes' choices or QEMU's clock
    options; a report never takes them from the boot module."""
    harness = ROOT / "harness" / "tandem"
    for path in harness.rglob("*.py"):
        if path.name == "timing.py":
            continue
        text = path.read_text()
        assert '"-icount"' not in text, path
        assert "TIMINGS" not in text and "DETERMINISTIC =" not in text, path
        assert "QEMU_CAVEATS" not in text, path


def test_only_command_lines_built_here_are_started() -> None:
    with pytest.raises(TandemError, match="not a QEMU command line"):
        qemu_command._check_argv(["sh", "-c", "true"])


def test_unmarked_tests_cannot_start_qemu() -> None:
    # conftest.py's guard is active here: this test is not marked `qemu`.
    with pytest.raises(qemu_command.QemuInHostTest, match=r"not marked @pytest\.mark\.qemu"):
        qemu_command.run(qemu_command.version_argv(), "QEMU")
    with pytest.raises(qemu_command.QemuInHostTest):
        qemu_command.spawn(_boot())


def _code_files() -> list[Path]:
    skip = {"build", "target", ".venv", ".git", "results", "docs"}
    files = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in skip or not path.is_file():
            continue
        if path.suffix in {".py", ".sh", ".rs", ".toml"} or path.name in {"Makefile", "tandem"}:
            files.append(path)
    return files


def test_qemu_is_invoked_from_one_place() -> None:
    """QEMU's binary is named only where the command line is built, and
    where QEMU is built (which never starts it)."""
    here = Path(__file__).resolve()
    allowed = {
        here,
        ROOT / "harness" / "tandem" / "platform" / "qemu_command.py",
        ROOT / "scripts" / "build-qemu.sh",
        ROOT / "Makefile",
    }
    offenders = [
        str(path.relative_to(ROOT))
        for path in _code_files()
        if path not in allowed and "qemu-system-aarch64" in path.read_text(errors="replace")
    ]
    assert offenders == [], f"QEMU named outside tandem/platform/qemu_command.py: {offenders}"


def _marked_qemu(decorators: list[ast.expr]) -> bool:
    for d in decorators:
        text = ast.unparse(d)
        if re.fullmatch(r"pytest\.mark\.qemu", text):
            return True
    return False


def test_qemu_markers_sit_on_tests() -> None:
    """A `qemu` marker on anything but a test marks nothing (it once sat on a
    helper above the test it was meant for, and that test boots QEMU)."""
    misplaced = []
    for path in sorted((ROOT / "harness" / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.FunctionDef | ast.ClassDef)
                and _marked_qemu(node.decorator_list)
                and not node.name.startswith(("test_", "Test"))
            ):
                misplaced.append(f"{path.name}:{node.lineno} {node.name}")
    assert misplaced == []


def test_setup_check_reads_qemus_version() -> None:
    from tandem.platform.setup_check import parse_version

    text = "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)\nCopyright"
    assert parse_version(text) == (10, 0)
    with pytest.raises(TandemError, match="cannot read QEMU's version"):
        parse_version("qemu: unknown option")
