"""What each `domains` boot runs: the phases (load, loaded cores) and the
guest script that measures them all in one boot of one environment."""

from __future__ import annotations

from tandem.exp.domains.spec import INFO_CORES, MEASURED_CORE, PERIOD_US, Env
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import script_header


def phases(s: Scenario) -> list[tuple[str, int]]:
    """(load, loaded cores) measured in each boot, in order."""
    loads = s.texts("loads")
    sweep = set(s.integers("loaded_cores"))
    out: list[tuple[str, int]] = []
    if "none" in loads or 0 in sweep:
        out.append(("none", 0))
    memory = {k for k in sweep if k > 0} | ({INFO_CORES} if "memory" in loads else set())
    out += [("memory", k) for k in sorted(memory)]
    if "scheduling" in loads:
        out.append(("scheduling", INFO_CORES))
    return out


def phase_id(load: str, k: int) -> str:
    return f"{load}-{k}"


def guest_script(env: Env, s: Scenario) -> str:
    """The guest script for one environment: every phase in one boot."""
    lines = [
        script_header(
            PERIOD_US,
            s.text("memory_bytes"),
            s.integer("scheduling_threads"),
            "0",
            s.integer("settle_ms"),
        )
    ]
    if env.isolate:
        lines.append(f"isolate_core {MEASURED_CORE}")
    samples = s.integer("samples")
    for load, k in phases(s):
        if load == "memory":
            if env.pin_load:
                lines += [f"load_start memory 1 {core}" for core in range(k)]
            else:
                lines.append(f"load_start memory {k} any")
        elif load == "scheduling":
            cpus = f"0-{INFO_CORES - 1}" if env.pin_load else "any"
            lines.append(f"load_start scheduling 1 {cpus}")
        pid = phase_id(load, k)
        if env.instrument == "rtos":
            lines.append(f"measure_rtos {pid} {samples} {MEASURED_CORE}")
        else:
            where = str(MEASURED_CORE) if env.isolate else "any"
            isolated = "yes" if env.isolate else "no"
            lines.append(f"measure_cyclictest {pid} {samples} {where} {isolated}")
    return "\n".join(lines) + "\n"
