#!/bin/bash
# Writes rootfs/packages.lock: the exact Debian arm64 packages (name, version,
# SHA-256 of the .deb) that rootfs/packages.txt resolves to on Debian's mirror
# today, dependencies included. rootfs/build.sh downloads exactly these, so two
# builds of one commit make the same initramfs even after Debian publishes an
# update (on 1 Dec 2026 zlib1g's security update changed the image between two
# builds of one commit). Run it (`make rootfs-lock`) after changing
# packages.txt, or when build.sh says the mirror no longer serves a locked
# version, and commit the lock: the initramfs's digest changes with it.
#
# Usage: rootfs/lock.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lock=$here/packages.lock

mapfile -t wanted < <(grep -v '^#' "$here/packages.txt" | sed '/^$/d; s/$/:arm64/')
# Interpreters the tools never exec (python, perl) are left out.
mapfile -t all < <(apt-cache depends --recurse --no-recommends --no-suggests \
	--no-conflicts --no-breaks --no-replaces --no-enhances "${wanted[@]}" |
	grep -E '^[a-z0-9].*:arm64$' | grep -vE '^(python3|libpython3|perl|dpkg|install-info)' | sort -u)
if [ ${#all[@]} -eq 0 ]; then
	echo "rootfs-lock: apt knows no arm64 packages; run 'make setup' (it adds the arm64 architecture)" >&2
	exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "rootfs-lock: downloading ${#all[@]} packages to read their versions and digests"
(cd "$scratch" && apt-get download -q "${all[@]}" >/dev/null 2>&1) || {
	echo "rootfs-lock: apt-get download failed; run 'apt-get update' and try again" >&2
	exit 1
}

{
	echo "# The Debian (bookworm, arm64) packages the initramfs is made from:"
	echo "# name, version, SHA-256 of the .deb. Written by rootfs/lock.sh"
	echo "# (make rootfs-lock) from the packages.txt whose digest follows; do not edit."
	echo "# packages.txt $(sha256sum "$here/packages.txt" | cut -d' ' -f1)"
	for deb in "$scratch"/*.deb; do
		printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
			"$(sha256sum "$deb" | cut -d' ' -f1)"
	done | LC_ALL=C sort
} >"$lock.tmp"
mv "$lock.tmp" "$lock"
echo "rootfs-lock: $(grep -vc '^#' "$lock") packages in $lock"
