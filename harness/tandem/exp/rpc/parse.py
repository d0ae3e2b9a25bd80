"""Reading an `rpc` boot's output: the driver's model and its calibration
log, each call's round trip and each task-pair run."""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.exp.rpc.script import MODEL_KEYS

Cell = tuple[int, str]


def calibrated(model: dict[str, int]) -> bool:
    """Whether the driver's calibration succeeded: every parameter measured
    (a failed one leaves them at 0 and auto always blocks; x_opt itself may
    be 0, the model's own answer when blocking costs less than T_s2)."""
    return all(model.get(k, 0) > 0 for k in MODEL_KEYS if k != "x_opt")


def calibration_log(lines: list[str]) -> str | None:
    """The driver's messages about its calibration at load (the script's
    `calibration` line, messages separated by ';'), or None."""
    for line in reversed(lines):
        tag, _, rest = line.partition(" ")
        if tag == "calibration":
            return "; ".join(m.strip() for m in rest.split(";") if m.strip()) or None
    return None


def parse_output(
    lines: list[str], where: str
) -> tuple[dict[str, int], dict[Cell, list[tuple[str, float, float]]], dict[Cell, list[float]]]:
    """The model, per (bytes, mode) the latency calls (mode used, round trip
    µs, server µs) and the task-pair times (ms)."""
    model: dict[str, int] = {}
    lat: dict[Cell, list[tuple[str, float, float]]] = {}
    pair: dict[Cell, list[float]] = {}
    phase: list[str] = []
    for line in lines:
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == "model" and len(f) == 1 + len(MODEL_KEYS):
                model = {k: int(v) for k, v in zip(MODEL_KEYS, f[1:], strict=True)}
            elif f[0] == "@@PHASE":
                phase = f[1:]
            elif f[0] == "rt" and phase[:1] == ["lat"] and len(f) == 6:
                cell = (int(phase[1]), phase[2])
                if int(f[1]) != cell[0]:
                    raise ValueError(f"size {f[1]} in phase {cell}")
                lat.setdefault(cell, []).append((f[2], int(f[3]) / 1000, int(f[4]) / 1000))
            elif f[0] == "pair" and phase[:1] == ["pair"] and len(f) == 5:
                pair.setdefault((int(phase[1]), phase[2]), []).append(float(f[3]))
            elif f[0] == "error":
                raise TandemError(f"{where}: a call failed in phase {phase}: {line}")
        except (ValueError, IndexError) as e:
            raise TandemError(f"{where}: cannot read '{line}': {e}") from e
    if not model:
        raise TandemError(f"{where}: no model line (is the driver's RPC calibrated?)")
    return model, lat, pair
