"""The user's own things in a boot: `--add` (host files and directories in
the guest's file system) and `--gdb` (gdb on the monitor, the RTOS and
Linux). On the host: what goes into the archive, checked against GNU cpio,
the errors, the gdb script and QEMU's options; in QEMU (marker `qemu`): a
static program of the user's runs under the RTOS's preemption, and gdb in
batch mode stops in each image."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.platform import boot, boot_inputs, cpio, gdb, logdir, qemu_command
from tandem.platform.board import load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload
from tandem.platform.paths import ROOT
from tandem.platform.timing import Timing

GAPS = ROOT / "docs" / "examples" / "gaps.c"


def _tree(tmp_path: Path) -> Path:
    d = tmp_path / "tool"
    (d / "sub").mkdir(parents=True)
    (d / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (d / "run.sh").chmod(0o755)
    (d / "sub" / "data").write_bytes(b"\x00\x01")
    (d / "sub" / "data").chmod(0o640)
    (d / "empty").mkdir()
    (d / "link").symlink_to("sub/data")
    return d


def test_added_paths_parse_with_a_default_and_an_explicit_guest_path() -> None:
    assert cpio.Added.parse("build/x") == cpio.Added(Path("build/x"), "/root/x")
    assert cpio.Added.parse("a/b:/opt/b") == cpio.Added(Path("a/b"), "/opt/b")
    # A colon not followed by an absolute path belongs to the host path.
    assert cpio.Added.parse("a:b") == cpio.Added(Path("a:b"), "/root/a:b")


def test_a_directory_goes_in_whole_with_modes_and_links(tmp_path: Path) -> None:
    d = _tree(tmp_path)
    data = cpio.added((cpio.Added(d, "/opt/tool"), cpio.Added(d / "run.sh", "/usr/bin/t")))
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(
        ["cpio", "-i", "-d", "--quiet", "--no-absolute-filenames"],
        input=data,
        cwd=out,
        check=True,
    )
    assert (out / "opt/tool/run.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert stat.S_IMODE((out / "opt/tool/run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "opt/tool/sub/data").stat().st_mode) == 0o640
    assert (out / "opt/tool/empty").is_dir()
    assert os.readlink(out / "opt/tool/link") == "sub/data"
    assert (out / "usr/bin/t").read_text().startswith("#!/bin/sh")
    # Deterministic: the same paths, the same bytes.
    assert cpio.added((cpio.Added(d, "/opt/tool"),)) == cpio.added((cpio.Added(d, "/opt/tool"),))


@pytest.mark.parametrize(
    ("added", "why"),
    [
        (cpio.Added(Path("/nonexistent/x"), "/root/x"), "no such file or directory"),
        (cpio.Added(Path("/etc/hostname"), "root/x"), "must be absolute"),
        (cpio.Added(Path("/etc/hostname"), "/root/../x"), "may not contain"),
        (cpio.Added(Path("/etc"), "/"), "/ itself"),
        (cpio.Added(Path("/etc/hostname"), "/tandem/exec.sh"), "the harness's"),
        (cpio.Added(Path("/dev/null"), "/root/null"), "not a file, directory or link"),
    ],
)
def test_bad_additions_are_clear_errors(added: cpio.Added, why: str) -> None:
    with pytest.raises(TandemError, match=why):
        added.entries()


@pytest.mark.parametrize("bits", [stat.S_ISUID, stat.S_ISGID])
def test_a_set_id_program_is_refused(tmp_path: Path, bits: int) -> None:
    """Issue 46, hole 5c: the archive's owner is root, so a set-user-ID (or
    set-group-ID) file of the user's would run as root for any process in
    the guest. Refused, alone or anywhere in a folder."""
    d = _tree(tmp_path)
    tool = d / "sub" / "tool"
    tool.write_text("#!/bin/sh\nid\n")
    tool.chmod(0o755 | bits)
    mode = f"{0o755 | bits:04o}"
    with pytest.raises(TandemError, match=f"--add: {tool}: set-.*-ID \\(mode {mode}\\), refused"):
        cpio.Added(tool, "/usr/bin/t").entries()
    with pytest.raises(TandemError, match=f"--add: {tool}: set-.*-ID"):
        cpio.added((cpio.Added(d, "/opt/tool"),))
    tool.chmod(0o755)
    assert cpio.Added(tool, "/usr/bin/t").entries()["usr/bin/t"][0] == stat.S_IFREG | 0o755


def test_no_addition_goes_through_a_link_another_made(tmp_path: Path) -> None:
    """Issue 46, hole 5c: the kernel follows a link in the path of a file
    it unpacks (init/initramfs.c opens the whole path). A folder added with
    a link to /tandem, then a file added below the link, would write the
    harness's own scripts, which no guest path may name."""
    d = _tree(tmp_path)
    (d / "h").symlink_to("/tandem")
    f = tmp_path / "exec.sh"
    f.write_text("echo @@TANDEM-EXEC-END status=0@@\n")
    with pytest.raises(
        TandemError, match=r"--add: /opt/tool/h/exec\.sh goes through /opt/tool/h, a link "
    ):
        cpio.added((cpio.Added(d, "/opt/tool"), cpio.Added(f, "/opt/tool/h/exec.sh")))
    # The link alone, or a file beside it, is fine.
    data = cpio.added((cpio.Added(d, "/opt/tool"), cpio.Added(f, "/opt/tool/exec.sh")))
    assert b"/tandem" in data


def test_additions_go_between_tandems_initramfs_and_the_commands(tmp_path: Path) -> None:
    f = tmp_path / "hello"
    f.write_text("hi\n")
    plan = boot_inputs.Layout(None, [0], (), None, {"": "true\n"})  # type: ignore[arg-type]
    chunks = boot_inputs.initramfs(plan, tmp_path, (cpio.Added(f, "/root/hello"),))
    assert len(chunks) == 3 and b"root/hello" in chunks[1] and b"tandem/exec.sh" in chunks[2]
    assert (tmp_path / "added.txt").read_text() == f"{f} -> /root/hello\n"


def test_the_gdb_script_loads_every_image_and_connects(tmp_path: Path) -> None:
    elf = tmp_path / "x.elf"
    sock = tmp_path / gdb.SOCKET
    text = gdb.script(sock, [elf, Path("/b/vmlinux")])
    assert "set architecture aarch64" in text
    assert f"add-symbol-file {elf}\nadd-symbol-file /b/vmlinux\n" in text
    assert text.endswith(f"target remote {sock}\n")
    assert gdb.vmlinux_for(Path("/k/out/arch/arm64/boot/Image")) == Path("/k/out/vmlinux")


def test_the_gdb_stub_listens_on_a_unix_socket_in_the_private_log_directory(
    tmp_path: Path,
) -> None:
    """Issue 46, hole 1: QEMU's stub on a TCP port let any local user of the
    host reach QEMU's monitor (`monitor pmemsave ...` writes host files)."""
    argv = qemu_command.boot_argv(
        load_board(), 1, Timing(), Path("f"), [], Path("s"), False, gdb=gdb.qemu_args(tmp_path)
    )
    assert not [a for a in argv if "tcp:" in a or "tcp::" in a], argv
    i = argv.index("-gdb")
    assert argv[i : i + 3] == ["-gdb", f"chardev:{gdb.CHARDEV_ID}", "-S"], "socket, stopped"
    chardev = argv[argv.index("-chardev") + 1]
    assert chardev == (
        f"socket,id={gdb.CHARDEV_ID},path={tmp_path.resolve() / gdb.SOCKET},server=on,wait=off"
    )
    assert "-gdb" not in qemu_command.boot_argv(
        load_board(), 1, Timing(), Path("f"), [], Path("s"), False
    )
    deep = tmp_path / ("d" * 120)
    with pytest.raises(TandemError, match="longer than a unix socket"):
        gdb.qemu_args(deep)


def test_a_boots_log_directory_is_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(logdir, "LOGS", tmp_path / "logs")
    run_dir, lock = logdir.new_log_dir()
    try:
        assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    finally:
        lock.close()


def test_no_boot_waiting_for_gdb_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / gdb.SCRIPT).write_text("x")
    with pytest.raises(TandemError, match="no boot is waiting"):
        gdb.waiting_script(tmp_path)


def test_a_boot_waits_for_gdb_only_once_its_stub_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The script is written before QEMU starts; until QEMU has made the
    stub's socket, gdb cannot connect and no boot is waiting (a loaded host
    took long enough for `make test` to see the script without it)."""
    # Not tmp_path: under pytest-xdist its path plus the log directory's
    # name outgrows a unix socket's 107 bytes and bind() fails.
    with tempfile.TemporaryDirectory(prefix="tandem-gdb-") as short:
        logs = Path(short) / "logs"
        monkeypatch.setattr(logdir, "LOGS", logs)
        run_dir, lock = logdir.new_log_dir()
        try:
            (run_dir / gdb.SCRIPT).write_text("x")
            with pytest.raises(TandemError, match="no boot is waiting"):
                gdb.waiting_script(logs)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stub:
                stub.bind(str(run_dir / gdb.SOCKET))
                assert gdb.waiting_script(logs) == run_dir / gdb.SCRIPT
        finally:
            lock.close()


def _static_gaps(tmp_path: Path) -> Path:
    out = tmp_path / "gaps"
    subprocess.run(["aarch64-linux-gnu-gcc", "-static", "-O2", "-o", out, GAPS], check=True)
    return out


@pytest.mark.qemu
def test_a_users_static_program_runs_under_the_rtos(tmp_path: Path) -> None:
    """docs/harness.md's example: the RTOS busy 300 µs of every 1 ms on
    core 1, the user's program spinning there sees that much of its time
    taken, in gaps as long as the RTOS's jobs."""
    gaps = _static_gaps(tmp_path)
    options = BootOptions(
        timing=Timing("percore"),
        smp=2,
        workload=Workload(core=1, period_us=1000, work_us=300),
        add=(cpio.Added.parse(str(gaps)), cpio.Added.parse(f"{GAPS}:/opt/src/gaps.c")),
    )
    r = run_exec(options, "ls /opt/src; ./gaps 1 0.2 50\n", timeout_s=600)
    assert r.status == 0, r.output
    assert r.lines[0] == "gaps.c"
    words = r.lines[1].split()
    # "cpu 1: 0.200 s, N gaps of 50.0 us or more, P % of the time, longest L us"
    assert words[:2] == ["cpu", "1:"], r.output
    count, share, longest = int(words[4]), float(words[11]), float(words[-2])
    assert 150 <= count <= 250, r.output  # one RTOS job a ms
    assert 25 <= share <= 40, r.output
    assert 300 <= longest <= 400, r.output


def _qemu_listening_tcp_ports(run_dir: Path) -> list[int]:
    """The TCP ports a QEMU of the boot logging to `run_dir` listens on."""
    pids = [
        p.name
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _cmdline_has(p, str(run_dir)) and _cmdline_has(p, "qemu-system")
    ]
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    assert pids, f"no QEMU found for {run_dir}"
    return ports


def _cmdline_has(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _connect_as_nobody(path: Path) -> str:
    """Connects to a unix socket from a child process running as `nobody`:
    what another local user of the host would get."""
    code = (
        "import os, socket, sys\n"
        "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    s.connect(sys.argv[1]); s.sendall(b'$qRcmd,696e666f20726567697374657273#4b')\n"
        "    print('connected', s.recv(64))\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout + done.stderr


@pytest.mark.qemu
def test_gdb_stops_in_the_monitor_the_rtos_and_linux(tmp_path: Path) -> None:
    """gdb-multiarch in batch mode, on a boot started with --gdb: a
    breakpoint in each image is hit in the order they run (the monitor's
    cold boot, the RTOS's timer handler, Linux's start_kernel), then gdb
    lets the boot go on and the commands run to their end."""
    options = BootOptions(timing=Timing("percore"), smp=2, gdb=True)
    result: dict[str, object] = {}

    def boot_it() -> None:
        try:
            result["exec"] = run_exec(options, "echo done\n", timeout_s=600)
        except TandemError as e:
            result["error"] = e

    booting = threading.Thread(target=boot_it)
    booting.start()
    deadline = time.monotonic() + 300
    script: Path | None = None
    while script is None and time.monotonic() < deadline:
        try:
            script = gdb.waiting_script()
        except TandemError:
            time.sleep(0.2)
    assert script is not None, "no boot waiting for gdb"
    # Issue 46, hole 1: the stub is on a unix socket only its owner can
    # reach (before: `tcp:127.0.0.1:1234`, open to every local user).
    sock = script.parent / gdb.SOCKET
    assert f"target remote {sock.resolve()}" in script.read_text()
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(script.parent.stat().st_mode) == 0o700
    assert _qemu_listening_tcp_ports(script.parent) == []
    if os.geteuid() == 0:
        assert _connect_as_nobody(sock).startswith("refused 13"), "EACCES for another user"
    commands = []
    for where in (
        "tandem_monitor::primary_main",
        "tandem_rtos_firmware::exceptions::irq_handler",
        "start_kernel",
    ):
        commands += ["-ex", f"break {where}", "-ex", "continue", "-ex", "info symbol $pc"]
        commands += ["-ex", "delete"]
    commands += ["-ex", "detach"]
    done = subprocess.run(
        gdb.argv(script, ["-batch", "-nx", *commands]),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    booting.join(timeout=300)
    out = done.stdout + done.stderr
    hits = [line for line in out.splitlines() if " in section " in line]
    assert len(hits) == 3, out
    assert hits[0].startswith("tandem_monitor::primary_main"), out
    assert hits[1].startswith("tandem_rtos_firmware::exceptions::irq_handler"), out
    assert hits[2].startswith("start_kernel"), out
    assert "error" not in result, result
    r = result["exec"]
    assert isinstance(r, boot.ExecResult) and r.status == 0 and r.lines == ["done"], r
