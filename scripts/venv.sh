#!/bin/bash
# Creates or refreshes .venv with the pinned Python dependencies (the harness
# itself runs from harness/, see ./tandem). Quick when nothing changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
lock=$root/harness/requirements.lock
stamp=$venv/.tandem-stamp
want=$(cat "$lock" "$root/harness/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
# Shards of a run started at once on a fresh clone (a Slurm job array) all
# get here: one prepares .venv, the others wait for it and find it ready.
mkdir -p "$venv"
exec 9>"$venv/.tandem-lock"
flock 9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
echo "setup: preparing .venv (pinned Python dependencies)" >&2
python3 -m venv "$venv" || {
	echo "setup: python3 -m venv failed; install python3-venv (make setup does)" >&2
	exit 1
}
"$venv/bin/pip" install -q --disable-pip-version-check -r "$lock"
echo "$want" >"$stamp"
