"""Platform configurations (configs/NAME.toml): which world owns each core;
the boot configuration the monitor and the RTOS read; and the RTOS
workloads the experiments use, as RTOS applications to select."""

from __future__ import annotations

import struct
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import abi_generated as abi
from tandem.platform.abi_generated import MAX_CORES
from tandem.platform.apps import AppRun, manifest
from tandem.platform.board import Board, Range
from tandem.platform.paths import CONFIGS

POLICIES = ("shared", "rtos", "linux")
# abi/src/boot.rs: magic "TNDMBOOT", layout version, policy codes.
BOOT_MAGIC = int.from_bytes(b"TNDMBOOT", "little")
BOOT_VERSION = 5
POLICY_CODES = {"shared": 0, "rtos": 1, "linux": 2}
_KEYS = {"description", "default_policy", "cores", "linux_off", "partitions"}
_PARTITION_KEYS = {"cores", "ram", "devices", "shared"}
# A partition's RAM comes in whole blocks of this size.
PARTITION_BLOCK = 2 << 20
# What a partition has of the shared region (abi/src/partition.rs flags):
# "tandem" (mapped, with Tandem's driver: the doorbell SPI, SiP calls, PV
# time; one partition at most), "mapped" (mapped, reserved in its device
# tree), "none".
SHARED_MODES = ("tandem", "mapped", "none")
# abi/src/partition.rs: the SPI bitmap covers INTIDs 0..1023; SPIs are 32..1019.
_INTIDS = 1024
_FIRST_SPI = 32
# What Linux's power-off does (abi/src/boot.rs FEATURE_LINUX_OFF_STOPS_MACHINE):
# its cores go idle and the RTOS runs on, or the whole machine powers off.
LINUX_OFF = ("rtos-runs-on", "machine-off")
# abi/src/boot.rs: feature bits.
FEATURE_STEAL_TIME = 1 << 0
FEATURE_LINUX_OFF_STOPS_MACHINE = 1 << 1
# rtos/apps/rpc_server: the RTOS has RPC server tasks for cores 0..3.
RPC_SERVER_CORES = 4
# The applications' parameters (rtos/apps/*/app.toml).
_PERIODIC = manifest("periodic").params
_CTXSW = manifest("ctxsw").params
MIN_PERIOD_US = _PERIODIC["period_us"].minimum
MAX_PERIOD_US = _PERIODIC["period_us"].maximum
DISPATCHES = _PERIODIC["dispatch"].choices
TLB_MODES = _CTXSW["mode"].choices
MIN_SWITCHES = _CTXSW["switches"].minimum
MAX_SWITCHES = _CTXSW["switches"].maximum
MAX_PAGES = _CTXSW["pages"].maximum


@dataclass(frozen=True)
class Workload:
    """The RTOS's periodic workload (paper 000's dummy task, application
    `periodic`): a cyclic handler on `core` releases, every `period_us`, a
    task that busy-loops `work_us`; with `alt_every_ms`, the work switches
    between `work_us` and `alt_work_us` every that many ms. The demo's jobs
    stop; without one the RTOS runs its demo alone."""

    core: int
    period_us: int
    work_us: int
    dispatch: str = "static"
    alt_work_us: int = 0
    alt_every_ms: int = 0

    def check(self, config: PlatformConfig, smp: int) -> None:
        """The monitor and the RTOS refuse a bad workload; say why before booting."""
        if not 0 <= self.core < smp or config.policy(self.core) == "linux":
            raise TandemError(
                f"RTOS workload core {self.core}: must be a core running the RTOS "
                f"(0..{smp - 1}, policy shared or rtos)"
            )
        if not MIN_PERIOD_US <= self.period_us <= MAX_PERIOD_US:
            raise TandemError(
                f"RTOS workload period {self.period_us} us: must be "
                f"{MIN_PERIOD_US}..{MAX_PERIOD_US}"
            )
        for name, work in (("work", self.work_us), ("alternate work", self.alt_work_us)):
            if not 0 <= work < self.period_us:
                raise TandemError(
                    f"RTOS workload {name} {work} us: must be 0..{self.period_us - 1} "
                    "(shorter than the period)"
                )
        if self.dispatch not in DISPATCHES:
            raise TandemError(
                f"RTOS workload dispatch '{self.dispatch}': one of {', '.join(DISPATCHES)}"
            )
        if self.alt_every_ms < 0:
            raise TandemError("RTOS workload alt_every_ms must be >= 0")

    def apps(self) -> tuple[AppRun, ...]:
        """The RTOS applications it selects: `periodic`, and the demo
        without its jobs (the task owns its core's time)."""
        return (
            AppRun.of(
                "periodic",
                core=self.core,
                period_us=self.period_us,
                work_us=self.work_us,
                dispatch=self.dispatch,
                alt_work_us=self.alt_work_us,
                alt_every_ms=self.alt_every_ms,
            ),
            AppRun.of("demo", jobs=0),
        )


@dataclass(frozen=True)
class Ctxsw:
    """The RTOS's context-switch workload (paper 004, application `ctxsw`):
    two protected tasks at
    S-EL0 on `core`, each in its own address space, hand a value back and
    forth `switches` times with sys_chg, each writing `pages` pages of its own
    between hand-offs; `mode` asid (a tag per task) or flush (the TLB
    invalidated on every switch). With `stray`, a third protected task reads
    the kernel's memory and must be stopped. The demo keeps running."""

    core: int
    mode: str = "asid"
    pages: int = 0
    switches: int = 100_000
    stray: bool = False

    def check(self, config: PlatformConfig, smp: int) -> None:
        """The monitor and the RTOS refuse a bad workload; say why before booting."""
        if not 0 <= self.core < smp or config.policy(self.core) == "linux":
            raise TandemError(
                f"ctxsw core {self.core}: must be a core running the RTOS "
                f"(0..{smp - 1}, policy shared or rtos)"
            )
        if self.mode not in TLB_MODES:
            raise TandemError(f"ctxsw mode '{self.mode}': one of {', '.join(TLB_MODES)}")
        if not 0 <= self.pages <= MAX_PAGES:
            raise TandemError(f"ctxsw pages {self.pages}: must be 0..{MAX_PAGES}")
        if not MIN_SWITCHES <= self.switches <= MAX_SWITCHES:
            raise TandemError(
                f"ctxsw switches {self.switches}: must be {MIN_SWITCHES}..{MAX_SWITCHES}"
            )

    def apps(self) -> tuple[AppRun, ...]:
        """The RTOS application it selects (the demo runs beside it)."""
        return (
            AppRun.of(
                "ctxsw",
                core=self.core,
                mode=self.mode,
                pages=self.pages,
                switches=self.switches,
                stray=self.stray,
            ),
        )


@dataclass(frozen=True)
class Partition:
    """One Linux of several (paper 003's DualUnix), under the EL2 layer: its
    cores (contiguous), its RAM (2 MiB aligned), its devices by the board's
    names (`[partition_devices]`; the first is its console) and what it has
    of the shared region (SHARED_MODES)."""

    name: str
    cores: tuple[int, ...]
    ram: Range
    devices: tuple[str, ...]
    shared: str = "none"

    @property
    def boot_core(self) -> int:
        """The core its Linux boots on."""
        return self.cores[0]

    def load(self, board: Board, address: int) -> int:
        """Where an image the board places at `address` in normal RAM goes
        in this partition's RAM (the same offset from its start)."""
        return self.ram.base + address - board.normal_ram.base

    def spis(self, board: Board) -> list[int]:
        """Its SPIs (SPI numbers): its devices', and the RTOS's doorbell if
        it has Tandem's driver."""
        out = [spi for d in self.devices for spi in board.partition_devices[d].spis]
        if self.shared == "tandem":
            out.append(board.doorbell_spi)
        return sorted(set(out))


@dataclass(frozen=True)
class PlatformConfig:
    """A named configuration: a policy per core, and optionally partitions."""

    name: str
    description: str
    default_policy: str
    overrides: dict[int, str]
    # What Linux's power-off does (LINUX_OFF); its reboot and panic always
    # restart Linux alone. With partitions: the first partition's (the
    # others' power-off stops them alone).
    linux_off: str = "rtos-runs-on"
    # Several Linux instances under the EL2 layer; none: one Linux at EL1.
    partitions: tuple[Partition, ...] = ()

    def policy(self, core: int) -> str:
        """The policy of one core."""
        return self.overrides.get(core, self.default_policy)

    def has_rtos(self, smp: int) -> bool:
        """Whether the RTOS runs anywhere when QEMU has `smp` cores."""
        return any(self.policy(c) != "linux" for c in range(smp))

    def _rpc_candidates(self, smp: int) -> list[int]:
        """Cores an RPC (and RPMsg) server may run on: RTOS cores the RTOS
        has a server for and, with partitions, only those of the partition
        with Tandem's driver. Only that partition calls and rings the
        servers, and the RTOS runs first where they serve: a server on
        another partition's core would let the one take the other's core
        for the cost of an SMC (issue 46, hole 3; the monitor refuses it
        too, abi/src/partition.rs `check_rpc_cores`)."""
        cores = [c for c in range(min(smp, RPC_SERVER_CORES)) if self.policy(c) != "linux"]
        if self.partitions:
            owner = [p for p in self.partitions if p.shared == "tandem"]
            cores = [c for c in cores if owner and c in owner[0].cores]
        return cores

    def default_rpc_cores(self, smp: int) -> tuple[int, ...]:
        """Where the RPC server runs unless asked otherwise: the highest
        core of `_rpc_candidates` (none without an RTOS, or with partitions
        of which none has Tandem's driver)."""
        cores = self._rpc_candidates(smp)
        return (cores[-1],) if cores else ()

    def check_rpc_cores(self, smp: int, cores: tuple[int, ...]) -> None:
        """The monitor and the RTOS refuse servers where there is no RTOS,
        and the monitor those outside the partition with Tandem's driver."""
        allowed = self._rpc_candidates(smp)
        for c in cores:
            if c in allowed:
                continue
            if self.partitions and 0 <= c < smp and self.policy(c) != "linux":
                owner = [p.name for p in self.partitions if p.shared == "tandem"]
                raise TandemError(
                    f"RPC server core {c}: with partitions, servers run on cores of the "
                    f"partition with Tandem's driver ({', '.join(owner) or 'none here'}: "
                    f"cores {', '.join(map(str, allowed)) or 'none'}), never on another "
                    "partition's core"
                )
            raise TandemError(
                f"RPC server core {c}: must be a core running the RTOS "
                f"(0..{min(smp, RPC_SERVER_CORES) - 1}, policy shared or rtos)"
            )

    def boot_blob(
        self,
        smp: int,
        steal_time: bool = False,
        rpc_cores: tuple[int, ...] | None = None,
        linux_off: str | None = None,
    ) -> bytes:
        """The boot configuration the monitor and the RTOS read (abi/src/boot.rs).
        `rpc_cores` None: `default_rpc_cores`; `linux_off` None: the
        configuration's."""
        off = self.linux_off if linux_off is None else linux_off
        if off not in LINUX_OFF:
            raise TandemError(f"Linux's power-off '{off}': want one of {', '.join(LINUX_OFF)}")
        codes = [POLICY_CODES[self.policy(c)] for c in range(smp)]
        codes += [POLICY_CODES["linux"]] * (MAX_CORES - smp)
        servers = self.default_rpc_cores(smp) if rpc_cores is None else rpc_cores
        self.check_rpc_cores(smp, servers)
        mask = sum(1 << c for c in set(servers))
        return struct.pack(
            "<QII8BII",
            BOOT_MAGIC,
            BOOT_VERSION,
            smp,
            *codes,
            (FEATURE_STEAL_TIME if steal_time else 0)
            | (FEATURE_LINUX_OFF_STOPS_MACHINE if off == "machine-off" else 0),
            mask,
        )

    def rtos_apps(
        self,
        smp: int,
        workload: Workload | None = None,
        ctxsw: Ctxsw | None = None,
        apps: tuple[AppRun, ...] = (),
    ) -> tuple[AppRun, ...]:
        """The RTOS applications a boot selects (for the workload blob): the
        periodic or the context-switch workload, checked against this
        configuration, then any others asked for."""
        if ctxsw is not None and workload is not None:
            raise TandemError("the RTOS runs one workload: periodic or ctxsw, not both")
        runs: tuple[AppRun, ...] = ()
        if ctxsw is not None:
            ctxsw.check(self, smp)
            runs = ctxsw.apps()
        if workload is not None:
            workload.check(self, smp)
            runs = workload.apps()
        return runs + apps

    def linux_cores(self, smp: int) -> list[int]:
        """Cores Linux may use when QEMU has `smp` cores."""
        return [c for c in range(smp) if self.policy(c) != "rtos"]

    def partitions_for(self, smp: int) -> tuple[Partition, ...]:
        """The partitions on a machine of `smp` cores (their cores beyond it
        dropped); an error if one is left without a core or a Linux core
        without a partition."""
        out = []
        for p in self.partitions:
            cores = tuple(c for c in p.cores if c < smp)
            if not cores:
                raise TandemError(
                    f"configuration '{self.name}': partition {p.name} is on cores "
                    f"{list(p.cores)}, beyond --smp {smp}"
                )
            out.append(Partition(p.name, cores, p.ram, p.devices, p.shared))
        if out:
            assigned = {c for p in out for c in p.cores}
            for c in self.linux_cores(smp):
                if c not in assigned:
                    raise TandemError(
                        f"configuration '{self.name}': Linux core {c} is in no partition"
                    )
            for c in assigned:
                if self.policy(c) == "rtos":
                    raise TandemError(
                        f"configuration '{self.name}': core {c} runs the RTOS alone "
                        "and cannot be in a partition"
                    )
        return tuple(out)

    def partition(self, smp: int, name: str | None) -> Partition | None:
        """The partition called `name` (None: the first), or None without
        partitions; an error for a name the configuration lacks."""
        parts = self.partitions_for(smp)
        if not parts:
            if name is not None:
                raise TandemError(f"configuration '{self.name}' has no partitions")
            return None
        if name is None:
            return parts[0]
        for p in parts:
            if p.name == name:
                return p
        names = ", ".join(p.name for p in parts)
        raise TandemError(f"configuration '{self.name}' has no partition {name} (it has {names})")

    def check_on(self, board: Board) -> None:
        """This configuration on `board` (every boot checks it before writing
        anything): with partitions, a GIC without an ITS; each partition's
        RAM whole 2 MiB blocks of the board's normal RAM, its devices the
        board's, none of them a bus master."""
        if self.partitions:
            check_no_its(board)
        for p in self.partitions:
            where = f"configuration '{self.name}': [partitions.{p.name}]"
            ram = board.normal_ram
            if not (ram.base <= p.ram.base and p.ram.end <= ram.end):
                raise TandemError(
                    f"{where}: RAM must be whole 2 MiB blocks of normal RAM "
                    f"({ram.base:#x}..{ram.end:#x} on board {board.name})"
                )
            for d in p.devices:
                if d not in board.partition_devices:
                    raise TandemError(
                        f"{where}: no device {d!r} on board {board.name} "
                        f"(known: {', '.join(sorted(board.partition_devices))})"
                    )
                check_no_dma(board, d, where)

    def partition_table(
        self, board: Board, smp: int, images: dict[str, int], machine_off: str | None
    ) -> bytes:
        """The partition table the monitor and the EL2 layer read
        (abi/src/partition.rs): `images` gives each partition's images
        header (bytes after the board's linux_images); `machine_off` names
        the partition whose power-off ends the machine. Empty without
        partitions."""
        parts = self.partitions_for(smp)
        if not parts:
            return b""
        check_no_its(board)
        for p in parts:
            for device in p.devices:
                check_no_dma(board, device, f"configuration '{self.name}': partition {p.name}")
        out = struct.pack("<QII", abi.PARTITIONS_MAGIC, abi.PARTITIONS_VERSION, len(parts))
        for p in parts:
            flags = 0
            if p.name == machine_off:
                flags |= abi.PARTITION_FLAG_OFF_STOPS_MACHINE
            if p.shared in ("tandem", "mapped"):
                flags |= abi.PARTITION_FLAG_SHARED_REGION
            if p.shared == "tandem":
                flags |= abi.PARTITION_FLAG_TANDEM
            devices = [board.partition_devices[d] for d in p.devices]
            spis = [0] * (_INTIDS // 32)
            for spi in p.spis(board):
                intid = spi + _FIRST_SPI
                spis[intid // 32] |= 1 << (intid % 32)
            entry = struct.pack(
                "<BBBBIII",
                ord(p.name),
                p.boot_core,
                0 if devices else abi.PARTITION_NO_CONSOLE,
                len(devices),
                sum(1 << c for c in p.cores),
                flags,
                0,
            )
            entry += struct.pack("<QQQQ", p.ram.base, p.ram.size, images[p.name], 0)
            for i in range(abi.PARTITION_MAX_DEVICES):
                d = devices[i] if i < len(devices) else None
                entry += struct.pack("<QQ", d.base if d else 0, d.size if d else 0)
            entry += struct.pack(f"<{_INTIDS // 32}I", *spis)
            assert len(entry) == abi.PARTITION_SIZE
            out += entry
        return out.ljust(
            abi.PARTITIONS_HEADER_SIZE + abi.PARTITIONS_MAX * abi.PARTITION_SIZE, b"\0"
        )


def check_no_its(board: Board) -> None:
    """Partitions only on a machine whose GIC has no ITS: an ITS turns a
    device's message-signalled interrupt into an LPI, whose tables the GIC
    reads and writes wherever they are, past any stage 2; the EL2 layer
    hides LPIs from partitions (docs/hyp.md) and offers no ITS. QEMU's virt
    machine makes one unless told `its=off`."""
    options = dict(option.partition("=")[::2] for option in board.qemu_machine_el2.split(",")[1:])
    if options.get("its") != "off":
        raise TandemError(
            f"board {board.name}: partitions need a GIC without an ITS, and [qemu] "
            f"machine_el2 = '{board.qemu_machine_el2}' does not say its=off: an ITS makes "
            "LPIs, whose tables the GIC writes past any partition's stage 2 (docs/hyp.md)"
        )


def check_no_dma(board: Board, device: str, where: str) -> None:
    """No device that masters the bus in a partition: its DMA goes wherever
    Linux tells it, past every stage 2, into another partition's RAM, and
    the EL2 layer has no SMMU to confine it (docs/hyp.md, "What the
    isolation gives"). The board says which devices do (`dma`)."""
    if board.partition_devices[device].dma:
        raise TandemError(
            f"{where}: device '{device}' masters the bus (dma = true in board {board.name}'s "
            "[partition_devices]) and the EL2 layer has no SMMU to confine its DMA, which "
            "would reach every partition's RAM: a partition may not have it"
        )


def available(directory: Path = CONFIGS) -> list[str]:
    """Names of the configurations that exist."""
    return sorted(p.stem for p in directory.glob("*.toml"))


def _policy(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in POLICIES:
        raise TandemError(f"{where}: policy must be one of {', '.join(POLICIES)}, got {value!r}")
    return value


def load_config(name: str, directory: Path = CONFIGS) -> PlatformConfig:
    """Reads and checks configs/NAME.toml."""
    path = directory / f"{name}.toml"
    if not path.exists():
        raise TandemError(
            f"unknown configuration '{name}' (available: {', '.join(available(directory))})"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TandemError(f"{path}: {e}") from e
    unknown = set(data) - _KEYS
    if unknown:
        raise TandemError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
            f"(allowed: {', '.join(sorted(_KEYS))})"
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise TandemError(f"{path}: 'description' must be a string")
    default = _policy(data.get("default_policy", "shared"), f"{path}: default_policy")
    cores = data.get("cores", {})
    if not isinstance(cores, dict):
        raise TandemError(f"{path}: [cores] must be a table of core index = policy")
    overrides: dict[int, str] = {}
    for key, value in cores.items():
        if not key.isdigit():
            raise TandemError(f"{path}: [cores] key '{key}' is not a core index")
        overrides[int(key)] = _policy(value, f"{path}: cores.{key}")
    linux_off = data.get("linux_off", "rtos-runs-on")
    if linux_off not in LINUX_OFF:
        raise TandemError(
            f"{path}: linux_off {linux_off!r}: want one of {', '.join(LINUX_OFF)} "
            "(what Linux's power-off does)"
        )
    partitions = _partitions(data.get("partitions", {}), path)
    return PlatformConfig(name, description, default, overrides, linux_off, partitions)


def _int_value(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TandemError(f"{where}: must be an integer, got {value!r}")
    return value


def _partitions(table: object, path: Path) -> tuple[Partition, ...]:
    """[partitions.NAME] tables, checked as far as they can be without a
    board (PlatformConfig.check_on checks them against the boot's board,
    and the monitor and the EL2 layer the table again)."""
    if not isinstance(table, dict):
        raise TandemError(f"{path}: [partitions] must be a table of [partitions.NAME]")
    out: list[Partition] = []
    taken: set[int] = set()
    for name, value in table.items():
        where = f"{path}: [partitions.{name}]"
        if len(name) != 1 or not ("A" <= name <= "Z"):
            raise TandemError(f"{where}: a partition's name is one capital letter")
        if not isinstance(value, dict):
            raise TandemError(f"{where}: must be a table")
        unknown = set(value) - _PARTITION_KEYS
        if unknown:
            raise TandemError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                f"(allowed: {', '.join(sorted(_PARTITION_KEYS))})"
            )
        cores = value.get("cores")
        if not isinstance(cores, list) or not cores:
            raise TandemError(f"{where}: 'cores' must be a non-empty list of core numbers")
        core_list = tuple(_int_value(c, f"{where} cores") for c in cores)
        if list(core_list) != list(range(core_list[0], core_list[0] + len(core_list))):
            raise TandemError(f"{where}: cores must be contiguous and ascending, got {cores}")
        if not all(0 <= c < MAX_CORES for c in core_list) or taken & set(core_list):
            raise TandemError(f"{where}: cores {cores} out of range or in another partition")
        taken |= set(core_list)
        ram = value.get("ram")
        if not isinstance(ram, dict) or set(ram) != {"base", "size"}:
            raise TandemError(f"{where}: 'ram' must be {{ base = ..., size = ... }}")
        span = Range(
            _int_value(ram["base"], f"{where} ram.base"),
            _int_value(ram["size"], f"{where} ram.size"),
        )
        if span.size <= 0 or span.base % PARTITION_BLOCK or span.size % PARTITION_BLOCK:
            raise TandemError(f"{where}: RAM must be whole 2 MiB blocks of normal RAM")
        devices = value.get("devices", [])
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise TandemError(f"{where}: 'devices' must be a list of device names")
        if len(devices) > abi.PARTITION_MAX_DEVICES:
            raise TandemError(f"{where}: at most {abi.PARTITION_MAX_DEVICES} devices")
        shared = value.get("shared", "none")
        if shared not in SHARED_MODES:
            raise TandemError(f"{where}: 'shared' must be one of {', '.join(SHARED_MODES)}")
        out.append(Partition(name, core_list, span, tuple(devices), shared))
    if sum(p.shared == "tandem" for p in out) > 1:
        raise TandemError(f'{path}: at most one partition has shared = "tandem"')
    if len(out) > abi.PARTITIONS_MAX:
        raise TandemError(f"{path}: at most {abi.PARTITIONS_MAX} partitions")
    return tuple(out)
