"""The test suite's guard: a test that starts QEMU must be marked `qemu`.

`make host-test` runs the tests not marked `qemu` and must pass on a machine
that has built nothing. Every QEMU start goes through tandem.platform.qemu_command's
`spawn` and `run`; for an unmarked test both raise at once, naming the
missing marker, instead of failing later on a missing build or (worse)
passing only where a build happens to exist.
"""

from __future__ import annotations

from typing import NoReturn

import pytest

from tandem.platform import qemu_command


@pytest.fixture(autouse=True)
def _qemu_only_in_marked_tests(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.node.get_closest_marker("qemu") is not None:
        return

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise qemu_command.QemuInHostTest(
            f"{request.node.nodeid} starts QEMU but is not marked @pytest.mark.qemu; "
            "mark it, so `make host-test` never needs a built system"
        )

    monkeypatch.setattr(qemu_command, "spawn", refuse)
    monkeypatch.setattr(qemu_command, "run", refuse)
