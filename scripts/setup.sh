#!/bin/bash
# Installs what Tandem needs on Debian bookworm, as root: QEMU >= 9.2 from
# bookworm-backports, the aarch64 cross toolchain, Debian's Linux 6.1 source,
# dtc, kernel build dependencies, arm64 package lists for the rootfs, the
# pinned Rust toolchain and the Python virtualenv. Idempotent, and quick when
# everything is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

apt_packages=(
	gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross
	linux-source-6.1 device-tree-compiler
	bc bison flex libssl-dev libelf-dev cpio kmod xz-utils make rsync
	python3 python3-venv
)
# 8.1 fixed an icount fairness bug of bookworm's 7.2; 9.2 brought plugin API
# version 4, which tandem-pathcount (harness/pathcount) is built for.
qemu_min=9.2

say() { echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

installed() { # is every named package installed?
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 1
	done
}

qemu_ok() {
	command -v qemu-system-aarch64 >/dev/null || return 1
	local v
	v=$(qemu-system-aarch64 --version | sed -n 's/^QEMU emulator version \([0-9]*\.[0-9]*\).*/\1/p')
	[ -n "$v" ] && [ "$(printf '%s\n%s\n' "$qemu_min" "$v" | sort -V | head -n1)" = "$qemu_min" ]
}

apt_updated=
apt_update() {
	[ -n "$apt_updated" ] && return
	say "apt-get update"
	as_root apt-get update -q >/dev/null
	apt_updated=1
}

[ -r /etc/debian_version ] || die "this setup is for Debian bookworm; see README.md for what to install elsewhere"

# Debian's arm64 packages are the rootfs's source.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	say "adding the arm64 architecture for the rootfs packages"
	as_root dpkg --add-architecture arm64
	apt_updated=
	apt_update
fi

# QEMU >= $qemu_min (see above) from backports.
backports=/etc/apt/sources.list.d/tandem-backports.sources
if ! qemu_ok; then
	if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
		say "enabling bookworm-backports"
		as_root tee "$backports" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		apt_updated=
	fi
	apt_update
	say "installing QEMU from bookworm-backports"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-t bookworm-backports qemu-system-arm >/dev/null
	qemu_ok || die "QEMU >= $qemu_min is needed; got: $(qemu-system-aarch64 --version | head -n1)"
fi

if ! installed "${apt_packages[@]}"; then
	apt_update
	say "installing ${apt_packages[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${apt_packages[@]}" >/dev/null
fi

if ! apt-cache show busybox-static:arm64 >/dev/null 2>&1; then
	apt_update
	apt-cache show busybox-static:arm64 >/dev/null 2>&1 || die "apt has no arm64 package lists"
fi

# The pinned Rust toolchain, with the firmware target.
command -v rustup >/dev/null || die "rustup is needed (https://rustup.rs); it installs the pinned toolchain"
toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' "$root/rust-toolchain.toml")
if ! rustup +"$toolchain" target list --installed 2>/dev/null | grep -qx aarch64-unknown-none-softfloat ||
	! rustup +"$toolchain" component list --installed 2>/dev/null | grep -q '^clippy'; then
	say "installing Rust $toolchain"
	rustup toolchain install "$toolchain" --profile minimal -c rustfmt -c clippy \
		-t aarch64-unknown-none-softfloat >/dev/null
fi

"$root/scripts/venv.sh"
