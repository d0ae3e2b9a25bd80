"""The ABI's numbers by name, for tests and scripts that look them up: the
module `tandem-abi-gen` prints from abi/ (abi_generated.py), one source with
the firmware and the C header."""

from __future__ import annotations

from tandem.platform import abi_generated


def constants() -> dict[str, int]:
    """Every integer constant of the generated module."""
    return {
        name: value
        for name, value in vars(abi_generated).items()
        if name.isupper() and isinstance(value, int)
    }
