"""What each `boot` boot runs once Linux is up: nothing but the first
command, whose start ends the time measured; then Linux powers off, which
is timed too."""

from __future__ import annotations

SCRIPT = "true"
