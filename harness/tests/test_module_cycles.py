"""scripts/check-module-cycles.py on the harness and the Rust workspace
(`make lint`): no import cycle and no import up the layers, here and in
small trees made to have each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tandem.platform.paths import ROOT

CHECK = ROOT / "scripts" / "check-module-cycles.py"


def _check(*args: str | Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(CHECK), *map(str, args)], capture_output=True, text=True
    )
    lines = done.stderr.splitlines()
    assert (done.returncode == 0) == (not lines), done
    return lines


def test_the_harness_and_the_workspace_import_downwards_only() -> None:
    assert _check("--python", ROOT / "harness" / "tandem") == []
    assert _check("--workspace", ROOT) == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "tandem"


def test_a_cycle_an_upward_import_and_a_module_in_no_layer_are_found(tmp_path: Path) -> None:
    base = {
        "tandem/__init__.py": "",
        "tandem/errors.py": "",
        "tandem/platform/__init__.py": "",
        "tandem/instruments/__init__.py": "",
        "tandem/exp/__init__.py": "",
        "tandem/exp/common.py": "from tandem.instruments import measure\n",
        "tandem/instruments/measure.py": "from tandem.platform import boot\n",
    }
    assert _check("--python", _package(tmp_path / "ok", base)) == []
    cycle = _package(
        tmp_path / "cycle",
        base
        | {
            "tandem/platform/boot.py": "from tandem.platform import gdb\n",
            "tandem/platform/gdb.py": "def f() -> None:\n    from tandem.platform.boot import x\n",
        },
    )
    assert _check("--python", cycle) == [
        f"check-module-cycles: {cycle}: modules import in a loop: "
        "tandem.platform.boot -> tandem.platform.gdb -> tandem.platform.boot"
    ]
    up = _package(
        tmp_path / "up", base | {"tandem/instruments/measure.py": "import tandem.exp.common\n"}
    )
    (message,) = [m for m in _check("--python", up) if "higher layer" in m]
    assert "tandem.instruments.measure (instruments) depends on tandem.exp.common" in message
    stray = _package(tmp_path / "stray", base | {"tandem/helpers.py": ""})
    assert _check("--python", stray) == [
        "check-module-cycles: tandem.helpers: in no layer "
        "(scripts/check-module-cycles.py, PYTHON_LAYERS)"
    ]


def _workspace(root: Path, crates: dict[str, list[str]]) -> Path:
    members = ", ".join(f'"{d}"' for d in crates)
    (root / "Cargo.toml").parent.mkdir(parents=True)
    (root / "Cargo.toml").write_text(f"[workspace]\nmembers = [{members}]\n")
    for directory, deps in crates.items():
        (root / directory).mkdir(parents=True)
        lines = [f'[package]\nname = "{directory.replace("/", "-")}"\n', "[dependencies]"]
        lines += [f'{d.replace("/", "-")} = {{ path = "../{d}" }}' for d in deps]
        (root / directory / "Cargo.toml").write_text("\n".join(lines) + "\n")
    return root


def test_a_crate_depending_on_a_higher_one_is_found(tmp_path: Path) -> None:
    fine = {"abi": [], "monitor/core": ["abi"], "tools/gen": ["abi", "monitor/core"]}
    assert _check("--workspace", _workspace(tmp_path / "fine", fine)) == []
    generator_in_abi = {"abi": [], "monitor/core": ["abi"], "abi/gen": ["abi", "monitor/core"]}
    assert _check("--workspace", _workspace(tmp_path / "up", generator_in_abi)) == [
        "check-module-cycles: crate abi-gen [abi/gen] (shared) depends on "
        "monitor-core [monitor/core] (cores), a higher layer"
    ]
