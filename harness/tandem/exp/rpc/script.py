"""What the `rpc` boot runs: the driver's calibrated model from sysfs, then
the latency calls and task-pair runs of every size and mode."""

from __future__ import annotations

from tandem.exp.scenario import Scenario

SYSFS = "/sys/bus/platform/devices/tandem"
MODEL_KEYS = ("t_ctx_ns", "t_c_hdr_ns", "t_s2_ns", "v_server_bytes_per_ms", "x_opt")


def guest_script(s: Scenario) -> str:
    """The guest script: the model, then every size and mode."""
    cpu = s.integer("client_cpu")
    lines = [
        "set -e",
        f'echo "model $(cat {" ".join(f"{SYSFS}/rpc_{k}" for k in MODEL_KEYS)} | tr "\\n" " ")"',
        # The driver's own account of its calibration at load (or why it failed).
        "echo \"calibration $(dmesg | grep -o 'RPC:\\? \\(model\\|calibration\\).*' "
        "| tr '\\n' ';')\"",
    ]
    for size in s.integers("sizes"):
        for mode in s.texts("modes"):
            lines.append(f"echo '@@PHASE lat {size} {mode}'")
            lines.append(f"tandem-rpc bench -C {cpu} -m {mode} -n {s.integer('calls')} {size}")
    for run in range(s.integer("pair_runs")):
        for size in s.integers("sizes"):
            for mode in s.texts("modes"):
                lines.append(f"echo '@@PHASE pair {size} {mode} {run}'")
                lines.append(
                    f"tandem-rpc pair -C {cpu} -m {mode} -n {s.integer('pair_calls')} "
                    f"-w {s.integer('pair_work')} {size}"
                )
    return "\n".join(lines) + "\n"
