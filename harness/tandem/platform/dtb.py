"""The device tree Linux receives: QEMU's own, plus what Tandem adds.

Generated at build time (here, before each boot) with dtc rather than patched
by the monitor at run time: QEMU's tree is dumped for the exact machine options,
decompiled, and our additions are appended as a DTS fragment that dtc merges in.
The monitor stays small (no FDT writer at EL3), and what Linux gets can be read
as text (build/dtb/*.dts). A real board would ship its DTB the same way.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import qemu_command
from tandem.platform.board import Board, IdleState
from tandem.platform.configs import Partition
from tandem.platform.paths import BUILD, KERNEL_DTS, firmware
from tandem.results import write_atomic

DTB_DIR = BUILD / "dtb"


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, check=True, capture_output=True)
    except FileNotFoundError as e:
        raise TandemError(f"{what}: {argv[0]} not found (run `make setup`)") from e
    except subprocess.CalledProcessError as e:
        raise TandemError(f"{what} failed: {e.stderr.decode(errors='replace').strip()}") from e


def kernel_dts(board: Board, smp: int) -> str:
    """The board's own tree from Debian's kernel source (its [linux] dtb,
    built by `make`), as DTS, made this board's under Tandem: the memory
    node says Linux's RAM, the secure world's devices are disabled, and
    cores beyond `smp` are gone."""
    assert board.linux_dtb is not None
    path = KERNEL_DTS / board.linux_dtb
    if not path.exists():
        raise TandemError(f"{path} is missing (run `make build`)")
    dts = _run(["dtc", "-q", "-I", "dtb", "-O", "dts", str(path)], "dtc").stdout.decode()
    paths = node_paths(dts)
    ram = board.normal_ram
    memory = next((p for n, p in paths.items() if n.startswith("memory@")), None)
    if memory is None:
        raise TandemError(f"{path}: no memory node")
    lines = [f"&{{{memory}}} {{ reg = <{_cells(ram.base)} {_cells(ram.size)}>; }};"]
    for name in board.secure_nodes:
        if name not in paths:
            raise TandemError(f"{path}: no node {name} (boards/{board.name}.toml secure_nodes)")
        lines.append(f'&{{{paths[name]}}} {{ status = "disabled"; }};')
    lines += [
        f"/delete-node/ &{{{p}}};"
        for n, p in paths.items()
        if n.startswith("cpu@") and p.startswith("/cpus/") and int(n[4:], 16) >= smp
    ]
    return dts + "\n".join(lines) + "\n"


_NODE_OPEN = re.compile(r"^\s*(?:[\w-]+:\s*)?([\w,.+@/-]+) \{$")


def node_paths(dts: str) -> dict[str, str]:
    """Every node's full path in a decompiled DTS, by its name (the first
    node of a name wins)."""
    stack: list[str] = []
    out: dict[str, str] = {}
    for line in dts.splitlines():
        m = _NODE_OPEN.match(line)
        if m:
            name = m.group(1)
            stack.append(name)
            if name != "/":
                out.setdefault(name, "/" + "/".join(stack[1:]))
        elif line.strip() == "};" and stack:
            stack.pop()
    return out


# QEMU writes fresh random `rng-seed` and `kaslr-seed` properties into every
# tree it dumps, and Linux seeds its random numbers from them: two build/
# folders (two machines, a fresh clone) would boot the same commit into
# different runs, with nothing in the provenance to tell. Pinned to values
# of our own, every build gives Linux the same seeds, as per-core and
# virtual timing's determinism needs. Linux's randomness is still a factor
# to measure (issue 49: a seed moved lhp's threshold from 81 to 348 µs), so
# a boot may ask for seed N: seed 0 is the words every run so far booted
# with, seed N > 0 other fixed words of its own, the same on every build.
_SEEDS = re.compile(r"\b(rng-seed|kaslr-seed) = <([^>]*)>;")
_SEED_TEXT = b"tandem: Linux's seeds, the same for every build"


def seed_words(seed: int) -> bytes:
    """The 32 bytes Linux's seed `seed` writes into the device tree."""
    if seed < 0:
        raise TandemError(f"Linux seed {seed} is negative")
    return hashlib.sha256(_SEED_TEXT + (f" #{seed}".encode() if seed else b"")).digest()


def pin_seeds(dts: str, seed: int = 0) -> str:
    """`dts` with every rng-seed and kaslr-seed set to the fixed words of
    Linux seed `seed` (as many cells as QEMU gave, at most 8)."""
    chosen = seed_words(seed)

    def pinned(match: re.Match[str]) -> str:
        cells = len(match.group(2).split())
        if not 1 <= cells <= len(chosen) // 4:
            raise TandemError(f"QEMU's device tree has a {match.group(1)} of {cells} cells")
        words = [int.from_bytes(chosen[4 * i : 4 * i + 4], "big") for i in range(cells)]
        return f"{match.group(1)} = <{' '.join(f'0x{w:08x}' for w in words)}>;"

    return _SEEDS.sub(pinned, dts)


# The seeds a tree without any gets for a Linux seed other than 0, as many
# cells as QEMU writes (32 bytes of rng-seed, a 64-bit kaslr-seed), pinned
# by `pin_seeds` like QEMU's.
_ADDED_SEEDS = (
    "/ {\n\tchosen {\n"
    f"\t\trng-seed = <{' '.join(['0'] * 8)}>;\n"
    "\t\tkaslr-seed = <0 0>;\n\t};\n};\n"
)


def add_seeds(dts: str, seed: int) -> str:
    """A tree without seeds (the kernel source's, `kernel_dts`) given Linux
    seed `seed`: seed 0 leaves it as it is (no seeds, as every run on it
    before issue 49 booted), another seed adds /chosen's rng-seed and
    kaslr-seed with that seed's words (`pin_seeds`)."""
    seed_words(seed)  # refuses a negative seed
    if _SEEDS.search(dts):
        raise TandemError("the tree already has seeds: pin them (pin_seeds) instead")
    if seed == 0:
        return dts
    return pin_seeds(dts + _ADDED_SEEDS, seed)


def qemu_dts(board: Board, smp: int, el2: bool = False, seed: int = 0) -> str:
    """QEMU's own device tree for this machine, as DTS (cached under
    build/dtb), with Linux's seeds pinned to seed `seed` (`pin_seeds`); or
    the board's from Debian's kernel source where it names one, which has
    no seeds: seed 0 leaves it so, another adds them (`add_seeds`)."""
    if board.linux_dtb is not None:
        return add_seeds(kernel_dts(board, smp), seed)
    args = qemu_command.dump_dtb_argv(board, smp, Path("-"), Path("-"), el2)
    version = qemu_command.run(qemu_command.version_argv(), "QEMU").stdout
    key = hashlib.sha256(repr(args).encode() + version).hexdigest()[:16]
    cached = DTB_DIR / f"qemu-{key}.dts"
    if cached.exists():
        return pin_seeds(cached.read_text(), seed)
    DTB_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        dumped = Path(tmp) / "qemu.dtb"
        argv = qemu_command.dump_dtb_argv(board, smp, firmware(board.name), dumped, el2)
        qemu_command.run(argv, "dumping QEMU's device tree")
        dts = _run(["dtc", "-q", "-I", "dtb", "-O", "dts", str(dumped)], "dtc").stdout.decode()
    # Cached with seed 0's words whatever this boot's seed (a read re-pins):
    # boots prepared at once may both write it, each through its own file.
    write_atomic(cached, pin_seeds(dts))
    return pin_seeds(dts, seed)


def _cells(value: int) -> str:
    return f"0x{value >> 32:x} 0x{value & 0xFFFFFFFF:x}"


def _address(value: int) -> str:
    """A /chosen address (the initramfs's): one cell when it fits 32 bits,
    as the device-tree schema of `linux,initrd-start` has it (dt-schema
    2022.08: uint32), else two. Linux reads either (of_read_number)."""
    return f"0x{value:x}" if value < 1 << 32 else _cells(value)


def _cores(cores: Iterable[int]) -> str:
    """A `tandem,cores` cell list: the cores whose parts of the shared
    region the driver may use (linux/driver/tandem_main.c)."""
    return " ".join(str(c) for c in cores)


# On a partition's command line: which partition this Linux is (rootfs/rcS
# runs its commands, /tandem/exec-NAME.sh). No module is called that, so
# Linux hands it to init without a word.
PARTITION_ARG = "tandem_partition="

# Linux's idle modes (BootOptions.linux_idle): `psci`, the board's idle
# states in the device tree, which cpuidle enters through PSCI CPU_SUSPEND
# (WFI stays state 0); `wfi`, none, so Linux idles with WFI alone.
LINUX_IDLE = ("psci", "wfi")


def _label(state: IdleState) -> str:
    return f"cpu_{state.name}"


def idle_states_fragment(states: tuple[IdleState, ...]) -> list[str]:
    """The `/cpus/idle-states` node for `states` (arm,idle-state entered
    with PSCI), as lines inside the root node; nothing for none."""
    if not states:
        return []
    lines = ["\tcpus {", "\t\tidle-states {", '\t\t\tentry-method = "psci";']
    for st in states:
        lines += [
            f"\t\t\t{_label(st)}: cpu-{st.name} {{",
            '\t\t\t\tcompatible = "arm,idle-state";',
            f'\t\t\t\tidle-state-name = "{st.name}";',
            f"\t\t\t\tarm,psci-suspend-param = <{st.psci_suspend_param:#x}>;",
            f"\t\t\t\tentry-latency-us = <{st.entry_latency_us}>;",
            f"\t\t\t\texit-latency-us = <{st.exit_latency_us}>;",
            f"\t\t\t\tmin-residency-us = <{st.min_residency_us}>;",
            "\t\t\t};",
        ]
    return [*lines, "\t\t};", "\t};"]


def _cpu(core: int, states: tuple[IdleState, ...], extra: str = "") -> str:
    """A Linux core's additions: PSCI brings it up and idles it."""
    idle = ""
    if states:
        idle = f" cpu-idle-states = <{' '.join('&' + _label(s) for s in states)}>;"
    return f'&{{/cpus/cpu@{core}}} {{ enable-method = "psci";{idle}{extra} }};'


def tandem_fragment(
    board: Board,
    smp: int,
    linux_cores: list[int],
    bootargs: str,
    initrd_size: int,
    capacities: dict[int, int] | None = None,
    idle_states: tuple[IdleState, ...] = (),
    cpu_map: bool = True,
) -> str:
    """What Tandem adds to QEMU's tree, as a DTS fragment dtc merges in.
    `cpu_map`: whether the tree has a /cpus/cpu-map (QEMU's has; the EVK's
    from the kernel source has none).

    `capacities` (static capacity mode) gives each Linux core its
    `capacity-dmips-mhz`; Linux takes them only if every one of its cores
    has one and the cores sit in a `cpu-map`. `idle_states`: what cpuidle
    may enter beside WFI (`cpu-idle-states` of every Linux core)."""
    if not linux_cores:
        raise TandemError("no core left for Linux")
    if '"' in bootargs or "\\" in bootargs:
        raise TandemError(f"kernel command line may not contain quotes or backslashes: {bootargs}")
    shm = board.shared
    initrd_end = board.initrd + initrd_size
    if initrd_end > shm.base:
        raise TandemError(
            f"initramfs ({initrd_size} bytes at {board.initrd:#x}) runs into the shared region"
        )
    lines = [
        "/ {",
        "\tpsci {",
        '\t\tcompatible = "arm,psci-1.0", "arm,psci-0.2";',
        '\t\tmethod = "smc";',
        "\t};",
        "\treserved-memory {",
        "\t\t#address-cells = <2>;",
        "\t\t#size-cells = <2>;",
        "\t\tranges;",
        f"\t\ttandem_shm: tandem-shm@{shm.base:x} {{",
        f"\t\t\treg = <{_cells(shm.base)} {_cells(shm.size)}>;",
        "\t\t\tno-map;",
        "\t\t};",
        "\t};",
        "\ttandem {",
        '\t\tcompatible = "tandem,tandem";',
        "\t\tmemory-region = <&tandem_shm>;",
        f"\t\tinterrupts = <0 {board.doorbell_spi} 1>;",
        # Linux alone on the machine may use every core's part of the
        # region, the RTOS-only cores' too (heteroos' core 3).
        f"\t\ttandem,cores = <{_cores(range(smp))}>;",
        "\t};",
        "\tchosen {",
        f'\t\tbootargs = "{bootargs}";',
        f"\t\tlinux,initrd-start = <{_address(board.initrd)}>;",
        f"\t\tlinux,initrd-end = <{_address(initrd_end)}>;",
        "\t};",
        *idle_states_fragment(idle_states),
        "};",
    ]
    capacities = capacities or {}
    if capacities and sorted(capacities) != sorted(linux_cores):
        raise TandemError(f"capacities for cores {sorted(capacities)}, Linux has {linux_cores}")
    for core in range(smp):
        if core in linux_cores:
            extra = f" capacity-dmips-mhz = <{capacities[core]}>;" if core in capacities else ""
            lines.append(_cpu(core, idle_states, extra))
        else:
            lines.append(f"/delete-node/ &{{/cpus/cpu@{core}}};")
    if len(linux_cores) < smp:
        # The topology map would point at deleted cores; Linux needs none,
        # except that it reads capacities only while walking one: then a
        # map of Linux's cores replaces it.
        if cpu_map:
            lines.append("/delete-node/ &{/cpus/cpu-map};")
        if capacities:
            lines.append("&{/cpus} { cpu-map { socket0 { cluster0 {")
            for n, core in enumerate(linux_cores):
                lines.append(f"\tcore{n} {{ cpu = <&{{/cpus/cpu@{core}}}>; }};")
            lines.append("}; }; }; };")
    return "\n".join(lines) + "\n"


# A top-level node with a unit address: `name@address {`.
_DEVICE_NODE = re.compile(r"^\t([a-zA-Z0-9_,.+-]+@[0-9a-f]+) \{$", re.MULTILINE)
# Nodes a partition keeps whatever its devices: its memory and the GIC
# (both rewritten), and what has no MMIO of its own.
_KEPT = ("memory@", "intc@")
# Nodes without a unit address that name a device a partition never has:
# they point at a GPIO controller deleted with the partition's other
# devices (gpio-keys at the normal world's PL061, gpio-restart and
# gpio-poweroff at the secure one), which would leave their phandles
# dangling (`tandem check-dt` found it).
_DEVICELESS_GONE = ("gpio-keys", "gpio-restart", "gpio-poweroff")


def partition_fragment(
    board: Board,
    dts: str,
    smp: int,
    partition: Partition,
    bootargs: str,
    initrd_size: int,
    idle_states: tuple[IdleState, ...] = (),
) -> str:
    """What a partition's Linux gets instead of Tandem's usual additions:
    its cores, its RAM, the GIC's distributor and its cores' redistributors
    only, its devices only (the first its console), the shared region if it
    has it (with Tandem's node if it has Tandem's driver), and its name on
    its command line (`tandem_partition=NAME`, which the initramfs's rcS
    reads: a property of its own in /chosen would break /chosen's binding,
    which names every property it may have)."""
    if '"' in bootargs or "\\" in bootargs:
        raise TandemError(f"kernel command line may not contain quotes or backslashes: {bootargs}")
    initrd = partition.load(board, board.initrd)
    initrd_end = initrd + initrd_size
    if initrd_end > partition.ram.end:
        raise TandemError(
            f"partition {partition.name}: initramfs ({initrd_size} bytes at {initrd:#x}) "
            f"does not fit its RAM (ends {partition.ram.end:#x})"
        )
    devices = [board.partition_devices[d] for d in partition.devices]
    own = {d.node for d in devices}
    first, count = partition.cores[0], len(partition.cores)
    gicr = board.gicr + first * 0x2_0000
    lines = ["/ {", "\tpsci {", '\t\tcompatible = "arm,psci-1.0", "arm,psci-0.2";']
    lines += ['\t\tmethod = "smc";', "\t};"]
    if partition.shared != "none":
        shm = board.shared
        lines += [
            "\treserved-memory {",
            "\t\t#address-cells = <2>;",
            "\t\t#size-cells = <2>;",
            "\t\tranges;",
            f"\t\ttandem_shm: tandem-shm@{shm.base:x} {{",
            f"\t\t\treg = <{_cells(shm.base)} {_cells(shm.size)}>;",
            "\t\t\tno-map;",
            "\t\t};",
            "\t};",
        ]
    if partition.shared == "tandem":
        lines += [
            "\ttandem {",
            '\t\tcompatible = "tandem,tandem";',
            "\t\tmemory-region = <&tandem_shm>;",
            f"\t\tinterrupts = <0 {board.doorbell_spi} 1>;",
            # Its stage 2 maps its own cores' parts of the region only
            # (hyp/core/src/maps.rs): the driver touches no other.
            f"\t\ttandem,cores = <{_cores(partition.cores)}>;",
            "\t};",
        ]
    lines += [
        "\tchosen {",
        f'\t\tbootargs = "{bootargs} {PARTITION_ARG}{partition.name}";',
        f"\t\tlinux,initrd-start = <{_address(initrd)}>;",
        f"\t\tlinux,initrd-end = <{_address(initrd_end)}>;",
    ]
    if devices:
        lines.append(f'\t\tstdout-path = "/{devices[0].node}";')
    lines += ["\t};", *idle_states_fragment(idle_states), "\taliases {"]
    for alias in re.findall(r"^\t\t(serial\d+) = ", _block(dts, "aliases"), re.MULTILINE):
        lines.append(f"\t\t/delete-property/ {alias};")
    if devices:
        lines.append(f'\t\tserial0 = "/{devices[0].node}";')
    lines += ["\t};", "};"]
    memory = next(n for n in _DEVICE_NODE.findall(dts) if n.startswith("memory@"))
    gic = next(n for n in _DEVICE_NODE.findall(dts) if n.startswith("intc@"))
    lines.append(
        f"&{{/{memory}}} {{ reg = <{_cells(partition.ram.base)} {_cells(partition.ram.size)}>; }};"
    )
    lines.append(
        f"&{{/{gic}}} {{ reg = <{_cells(board.gicd)} {_cells(0x1_0000)} "
        f"{_cells(gicr)} {_cells(count * 0x2_0000)}>; }};"
    )
    for node in _DEVICE_NODE.findall(dts):
        if node not in own and not node.startswith(_KEPT):
            lines.append(f"/delete-node/ &{{/{node}}};")
    for node in _DEVICELESS_GONE:
        if re.search(rf"^\t{node} \{{$", dts, re.MULTILINE):
            lines.append(f"/delete-node/ &{{/{node}}};")
    for core in range(smp):
        if core in partition.cores:
            lines.append(_cpu(core, idle_states))
        else:
            lines.append(f"/delete-node/ &{{/cpus/cpu@{core}}};")
    if count < smp:
        lines.append("/delete-node/ &{/cpus/cpu-map};")
    for node in own:
        if not re.search(rf"^\t{re.escape(node)} \{{$", dts, re.MULTILINE):
            raise TandemError(
                f"partition {partition.name}: QEMU's device tree has no /{node} "
                "(is this Tandem's QEMU, qemu/patches?)"
            )
    return "\n".join(lines) + "\n"


def _block(dts: str, name: str) -> str:
    """The body of top-level node `name` in QEMU's DTS ('' if absent)."""
    m = re.search(rf"^\t{name} \{{\n(.*?)^\t\}};", dts, re.MULTILINE | re.DOTALL)
    return m.group(1) if m else ""


def build_dtb(
    board: Board,
    smp: int,
    linux_cores: list[int],
    bootargs: str,
    initrd_size: int,
    out: Path,
    capacities: dict[int, int] | None = None,
    partition: Partition | None = None,
    linux_idle: str = "psci",
    seed: int = 0,
) -> Path:
    """Writes the DTB for one boot (or one partition's Linux) to `out`, and
    its source beside it. `linux_idle`: one of LINUX_IDLE; `seed`: Linux's
    seed (`qemu_dts`)."""
    if linux_idle not in LINUX_IDLE:
        raise TandemError(
            f"Linux idle mode must be one of {', '.join(LINUX_IDLE)}, got '{linux_idle}'"
        )
    states = board.idle_states if linux_idle == "psci" else ()
    if partition is None:
        base = qemu_dts(board, smp, seed=seed)
        dts = base + tandem_fragment(
            board,
            smp,
            linux_cores,
            bootargs,
            initrd_size,
            capacities,
            states,
            cpu_map="\tcpu-map {" in base,
        )
    else:
        if capacities:
            raise TandemError("static capacities are not offered with partitions")
        base = qemu_dts(board, smp, el2=True, seed=seed)
        dts = base + partition_fragment(board, base, smp, partition, bootargs, initrd_size, states)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.with_suffix(".dts")
    source.write_text(dts)
    _run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(out), str(source)], "dtc")
    return out
