"""Host tests of a boot's preparation (platform/boot_inputs.py `prepare`), one step
at a time, and of the whole: what `prepare` writes and QEMU's command line
for a set of options, against the snapshot in data/prepare_snapshot.json.

The snapshot was taken with the code before `prepare` was split into steps
(issue 34), so it says the split changed nothing a boot gets. A change meant
to alter what a boot gets updates it:
`TANDEM_UPDATE_SNAPSHOT=1 .venv/bin/pytest harness/tests/test_boot_steps.py`,
and the diff of the JSON shows what changed.

No QEMU and no build: the firmware, kernel and initramfs are small stand-ins
and QEMU's own device tree is a fixed one (`fake_qemu_dts`); dtc writes the
device trees."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import boot_inputs, boot_options, commands_output, dtb, logdir, qemu_command
from tandem.platform.apps import AppRun
from tandem.platform.board import Board, load_board
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Ctxsw, Workload, load_config
from tandem.platform.timing import Timing

BOARD = load_board()
SNAPSHOT = Path(__file__).parent / "data" / "prepare_snapshot.json"
needs_dtc = pytest.mark.skipif(shutil.which("dtc") is None, reason="dtc not installed")


def fake_qemu_dts(board: Board, smp: int, el2: bool = False, seed: int = 0) -> str:
    """The parts of QEMU's virt tree that Tandem's additions refer to, with
    `smp` cores in a cpu-map (as QEMU dumps it, patch 0005's third UART
    included); no seeds for Linux's seed 0, its seeds for another
    (dtb.add_seeds, as the EVK's tree from the kernel source)."""
    cpus = "".join(
        f'\t\tc{n}: cpu@{n} {{ device_type = "cpu"; reg = <{n}>; }};\n' for n in range(smp)
    )
    cores = " ".join(f"core{n} {{ cpu = <&c{n}>; }};" for n in range(smp))
    tree = (
        "/dts-v1/;\n/ {\n\t#address-cells = <2>;\n\t#size-cells = <2>;\n"
        "\tpl011@90c0000 {\n\t\treg = <0x00 0x90c0000 0x00 0x1000>;\n\t};\n"
        "\tpl011@9040000 {\n\t\treg = <0x00 0x9040000 0x00 0x1000>;\n\t};\n"
        "\tpl011@9000000 {\n\t\treg = <0x00 0x9000000 0x00 0x1000>;\n\t};\n"
        "\tintc@8000000 {\n"
        "\t\treg = <0x00 0x8000000 0x00 0x10000 0x00 0x80a0000 0x00 0xf60000>;\n\t};\n"
        "\tmemory@40000000 {\n\t\treg = <0x00 0x40000000 0x00 0x40000000>;\n\t};\n"
        "\tcpus {\n\t\t#address-cells = <1>;\n\t\t#size-cells = <0>;\n"
        f"\t\tcpu-map {{ cluster0 {{ {cores} }}; }};\n{cpus}\t}};\n"
        '\taliases {\n\t\tserial2 = "/pl011@90c0000";\n\t\tserial1 = "/pl011@9040000";\n'
        '\t\tserial0 = "/pl011@9000000";\n\t};\n'
        f"\tchosen {{ }};\n\tel2 {{ on = <{int(el2)}>; }};\n}};\n"
    )
    return dtb.add_seeds(tree, seed)


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Stand-ins for the build's firmware, kernel and initramfs, the boots'
    log directories under tmp_path/logs, QEMU's tree from `fake_qemu_dts`."""
    artifacts = {
        "KERNEL": (tmp_path / "Image", b"KERNEL" * 512),
        "INITRAMFS": (tmp_path / "initramfs.cpio", b"INITRAMFS" * 128),
    }
    for name, (path, data) in artifacts.items():
        path.write_bytes(data)
        monkeypatch.setattr(boot_inputs, name, path)
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(b"FIRMWARE" * 64)
    monkeypatch.setattr(boot_inputs, "firmware", lambda _board: firmware)
    monkeypatch.setattr(logdir, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(boot_options, "missing_artifacts", lambda _board: [])
    monkeypatch.setattr(dtb, "qemu_dts", fake_qemu_dts)
    yield tmp_path


# Options whose preparation the snapshot holds: each configuration, exec and
# run, every option prepare reads.
WORKLOAD = Workload(core=1, period_us=1000, work_us=500)
CASES: dict[str, tuple[BootOptions, str | None]] = {
    "run": (BootOptions(), None),
    "exec-phase": (BootOptions(timing=Timing("percore"), phase_us=1370), "echo hi\n"),
    "linux-only-disk": (
        BootOptions(
            config=load_config("linux-only"),
            smp=1,
            disk_mib=16,
            extra_bootargs="tandem_lockstate=on",
            timing=Timing("virtual"),
        ),
        "true\n",
    ),
    "static": (
        BootOptions(capacity="static", workload=WORKLOAD, timing=Timing("percore", 500)),
        "true\n",
    ),
    "steal": (BootOptions(capacity="steal", workload=WORKLOAD), "true\n"),
    "heteroos-static": (
        BootOptions(
            config=load_config("heteroos"),
            capacity="static",
            workload=Workload(core=3, period_us=1000, work_us=200),
        ),
        "true\n",
    ),
    "rpc": (BootOptions(smp=2, rpc_cores=(1,)), "true\n"),
    "ctxsw": (
        BootOptions(smp=1, ctxsw=Ctxsw(core=0, mode="flush", pages=4, switches=1000)),
        "true\n",
    ),
    "apps": (BootOptions(apps=(AppRun("ctxsw", (("switches", 1000),)),)), "true\n"),
    "instruments": (
        BootOptions(extra_qemu_args=("-d", "in_asm", "-D", "{run_dir}/exec.log")),
        "true\n",
    ),
    "rtos-runs-on": (BootOptions(linux_off="rtos-runs-on"), "true\n"),
    "dualunix-run": (BootOptions(config=load_config("dualunix")), None),
    "dualunix-both": (
        BootOptions(
            config=load_config("dualunix"),
            partition="B",
            partition_scripts=(("A", "echo a\n"),),
            phase_us=100,
        ),
        "echo b\n",
    ),
    "tandem-hyp": (BootOptions(config=load_config("tandem-hyp")), "true\n"),
    "smp8": (BootOptions(smp=8), "true\n"),
}


def snapshot(built: Path, options: BootOptions, script: str | None) -> dict[str, object]:
    """What one preparation wrote and asked QEMU for, with the paths that
    differ from boot to boot (its log directory, the stand-ins) by name."""
    p = boot_inputs.prepare(options, exec_script=script)

    def named(text: str) -> str:
        for path, name in (
            (qemu_command.program(), "<QEMU>"),
            (p.run_dir, "<RUN>"),
            (built, "<BUILD>"),
        ):
            text = text.replace(str(path), name)
        return text

    files = {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(p.run_dir.iterdir())
        if f.is_file() and not f.name.startswith(".")
    }
    return {
        "argv": [named(a) for a in p.argv],
        "files": files,
        "secure_log": named(str(p.secure_log)),
        "console_log": named(str(p.console_log)),
        "consoles": {k: named(str(v)) for k, v in p.consoles.items()},
    }


@needs_dtc
def test_prepare_writes_what_it_did_before_the_split(built: Path) -> None:
    got = {name: snapshot(built, *case) for name, case in CASES.items()}
    if os.environ.get("TANDEM_UPDATE_SNAPSHOT"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(SNAPSHOT.read_text())
    assert sorted(got) == sorted(want)
    for name in CASES:
        assert got[name] == want[name], name


def test_layout_gives_each_partition_its_commands_with_the_phase() -> None:
    plain = boot_inputs.layout(BootOptions(phase_us=1500), "echo hi\n")
    assert plain.partitions == () and plain.primary is None and plain.others == []
    assert plain.scripts == {"": "sleep 0.001500\necho hi\n"}
    assert plain.linux_cores == [0, 1, 2, 3]
    assert boot_inputs.layout(BootOptions(), None).scripts == {}, "run: no commands"
    both = boot_inputs.layout(
        BootOptions(
            config=load_config("dualunix"), partition="B", partition_scripts=(("A", "a\n"),)
        ),
        "b\n",
    )
    assert both.primary is not None and both.primary.name == "B"
    assert both.scripts == {"B": "b\n", "A": "a\n"} and both.others == ["A"]
    assert boot_inputs.layout(BootOptions(config=load_config("heteroos")), None).linux_cores == [
        0,
        1,
        2,
    ]


@pytest.mark.parametrize(
    ("options", "script", "message"),
    [
        (
            BootOptions(config=load_config("dualunix"), partition_scripts=(("B", "x\n"),)),
            None,
            "need commands for this one",
        ),
        (BootOptions(partition_scripts=(("B", "x\n"),)), "x\n", "has no partitions to run"),
        (
            BootOptions(config=load_config("dualunix"), partition_scripts=(("A", "x\n"),)),
            "x\n",
            "partition A runs the commands already",
        ),
        (BootOptions(config=load_config("dualunix"), partition="Z"), "x\n", "has no partition Z"),
        (
            BootOptions(config=load_config("dualunix"), partition_scripts=(("Z", "x\n"),)),
            "x\n",
            "has no partition Z",
        ),
    ],
)
def test_layout_refuses_commands_no_partition_can_run(
    options: BootOptions, script: str | None, message: str
) -> None:
    with pytest.raises(TandemError, match=message):
        boot_inputs.layout(options, script)


def test_initramfs_appends_the_commands_and_keeps_them_beside_the_logs(built: Path) -> None:
    run_dir = built / "run"
    run_dir.mkdir()
    plan = boot_inputs.layout(
        BootOptions(config=load_config("dualunix"), partition_scripts=(("B", "echo b\n"),)),
        "echo a\n",
    )
    chunks = boot_inputs.initramfs(plan, run_dir)
    assert chunks[0] == (built / "initramfs.cpio").read_bytes(), "Tandem's first"
    assert len(chunks) == 2
    for name, text in (("exec-A.sh", "echo a\n"), ("exec-B.sh", "echo b\n")):
        assert f"tandem/{name}".encode() in chunks[1] and text.encode() in chunks[1]
        assert (run_dir / name).read_text() == text
    interactive = boot_inputs.initramfs(boot_inputs.layout(BootOptions(), None), built / "run")
    assert interactive == (chunks[0],), "run: Tandem's initramfs alone"


def test_bootargs_and_what_linuxs_power_off_does() -> None:
    assert boot_inputs.bootargs(BootOptions(), None) == "console=ttyAMA0 earlycon panic=-1"
    assert boot_inputs.bootargs(BootOptions(extra_bootargs="x=1"), "true\n").endswith(" quiet x=1")
    one = BootOptions()
    assert boot_inputs.linux_off(one, boot_inputs.layout(one, None)) is None, (
        "run: the configuration's"
    )
    assert boot_inputs.linux_off(one, boot_inputs.layout(one, "true\n")) == "machine-off"
    two = BootOptions(config=load_config("dualunix"), partition_scripts=(("B", "x\n"),))
    assert boot_inputs.linux_off(two, boot_inputs.layout(two, "x\n")) == "rtos-runs-on"
    asked = BootOptions(linux_off="rtos-runs-on")
    assert boot_inputs.linux_off(asked, boot_inputs.layout(asked, "true\n")) == "rtos-runs-on"


def test_rtos_blobs_are_the_configurations_and_kept_beside_the_logs(tmp_path: Path) -> None:
    options = BootOptions(capacity="steal", workload=WORKLOAD, rpc_cores=(2,))
    blobs = boot_inputs.rtos_blobs(
        options, boot_inputs.layout(options, None), "machine-off", tmp_path
    )
    config = load_config("tandem")
    assert blobs.boot_config == config.boot_blob(
        4, steal_time=True, rpc_cores=(2,), linux_off="machine-off"
    )
    assert blobs.boot_config != config.boot_blob(4, rpc_cores=(2,), linux_off="machine-off")
    assert (tmp_path / "bootconfig.bin").read_bytes() == blobs.boot_config
    assert (tmp_path / "workload.bin").read_bytes() == blobs.workload


@needs_dtc
def test_device_trees_place_each_linuxs_images(built: Path) -> None:
    one = BootOptions(capacity="static", workload=WORKLOAD)
    (images,) = boot_inputs.device_trees(
        one, BOARD, boot_inputs.layout(one, None), "console=ttyAMA0", (b"I" * 10,), b"K", built
    )
    kernel, tree, initrd = images
    assert (kernel.load, tree.load, initrd.load) == (BOARD.kernel, BOARD.dtb, BOARD.initrd)
    assert tree.chunks == ((built / "tandem.dtb").read_bytes(),)
    assert "capacity-dmips-mhz = <512>" in (built / "tandem.dts").read_text()
    two = BootOptions(config=load_config("dualunix"))
    sets = boot_inputs.device_trees(
        two, BOARD, boot_inputs.layout(two, None), "console=ttyAMA0", (b"I" * 10,), b"K", built
    )
    offset = BOARD.initrd - BOARD.normal_ram.base
    assert [s[2].load for s in sets] == [0x4000_0000 + offset, 0x6000_0000 + offset], "own RAM"
    assert (built / "tandem-A.dtb").is_file() and (built / "tandem-B.dtb").is_file()
    # One kernel and one initramfs in flash for both Linux (flash.write
    # stores chunks that are the same object once).
    assert sets[0][0].chunks is sets[1][0].chunks and sets[0][2].chunks is sets[1][2].chunks


def test_partition_consoles_put_the_commands_linux_on_stdio(tmp_path: Path) -> None:
    assert (
        boot_inputs.partition_consoles(BOARD, boot_inputs.layout(BootOptions(), None), tmp_path)
        is None
    )
    a = boot_inputs.partition_consoles(
        BOARD, boot_inputs.layout(BootOptions(config=load_config("dualunix")), None), tmp_path
    )
    assert a is not None
    assert a.serials == (None, tmp_path / "console-B.log") and a.files == {
        "B": tmp_path / "console-B.log"
    }
    b_options = BootOptions(config=load_config("dualunix"), partition="B")
    b = boot_inputs.partition_consoles(BOARD, boot_inputs.layout(b_options, None), tmp_path)
    assert b is not None and b.serials == (tmp_path / "console-A.log", None)


def test_partition_table_names_the_linux_whose_power_off_ends_the_machine(
    tmp_path: Path,
) -> None:
    config = load_config("dualunix")
    offsets = {"A": 0, "B": 0x100}

    def table(options: BootOptions, script: str | None) -> bytes:
        plan = boot_inputs.layout(options, script)
        return boot_inputs.partition_table(
            BOARD, options, plan, boot_inputs.linux_off(options, plan), tmp_path
        )

    assert table(BootOptions(), None) == b"", "one Linux: no table"
    assert table(
        BootOptions(config=load_config("dualunix"), partition="B"), "x\n"
    ) == config.partition_table(BOARD, 4, offsets, "B"), "exec: the commands' Linux"
    assert table(BootOptions(config=load_config("dualunix")), None) == config.partition_table(
        BOARD, 4, offsets, "A"
    ), "run: the first, as the configuration's machine-off says"
    both = BootOptions(config=load_config("dualunix"), partition_scripts=(("B", "x\n"),))
    assert table(both, "x\n") == config.partition_table(BOARD, 4, offsets, None)
    assert (tmp_path / "partitions.bin").read_bytes() == config.partition_table(
        BOARD, 4, offsets, None
    )


def test_command_line_puts_the_instruments_in_the_boots_directory(tmp_path: Path) -> None:
    options = BootOptions(extra_qemu_args=("-D", "{run_dir}/exec.log"), disk_mib=1)
    disk = boot_inputs.blank_disk(options, tmp_path)
    assert disk is not None and disk.stat().st_size == 1 << 20
    assert boot_inputs.blank_disk(BootOptions(), tmp_path) is None
    argv = boot_inputs.command_line(options, BOARD, tmp_path / "f.bin", tmp_path, True, disk, None)
    assert argv[-2:] == ["-D", f"{tmp_path}/exec.log"]
    assert f"file:{tmp_path}/secure.log" in argv and "mon:stdio" in argv
    assert any(a.startswith(f"file={disk},") for a in argv)
    consoles = boot_inputs.Consoles((None, tmp_path / "b.log"), {"B": tmp_path / "b.log"})
    argv = boot_inputs.command_line(
        BootOptions(), BOARD, tmp_path / "f.bin", tmp_path, False, None, consoles
    )
    serials = [argv[i + 1] for i, x in enumerate(argv) if x == "-serial"]
    assert serials == ["stdio", f"file:{tmp_path}/secure.log", f"file:{tmp_path}/b.log"]


def test_old_log_directories_go_unless_a_running_boot_holds_them(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logdir, "KEEP_LOGS", 3)
    running = boot_inputs.prepare(BootOptions(), "true\n")
    done = []
    for _ in range(4):
        p = boot_inputs.prepare(BootOptions(), "true\n")
        p.release()
        done.append(p.run_dir)
    assert running.run_dir.is_dir(), "the oldest, but its boot still runs"
    assert not done[0].exists(), "finished and beyond the newest 3"
    running.release()
    boot_inputs.prepare(BootOptions(), "true\n").release()
    assert not running.run_dir.exists()


def test_a_saved_console_log_gives_back_what_the_commands_printed(tmp_path: Path) -> None:
    """run_exec reads QEMU's console and writes it to a log; reading the
    log back gives the same output, status and reboots (what `tandem exp
    merge` and a new parse rely on)."""
    console = [
        "[    0.000000] Booting Linux",
        f"[    1.0] rcS: {commands_output.BEGIN}",
        "first\rline with a carriage return\x1c and a separator",
        "[   2.000000] reboot: Restarting system",
        "[    0.000000] Booting Linux again",
        commands_output.BEGIN,
        "second",
        "last words@@TANDEM-EXEC-END status=3@@",
        "[    3.0] reboot: Power down",
    ]
    live = commands_output.CommandsOutput()
    echoed = [out for line in console for out in live.feed(line)]
    log = tmp_path / "console.log"
    with log.open("w", encoding=commands_output.CONSOLE_ENCODING) as f:
        for line in console:
            f.write(line + "\n")
    saved = commands_output.read_console_log(log.read_bytes())
    assert (
        saved.lines
        == live.lines
        == ["first\rline with a carriage return\x1c and a separator", "second", "last words"]
    )
    assert echoed[-2:] == ["second", "last words"]
    assert (
        (saved.status, saved.reboots, saved.begins) == (live.status, live.reboots, 2) == (3, 1, 2)
    )


def test_reading_stops_at_a_panic_or_where_qemu_runs_on() -> None:
    panicked = commands_output.CommandsOutput()
    for line in [
        commands_output.BEGIN,
        "x",
        "Kernel panic - not syncing: oops",
        "---[ end Kernel panic",
    ]:
        panicked.feed(line)
    assert (
        panicked.done and panicked.panic[0].startswith("Kernel panic") and panicked.status is None
    )
    runs_on = commands_output.CommandsOutput(stop_at_end=True)
    for line in [commands_output.BEGIN, "@@TANDEM-EXEC-END status=0@@"]:
        runs_on.feed(line)
    assert runs_on.done and runs_on.status == 0
    expected = commands_output.CommandsOutput(panics=True)
    expected.feed(commands_output.BEGIN)
    expected.feed("Kernel panic - not syncing: on purpose")
    assert not expected.done and expected.lines == ["Kernel panic - not syncing: on purpose"]


PINNED_SCENARIO = """
experiment = "pinned"
paper = "004"
description = "two boots held to the images the run's provenance records"
runner = "rtos-app"
timing = "virtual"
quantum_ns = 1000
reps = 1
smp = 1
rtos = ["ctxsw"]
linux = "true"
expect = ["ctxsw"]
"""


@needs_dtc
def test_a_rebuild_during_a_run_stops_it_at_the_next_boot(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's provenance is taken at its start; a firmware rebuilt while it
    measures (1 Dec: a worktree whose build linked to another checkout's)
    must stop the run, not boot later boots under the first ones' digest.
    The boots here are prepared for real (the stand-ins of `built`), QEMU
    alone is not started."""
    from tandem import exp, provenance
    from tandem.exp import rtos_app, units
    from tandem.exp.common import Boot
    from tandem.platform.boot import ExecResult

    firmware = built / "firmware.bin"
    monkeypatch.setattr(provenance, "firmware", lambda _board: firmware)
    monkeypatch.setattr(provenance, "KERNEL", built / "Image")
    monkeypatch.setattr(provenance, "INITRAMFS", built / "initramfs.cpio")
    booted: list[str] = []

    def boot(unit: Boot, ctx: object) -> ExecResult:
        prepared = boot_inputs.prepare(unit.options, unit.script)
        prepared.release()
        booted.append(unit.label)
        # The rebuild, between this run's first and second boots.
        firmware.write_bytes(b"REBUILT!" * 64)
        log = built / f"{unit.label}.console.log"
        log.write_text(f"{commands_output.BEGIN}\n@@TANDEM-EXEC-END status=0@@\n")
        return ExecResult(0, "", log, log, 0, 0.0, 0.0, lines=[])

    fake = exp.Experiment(
        "pinned",
        rtos_app.SCHEMA,
        lambda s: [Boot(label, BootOptions(), "true\n") for label in ("a", "b")],
        lambda s, out, measured: {"experiment": "pinned"},
        lambda d, s: None,
        lambda d, c: "report\n",
    )
    (built / "pinned.toml").write_text(PINNED_SCENARIO)
    monkeypatch.setattr(exp, "get", lambda name, directory: fake)
    monkeypatch.setattr(units, "boot", boot)
    with pytest.raises(TandemError, match=r"firmware\.bin changed since this run started"):
        exp.run("pinned", quick=False, overrides={}, out_root=built / "r", directory=built, jobs=1)
    assert booted == ["a"]
    (partial,) = (built / "r" / "pinned").glob("*.partial")
    assert units.recorded(partial) == ["a"]


@needs_dtc
@pytest.mark.parametrize("name", ["firmware.bin", "Image", "initramfs.cpio"])
def test_a_boot_refuses_each_input_that_is_not_the_one_pinned(built: Path, name: str) -> None:
    from tandem.platform import pinned

    inputs = pinned.pin([built / "firmware.bin", built / "Image", built / "initramfs.cpio"])
    options = BootOptions(pinned=inputs)
    boot_inputs.prepare(options, "true\n").release()
    (built / name).write_bytes(b"changed")
    with pytest.raises(TandemError, match=f"{re.escape(name)} changed since this run started"):
        boot_inputs.prepare(options, "true\n")


def test_an_input_the_run_did_not_pin_is_refused(tmp_path: Path) -> None:
    from tandem.platform import pinned

    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    inputs = pinned.pin([tmp_path / "a"])
    assert pinned.read(tmp_path / "a", inputs) == b"a"
    assert pinned.read(tmp_path / "b", None) == b"b"
    with pytest.raises(TandemError, match="not among the inputs"):
        pinned.read(tmp_path / "b", inputs)
