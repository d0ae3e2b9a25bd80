#!/bin/bash
# Installs what Tandem needs on Debian bookworm, as root, and checks the
# result: Debian packages (each named below with why), QEMU from
# bookworm-backports, rustup and the pinned Rust toolchain, the Python
# virtualenv. Nothing comes from "Recommends": a clean Debian root (see
# `make fresh-test`) gets exactly this list. Idempotent, and quick when
# everything is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# package                  why Tandem needs it
packages_table=$(
	cat <<'EOF'
ca-certificates            HTTPS to static.rust-lang.org (rustup), crates.io and PyPI
curl                       downloads rustup-init when rustup is missing
git                        lint lists the tracked Rust files (git ls-files)
gcc                        host C compiler: Linux's host programs, the linker for Rust host crates
libc6-dev                  host C library headers for the same
make                       the build
patch                      applies Tandem's Linux patch series to Debian's source
perl                       Linux's build scripts and checkpatch.pl (lint)
python3                    the harness (./tandem), firmware packing
python3-venv               .venv with the pinned Python dependencies
gcc-aarch64-linux-gnu      the kernel, the driver and the static Linux tools
binutils-aarch64-linux-gnu objcopy for the firmware image, readelf for the rootfs
libc6-dev-arm64-cross      glibc for the static Linux tools
linux-source-6.1           Debian's Linux source, patched and built for the normal world
xz-utils                   unpacks the Linux source tarball
bc                         Linux's build (timeconst)
bison                      Linux's build (Kconfig parser)
flex                       Linux's build (Kconfig lexer)
libssl-dev                 Linux's build (sign-file, certificates)
libelf-dev                 Linux's build (objtool, resolve_btfids)
kmod                       Linux's module install step (depmod)
cpio                       Linux's build (in-kernel headers archive)
rsync                      Linux's build (headers)
device-tree-compiler       dtc: the device tree Linux gets (harness/tandem/platform/dtb.py)
ninja-build                builds QEMU (scripts/build-qemu.sh)
pkgconf                    QEMU's configure finds its libraries
libglib2.0-dev             QEMU's main library
zlib1g-dev                 QEMU (compressed images, required)
libfdt-dev                 QEMU's virt board builds its device tree
libcapstone-dev            QEMU's disassembler for -d in_asm (bench switch, ctxsw)
dt-schema                  dt-validate: the tandem node's binding against every generated device tree (lint)
gdb-multiarch              ./tandem gdb: one gdb for the monitor, the RTOS and Linux (aarch64)
EOF
)
# The commands the build runs, and the package each comes from.
commands_table=$(
	cat <<'EOF'
curl                  curl
git                   git
cc                    gcc
make                  make
patch                 patch
perl                  perl
python3               python3
xz                    xz-utils
bc                    bc
bison                 bison
flex                  flex
depmod                kmod
cpio                  cpio
rsync                 rsync
dtc                   device-tree-compiler
aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
aarch64-linux-gnu-objcopy binutils-aarch64-linux-gnu
aarch64-linux-gnu-readelf binutils-aarch64-linux-gnu
ninja                 ninja-build
pkg-config            pkgconf
dt-validate           dt-schema
dt-doc-validate       dt-schema
gdb-multiarch         gdb-multiarch
EOF
)
kernel_tarball=/usr/src/linux-source-6.1.tar.xz
# The emulator: Debian's qemu 10.0 source from bookworm-backports (deb-src),
# built with Tandem's patches by scripts/build-qemu.sh (the harness checks
# version, machine and plugins: harness/tandem/platform/setup_check.py).
qemu_sources=/etc/apt/sources.list.d/tandem-qemu-source.sources
# rustup, when the machine has none: a pinned release from the Rust project's
# distribution server, checked against its SHA-256.
rustup_version=1.28.2
declare -A rustup_sha256=(
	[x86_64]=20a06e644b0d9bd2fbdbfd52d42540bdde820ea7df86e92e533c073da0cdd43c
	[aarch64]=e3853c5a252fca15252d07cb23a1bdd9377a8c6f3efa01531109281ae47f841c
)
firmware_target=aarch64-unknown-none-softfloat

say() { echo "setup: $*"; }
die() {
	echo "setup: $*" >&2
	exit 1
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

installed() { # is the named package installed?
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

apt_updated=
apt_update() {
	[ -n "$apt_updated" ] && return
	say "apt-get update"
	as_root apt-get update -q >/dev/null
	apt_updated=1
}

apt_install() { # apt_install [-t SUITE] PACKAGE...
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "$@" >/dev/null
}

[ -r /etc/debian_version ] || die "this setup is for Debian bookworm; see README.md for what to install elsewhere"

# --- Debian packages ----------------------------------------------------------

# Debian's arm64 packages are the rootfs's source.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	say "adding the arm64 architecture for the rootfs packages"
	as_root dpkg --add-architecture arm64
	apt_updated=
fi

mapfile -t packages < <(awk '{print $1}' <<<"$packages_table")
missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	apt_update
	say "installing ${missing[*]}"
	apt_install "${missing[@]}"
fi

if [ ! -f "$qemu_sources" ]; then
	say "adding Debian's bookworm-backports sources (QEMU 10.0's source package)"
	as_root tee "$qemu_sources" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt_updated=
	apt_update
fi

if ! apt-cache show busybox-static:arm64 >/dev/null 2>&1; then
	apt_updated=
	apt_update
fi

# --- Rust ---------------------------------------------------------------------

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
if ! command -v rustup >/dev/null; then
	arch=$(uname -m)
	sum=${rustup_sha256[$arch]:-}
	[ -n "$sum" ] || die "no pinned rustup for host architecture $arch; install rustup (https://rustup.rs)"
	say "installing rustup $rustup_version"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	curl -sSf --retry 3 -o "$tmp/rustup-init" \
		"https://static.rust-lang.org/rustup/archive/$rustup_version/$arch-unknown-linux-gnu/rustup-init"
	echo "$sum  $tmp/rustup-init" | sha256sum -c --quiet - ||
		die "rustup-init $rustup_version does not match its pinned SHA-256"
	chmod +x "$tmp/rustup-init"
	"$tmp/rustup-init" -y -q --no-modify-path --profile minimal --default-toolchain none >/dev/null
	rm -rf "$tmp"
	trap - EXIT
fi

# The pinned Rust toolchain, with the firmware target.
toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' "$root/rust-toolchain.toml")
if ! rustup +"$toolchain" target list --installed 2>/dev/null | grep -qx "$firmware_target" ||
	! rustup +"$toolchain" component list --installed 2>/dev/null | grep -q '^clippy'; then
	say "installing Rust $toolchain"
	rustup toolchain install "$toolchain" --profile minimal -c rustfmt -c clippy \
		-t "$firmware_target" >/dev/null
fi

"$root/scripts/venv.sh"

# Tandem's QEMU (cached outside the clone; minutes the first time).
"$root/scripts/build-qemu.sh" "$root/build/qemu/install"

# --- checks: everything the build and the boots use is here ---------------------

problems=()
while read -r cmd pkg; do
	command -v "$cmd" >/dev/null || problems+=("command '$cmd' (package $pkg)")
done <<<"$commands_table"
[ -r "$kernel_tarball" ] || problems+=("$kernel_tarball (package linux-source-6.1)")
apt-cache show busybox-static:arm64 >/dev/null 2>&1 ||
	problems+=("apt's arm64 package lists (dpkg --add-architecture arm64; apt-get update)")
command -v cargo >/dev/null || problems+=("cargo (rustup toolchain $toolchain)")
rustup +"$toolchain" target list --installed 2>/dev/null | grep -qx "$firmware_target" ||
	problems+=("Rust target $firmware_target for $toolchain")
if [ ${#problems[@]} -gt 0 ]; then
	for p in "${problems[@]}"; do echo "setup: MISSING: $p" >&2; done
	die "set-up is incomplete (see above)"
fi
# QEMU: version, Tandem's exact machine, plugin support.
if ! out=$("$root/tandem" check-setup 2>&1); then
	echo "$out" >&2
	die "QEMU cannot boot Tandem (see above)"
fi
