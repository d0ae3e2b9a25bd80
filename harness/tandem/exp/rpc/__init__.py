"""Experiment `rpc` (paper 002): synchronous RPC from Linux into the RTOS,
busy / block / auto wait against the data size.

One boot: the RTOS serves on `server_core`, the client runs pinned on
`client_cpu` (another core, so it really waits). Two measurements per size
and mode, both with `tandem-rpc` in the guest:

- plain call latency: round trip from ringing the doorbell to seeing the
  answer (`tandem-rpc bench`, the driver's own counter stamps);
- the paper's metric: the time until both the RPC task (`pair_calls`
  calls) and an independent CPU-bound task on the same CPU are done
  (`tandem-rpc pair`), median over `pair_runs` runs.

The driver's calibrated model (T_ctx, T_c_hdr, T_s2, V_server, x_opt) is
read from sysfs; the measured crossover is where block's task-pair time
falls below busy's.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from tandem.errors import TandemError
from tandem.exp.common import (
    Boot,
    boot_options,
    num,
    rep_phase_us,
    run_tag,
    run_words,
    runs,
    seeds,
    write_summary,
)
from tandem.exp.rpc.claims import claims
from tandem.exp.rpc.parse import Cell, calibrated, calibration_log, parse_output
from tandem.exp.rpc.plot import plot
from tandem.exp.rpc.report import report
from tandem.exp.rpc.rows import COLUMNS
from tandem.exp.rpc.script import guest_script
from tandem.exp.rpc.spec import NAME, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.platform.paths import RESULTS

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def crossover(busy: dict[int, float], block: dict[int, float]) -> float | None:
    """Where block becomes cheaper than busy for good: the smallest measured
    size from which block wins at every larger size, interpolated in log size
    between it and the size below (None: busy wins at the largest size; a
    size where block wins by noise below one where busy wins is not it)."""
    sizes = sorted(set(busy) & set(block))
    diff = {x: block[x] - busy[x] for x in sizes}
    first = None
    for i in range(len(sizes) - 1, -1, -1):
        if diff[sizes[i]] >= 0:
            break
        first = i
    if first is None:
        return None
    if first == 0:
        return float(sizes[0])
    (px, pd), (x, d) = (
        (sizes[first - 1], diff[sizes[first - 1]]),
        (sizes[first], diff[sizes[first]]),
    )
    lo, hi = math.log(max(px, 1)), math.log(max(x, 1))
    return float(math.exp(lo + (hi - lo) * pd / (pd - d)))


def switch_round_trip_ns(root: Path = RESULTS) -> int | None:
    """Linux -> RTOS -> Linux in instructions (= ns in virtual timing), from
    the latest `./tandem bench switch` (`switch_run` names it): a reference
    from another run, not a measurement of this run's boots."""
    path = root / "switch" / "latest" / "summary.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    try:
        return int(data["linux_to_rtos"]["median_instructions"]) + int(
            data["rtos_to_linux"]["median_instructions"]
        )
    except (KeyError, TypeError, ValueError):
        return None


def switch_run(root: Path = RESULTS) -> str | None:
    """The `bench switch` run `switch_round_trip_ns` reads."""
    latest = root / "switch" / "latest"
    return latest.resolve().name if latest.is_dir() else None


def _cores(s: Scenario) -> tuple[int, int]:
    """The server's core and the client's CPU, checked."""
    smp = s.integer("smp")
    server, cpu = s.integer("server_core"), s.integer("client_cpu")
    if server >= smp or cpu >= smp or server == cpu:
        raise TandemError(
            f"rpc scenario: server_core {server} and client_cpu {cpu} must be different "
            f"cores below smp {smp}"
        )
    return server, cpu


def units(s: Scenario) -> list[Boot]:
    """One boot per Linux seed and repetition, each at its repetition's
    start phase. Every cell (size and mode) is measured in each boot, so a
    claim's paired cells share their boot."""
    timing = s.text("timing")
    server, cpu = _cores(s)
    reps = s.integer("reps")
    return [
        Boot(
            label=run_tag(s, run),
            options=boot_options(
                s,
                timing=timing,
                smp=s.integer("smp"),
                rpc_cores=(server,),
                phase_us=rep_phase_us(run.rep),
                linux_seed=run.seed,
            ),
            script=guest_script(s),
            about=f"{run_words(s, run, reps)}, {timing} timing, server on core {server}, "
            f"client on {cpu}",
        )
        for run in runs(s, reps)
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    lat: dict[Cell, list[tuple[str, float, float]]] = {}
    pair: dict[Cell, list[float]] = {}
    pair_seeds: dict[Cell, list[int]] = {}
    models = []
    lines: list[str] = []
    for boot in units(s):
        lines = measured.lines(boot.label)
        model, l1, p1 = parse_output(lines, measured.where(boot.label))
        models.append(model)
        for k, v in l1.items():
            lat.setdefault(k, []).extend(v)
        for k2, v2 in p1.items():
            pair.setdefault(k2, []).extend(v2)
            # Each task-pair run's boot's Linux seed (`pair_runs` per boot).
            pair_seeds.setdefault(k2, []).extend([boot.options.linux_seed] * len(v2))
    rows: list[dict[str, object]] = []
    for size in s.integers("sizes"):
        for mode in s.texts("modes"):
            calls, times = lat.get((size, mode), []), pair.get((size, mode), [])
            if not calls or not times:
                raise TandemError(f"rpc: nothing measured for {size} bytes, {mode}")
            used = sorted({c[0] for c in calls})
            rows.append(
                {
                    "bytes": size,
                    "mode": mode,
                    "median_ms": round(statistics.median(times), 4),
                    "runs_ms": times,
                    # Beside runs_ms: each run's boot's Linux seed.
                    "run_seeds": pair_seeds[(size, mode)],
                    "auto_used": "/".join(used) if mode == "auto" else mode,
                    "latency_median_us": round(statistics.median(c[1] for c in calls), 3),
                    "latency_us": [c[1] for c in calls],
                    "server_median_us": round(statistics.median(c[2] for c in calls), 3),
                }
            )
    model = models[-1]
    busy = {int(num(r, "bytes")): num(r, "median_ms") for r in rows if r["mode"] == "busy"}
    block = {int(num(r, "bytes")): num(r, "median_ms") for r in rows if r["mode"] == "block"}
    lat_busy = {
        int(num(r, "bytes")): num(r, "latency_median_us") for r in rows if r["mode"] == "busy"
    }
    lat_block = {
        int(num(r, "bytes")): num(r, "latency_median_us") for r in rows if r["mode"] == "block"
    }
    summary: dict[str, object] = {
        "experiment": NAME,
        "timing": s.text("timing"),
        "quick": s.quick,
        "reps": s.integer("reps"),
        "seeds": seeds(s),
        "scenario": s.values,
        "rows": rows,
        "x_opt_bytes": model["x_opt"],
        "crossover_bytes": crossover(busy, block),
        "latency_crossover_bytes": crossover(lat_busy, lat_block),
        "model": model,
        "models": models,
        "calibrated": all(calibrated(m) for m in models),
        "calibration_log": calibration_log(lines),  # the last boot's, like the model
        "switch_round_trip_ns": switch_round_trip_ns(),
        "switch_run": switch_run(),
    }
    write_summary(out, summary, COLUMNS)
    return summary
