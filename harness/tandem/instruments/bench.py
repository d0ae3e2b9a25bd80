"""Benchmarks: `tandem bench boot`, `latency` and `switch`."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from tandem import provenance
from tandem.platform import qemu_command
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import RESULTS
from tandem.results import mark_latest, new_run_dir


@dataclass(frozen=True)
class BootSample:
    """One boot: host seconds to the first shell command, and to QEMU exit."""

    run: int
    boot_s: float
    poweroff_s: float


def boot(options: BootOptions, runs: int, out_root: Path = RESULTS) -> Path:
    """Boots `runs` times and records host wall time from QEMU start to the
    first command running in a Linux shell (rcS done, driver loaded), and from
    `poweroff` to QEMU exiting. Writes raw samples and a summary."""
    samples: list[BootSample] = []
    for i in range(runs):
        result = run_exec(options, "true", timeout_s=120)
        if result.status != 0 or result.qemu_status != 0:
            raise SystemExit(f"bench boot: run {i + 1} failed (console: {result.console_log})")
        samples.append(BootSample(i + 1, round(result.boot_s, 3), round(result.poweroff_s, 3)))
        print(
            f"bench boot: run {i + 1}/{runs}: shell after {result.boot_s:.2f} s, "
            f"off {result.poweroff_s:.2f} s later",
            file=sys.stderr,
        )
    boots = [s.boot_s for s in samples]
    offs = [s.poweroff_s for s in samples]
    summary = {
        "benchmark": "boot",
        "board": options.board.name,
        "timing": options.timing.mode,
        "quantum_ns": options.timing.quantum,
        "clock": "host wall time (QEMU start to the first command in Linux)",
        "smp": options.smp,
        "config": options.config.name,
        "runs": runs,
        "boot_median_s": round(statistics.median(boots), 3),
        "boot_min_s": min(boots),
        "boot_max_s": max(boots),
        "poweroff_median_s": round(statistics.median(offs), 3),
        "poweroff_max_s": max(offs),
    }
    out = new_run_dir(out_root / "boot" / options.config.name)
    (out / "samples.json").write_text(json.dumps([asdict(s) for s in samples], indent=2) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    mark_latest(out)
    print(json.dumps(summary, indent=2))
    return out


LATENCY_SCRIPT = """
set -e
# @@COUNT PHASE core N TO_RTOS TO_LINUX: the monitor's world switches on
# each core; @@COUNT PHASE cpu N ENTRIES: Linux's entries into its standby
# idle state (CPU_SUSPEND) on each of its CPUs.
counts() {{
	for d in /sys/bus/platform/devices/tandem/core[0-9]*; do
		echo "@@COUNT $1 core ${{d##*core}} $(cat $d/switches_to_rtos) $(cat $d/switches_to_linux)"
	done
	for d in /sys/devices/system/cpu/cpu[0-9]*; do
		f=$d/cpuidle/state1/usage
		[ -r $f ] && echo "@@COUNT $1 cpu ${{d##*cpu}} $(cat $f)"
	done
	true
}}
counts start
tandem-lat save /tmp/lat0
sleep {idle_s}
tandem-lat save /tmp/lat1
counts idle
hackbench -g 8 -l {loops} > /dev/null
tandem-lat save /tmp/lat2
counts hackbench
tandem-lat report /tmp/lat0 /tmp/lat1
tandem-lat report /tmp/lat1 /tmp/lat2
"""


def _counts(lines: list[str]) -> dict[str, dict[str, dict[str, list[int]]]]:
    """The script's @@COUNT lines: phase -> "core"/"cpu" -> number -> values."""
    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for line in lines:
        words = line.split()
        if len(words) >= 5 and words[0] == "@@COUNT" and words[2] in ("core", "cpu"):
            out.setdefault(words[1], {}).setdefault(words[2], {})[words[3]] = [
                int(w) for w in words[4:]
            ]
    return out


def _deltas(
    counts: dict[str, dict[str, dict[str, list[int]]]], before: str, after: str
) -> dict[str, object]:
    """Per core, the world switches each way in a phase; per Linux CPU, its
    standby entries."""
    out: dict[str, object] = {}
    for kind, names in (("core", ("to_rtos", "to_linux")), ("cpu", ("standby_entries",))):
        a, b = counts.get(before, {}).get(kind, {}), counts.get(after, {}).get(kind, {})
        out[f"{kind}s"] = {
            n: dict(zip(names, (y - x for x, y in zip(a[n], b[n], strict=True)), strict=True))
            for n in sorted(b)
            if n in a
        }
    return out


def _phase(load: str, report: dict[str, object]) -> dict[str, object]:
    def us(key: str) -> float:
        value = report[key]
        assert isinstance(value, int | float)
        return round(value / 1000, 3)

    return {
        "load": load,
        "samples": report["samples"],
        "min_us": us("min_ns"),
        "avg_us": us("avg_ns"),
        "max_us": us("max_ns"),
        "beyond_histogram": report["overflow"],
        "per_core": report["cores"],
    }


def latency(
    options: BootOptions,
    idle_s: int,
    loops: int,
    min_samples: int,
    out_root: Path = RESULTS,
) -> Path:
    """RTOS timer-interrupt latency (secure timer compare value to the third
    instruction of the RTOS's IRQ handler) with Linux idle, then with Linux
    running hackbench on every core. Writes the histograms and a summary."""
    print(
        f"bench latency: booting ({options.timing.words()}, {options.smp} cores)",
        file=sys.stderr,
    )
    result = run_exec(options, LATENCY_SCRIPT.format(idle_s=idle_s, loops=loops), timeout_s=1200)
    if result.status != 0 or len(result.lines) < 2:
        raise SystemExit(f"bench latency: run failed (console: {result.console_log})")
    idle, loaded = (json.loads(line) for line in result.lines[-2:])
    phases = [_phase("idle", idle), _phase("hackbench", loaded)]
    counts = _counts(result.lines)
    phases[0]["counts"] = _deltas(counts, "start", "idle")
    phases[1]["counts"] = _deltas(counts, "idle", "hackbench")
    for phase in phases:
        samples = phase["samples"]
        assert isinstance(samples, int)
        if samples < min_samples:
            raise SystemExit(
                f"bench latency: only {samples} samples with Linux {phase['load']} "
                f"(want {min_samples}); raise --idle-seconds or --hackbench-loops"
            )
    summary = {
        "benchmark": "latency",
        "board": options.board.name,
        "timing": options.timing.mode,
        "quantum_ns": options.timing.quantum,
        "measured": "secure timer compare value to the 3rd instruction of the RTOS IRQ handler",
        "resolution_ns": idle["tick_ns"],
        "histogram_limit_us": round(float(idle["tick_ns"]) * 16384 / 1000, 1),
        "smp": options.smp,
        "config": options.config.name,
        "linux_idle": options.linux_idle,
        "phases": phases,
    }
    out = new_run_dir(out_root / "latency")
    with (out / "histograms.csv").open("w") as f:
        f.write("load,latency_ns,count\n")
        for name, report in (("idle", idle), ("hackbench", loaded)):
            for ns, count in report["histogram"]:
                f.write(f"{name},{ns},{count}\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    mark_latest(out)
    for p in phases:
        print(
            f"{p['load']:>9}: {p['samples']} samples, min {p['min_us']} us, "
            f"avg {p['avg_us']} us, max {p['max_us']} us"
            + (f" ({p['beyond_histogram']} beyond the histogram)" if p["beyond_histogram"] else "")
        )
        counted = p["counts"]
        assert isinstance(counted, dict)
        cores = counted["cores"]
        cpus = counted["cpus"]
        assert isinstance(cores, dict) and isinstance(cpus, dict)
        to_rtos = sum(c["to_rtos"] for c in cores.values())
        standby = sum(c["standby_entries"] for c in cpus.values())
        print(f"{'':>9}  {to_rtos} switches to the RTOS, {standby} standby entries (CPU_SUSPEND)")
    print(f"results: {out}")
    return out


def switch(options: BootOptions, seconds: int, out_root: Path = RESULTS) -> Path:
    """World-switch cost in instructions, each way, with where they go, from
    QEMU's execution log of the monitor and the RTOS (see switchcost.py)."""
    from tandem.instruments import switchcost
    from tandem.platform.paths import firmware_elf

    # The board's own firmware: each board's is linked at its addresses.
    monitor_elf = firmware_elf(options.board.name, "tandem-monitor")
    rtos_elf = firmware_elf(options.board.name, "tandem-rtos")
    for elf in (monitor_elf, rtos_elf):
        if not elf.exists():
            raise SystemExit(f"bench switch: {elf} missing (run `make build`)")
    # The monitor runs from flash below the RTOS's image, the RTOS from its RAM.
    board = options.board
    code = (
        f"{board.secure_flash.base:#x}..{board.rtos_image - 1:#x},"
        f"{board.rtos_ram.base:#x}..{board.rtos_ram.end - 1:#x}"
    )
    # Linux idles with WFI here: the Linux -> RTOS path counted is the FIQ
    # vector's (an RTOS interrupt finding Linux running or in its WFI).
    # Idling through CPU_SUSPEND, an idle core's switch starts from the
    # monitor's own wait in Linux's place instead, which switchcost does
    # not pair, and only a busy core's would be counted.
    logged = BootOptions(
        config=options.config,
        board=options.board,
        timing=options.timing,
        smp=options.smp,
        extra_qemu_args=qemu_command.exec_log_args(code, "{run_dir}/exec.log"),
        linux_idle="wfi",
    )
    # Taken before the boot, as `tandem exp run` does.
    stamp = provenance.collect([logged])
    print(
        f"bench switch: booting with QEMU's execution log ({options.timing.words()})",
        file=sys.stderr,
    )
    result = run_exec(logged, f"sleep {seconds}", timeout_s=600)
    if result.status != 0:
        raise SystemExit(f"bench switch: run failed (console: {result.console_log})")
    log_path = result.console_log.parent / "exec.log"
    with log_path.open() as f:
        log = switchcost.parse(f)
    log_path.unlink()
    symbols = switchcost.Symbols.load([monitor_elf, rtos_elf])
    monitor_vectors = switchcost.Symbols.load([monitor_elf]).address("vectors")
    rtos_vectors = switchcost.Symbols.load([rtos_elf]).address("vectors")
    measured = switchcost.measure(log, symbols, monitor_vectors, rtos_vectors)
    summary = {
        "benchmark": "switch",
        "board": options.board.name,
        "linux_idle": logged.linux_idle,
        "timing": options.timing.mode,
        "quantum_ns": options.timing.quantum,
        "unit": "instructions (virtual timing: 1 instruction = 1 ns)",
        "measured": {
            "linux_to_rtos": "monitor FIQ vector to the RTOS's IRQ vector",
            "rtos_to_linux": "RTOS YIELD smc to the monitor's eret into Linux",
        },
        "smp": options.smp,
        "config": options.config.name,
        **measured,
        "provenance": stamp,
    }
    out = new_run_dir(out_root / "switch")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    mark_latest(out)
    for direction in ("linux_to_rtos", "rtos_to_linux"):
        d = measured[direction]
        assert isinstance(d, dict)
        if not d.get("samples"):
            raise SystemExit(f"bench switch: no {direction} switch in the log")
        print(
            f"{direction}: median {d['median_instructions']} instructions "
            f"(min {d['min_instructions']}, max {d['max_instructions']}, {d['samples']} switches)"
        )
        path = d["median_path"]
        assert isinstance(path, dict)
        for name, n in path.items():
            print(f"    {n:5d}  {name}")
    print(f"results: {out}")
    return out
