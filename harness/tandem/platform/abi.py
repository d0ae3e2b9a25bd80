"""The ABI constants as the generated C header states them (one source:
abi/, through `make build`), for tests that must agree with the firmware."""

from __future__ import annotations

import re

from tandem.errors import TandemError
from tandem.platform.paths import BUILD

HEADER = BUILD / "include" / "tandem_abi.h"
_NUMBER = r"\(?(-?(?:0x[0-9a-fA-F]+|[0-9]+))\)?"


def constants() -> dict[str, int]:
    """TANDEM_* numeric defines of the header, without the prefix."""
    if not HEADER.is_file():
        raise TandemError(f"{HEADER} missing (run `make build`)")
    text = HEADER.read_text()
    return {
        m[1]: int(m[2], 0) for m in re.finditer(rf"#define TANDEM_(\w+) {_NUMBER}$", text, re.M)
    }
