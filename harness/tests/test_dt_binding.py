"""The `tandem` node's binding (linux/Documentation/devicetree/bindings) and
`tandem check-dt`'s validation, on the host: the binding passes dt-schema's
meta-schema, a tree with Tandem's additions validates, and trees that break
the binding are caught (the check can fail). `make lint` runs the real
thing: `./tandem check-dt` over every configuration's generated trees."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tandem.platform import dtb, dtcheck
from tandem.platform.board import load_board

pytestmark = pytest.mark.skipif(
    shutil.which("dt-validate") is None or shutil.which("dtc") is None,
    reason="dt-schema or dtc not installed (make setup)",
)

# The parts of QEMU's tree the fragment refers to, with what dt-schema's
# core schemas want of them.
BASE = """/dts-v1/;
/ {
\tcompatible = "linux,dummy-virt";
\tmodel = "test";
\t#address-cells = <2>;
\t#size-cells = <2>;
\tinterrupt-parent = <&gic>;
\tgic: intc@8000000 {
\t\tcompatible = "arm,gic-v3";
\t\treg = <0x00 0x8000000 0x00 0x10000 0x00 0x80a0000 0x00 0xf60000>;
\t\tinterrupt-controller;
\t\t#interrupt-cells = <3>;
\t};
\tmemory@40000000 {
\t\tdevice_type = "memory";
\t\treg = <0x00 0x40000000 0x00 0x40000000>;
\t};
\tcpus {
\t\t#address-cells = <1>;
\t\t#size-cells = <0>;
\t\tcpu@0 { device_type = "cpu"; compatible = "arm,cortex-a53"; reg = <0>; };
\t\tcpu@1 { device_type = "cpu"; compatible = "arm,cortex-a53"; reg = <1>; };
\t};
\tchosen { };
};
"""


def _tree(tmp_path: Path, source: str) -> Path:
    dts = tmp_path / "t.dts"
    dts.write_text(source)
    out = tmp_path / "t.dtb"
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", out, dts], check=True)
    return out


def _fragment() -> str:
    board = load_board()
    return dtb.tandem_fragment(board, 2, [0, 1], "x", 16, idle_states=board.idle_states)


def test_the_binding_passes_the_meta_schema_and_a_broken_one_does_not(tmp_path: Path) -> None:
    assert dtcheck.check_binding() == []
    bindings = tmp_path / "bindings"
    broken = bindings / "firmware" / "tandem,tandem.yaml"
    broken.parent.mkdir(parents=True)
    text = dtcheck.TANDEM_BINDING.read_text()
    broken.write_text(text.replace("maintainers:\n  - Tandem developers", "owners:\n  - x"))
    found = dtcheck.check_binding(broken, bindings)
    assert any("maintainers" in f for f in found), found


def test_tandems_additions_validate(tmp_path: Path) -> None:
    schemas = dtcheck.schemas(tmp_path / "schemas", kernel=False)
    assert dtcheck.validate(_tree(tmp_path, BASE + _fragment()), schemas) == []


@pytest.mark.parametrize(
    ("change", "finding"),
    [
        # The driver needs to know which cores' parts it may touch.
        (("\t\ttandem,cores = <0 1>;\n", ""), "'tandem,cores' is a required property"),
        (("tandem,cores = <0 1>", "tandem,cores = <0 9>"), "9 is greater than the maximum"),
        (("tandem,cores = <0 1>;", "tandem,cores = <0 1>; tandem,spare;"), "'tandem,spare'"),
        (('"tandem,tandem"', '"tandem,tandem", "x"'), "is too long"),
    ],
)
def test_a_node_that_breaks_the_binding_is_found(
    tmp_path: Path, change: tuple[str, str], finding: str
) -> None:
    schemas = dtcheck.schemas(tmp_path / "schemas", kernel=False)
    fragment = _fragment()
    assert change[0] in fragment
    found = dtcheck.validate(_tree(tmp_path, BASE + fragment.replace(*change)), schemas)
    assert any(finding in f and "tandem,tandem.yaml" in f for f in found), found


def test_known_findings_in_qemus_own_nodes_are_left_out(tmp_path: Path) -> None:
    schemas = dtcheck.schemas(tmp_path / "schemas", kernel=False)
    qemu_bus = (
        "\tplatform-bus@c000000 {\n\t\tinterrupt-parent = <&gic>;\n\t\tranges = <0 0 0xc000000 "
        "0x2000000>;\n\t\t#address-cells = <1>;\n\t\t#size-cells = <1>;\n\t\tcompatible = "
        '"qemu,platform", "simple-bus";\n\t};\n};\n'
    )
    source = BASE[: BASE.rindex("};")] + qemu_bus + _fragment()
    tree = _tree(tmp_path, source)
    raw = subprocess.run(
        ["dt-validate", "-s", schemas, tree], capture_output=True, text=True, check=False
    )
    assert "platform-bus@c000000: 'interrupt-parent'" in raw.stdout + raw.stderr
    assert dtcheck.validate(tree, schemas) == []
