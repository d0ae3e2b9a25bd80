#!/bin/bash
# Builds Tandem's QEMU: Debian's qemu source (qemu/source.env, fetched with
# apt) with Tandem's patches (qemu/patches/series), for aarch64-softmmu with
# TCG plugins and capstone, into a cache outside the clone keyed by source,
# patches and build options, so a second clean clone reuses it. Then points
# LINK (default build/qemu/install) at the cached installation.
#
# Usage: scripts/build-qemu.sh [LINK]
# Cache: $TANDEM_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/tandem)/qemu/<key>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
link=${1:-$root/build/qemu/install}
here=$root/qemu
# shellcheck source=../qemu/source.env
. "$here/source.env"

say() { echo "qemu: $*" >&2; }
die() {
	echo "qemu: $*" >&2
	exit 1
}

# What decides the build: the options below, each with why.
configure_options=(
	--target-list=aarch64-softmmu # the one machine Tandem runs
	--without-default-features    # no UI, audio, network back-ends, ...
	--enable-tcg
	--enable-plugins     # tandem-pathcount (harness/pathcount)
	--enable-capstone    # disassembly in -d in_asm: bench switch, ctxsw read it
	--enable-fdt=system  # the virt board's device tree (Debian's libfdt)
	--disable-install-blobs # firmware for other machines: not needed (-nodefaults)
	--disable-docs
	--disable-download # no git subprojects: everything from Debian and PyPI
	--disable-werror   # a newer host compiler's warnings must not fail the build
)

mapfile -t patches < <(grep -v '^#' "$here/patches/series" | sed '/^$/d')
key=$(
	{
		echo "$QEMU_ORIG_SHA256"
		printf '%s\n' "${configure_options[@]}"
		cat "$here/build-requirements.txt" "$here/patches/series" "$0"
		for p in "${patches[@]}"; do cat "$here/patches/$p"; done
	} | sha256sum | cut -c1-16
)
cache=${TANDEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}/qemu
install=$cache/$key
binary=$install/bin/qemu-system-aarch64

point_link() {
	mkdir -p "$(dirname "$link")"
	if [ "$(readlink "$link" 2>/dev/null)" != "$install" ]; then
		ln -sfn "$install" "$link"
	fi
}

if [ -x "$binary" ] && [ -f "$install/.complete" ]; then
	point_link
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time; a second clone waits and then reuses it
if [ -x "$binary" ] && [ -f "$install/.complete" ]; then
	point_link
	exit 0
fi

start=$(date +%s)
say "building QEMU ${QEMU_DEB_VERSION} with ${#patches[@]} Tandem patches (key $key; a few minutes, once)"

# 1. The source tarball, with apt's transport and its signed index's hash.
tarball=$cache/src/$QEMU_ORIG
if [ ! -f "$tarball" ] || ! echo "$QEMU_ORIG_SHA256  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
	mkdir -p "$cache/src"
	uris=$(apt-get source --print-uris "qemu=$QEMU_DEB_VERSION" 2>&1) ||
		die "apt cannot find Debian's qemu source $QEMU_DEB_VERSION (deb-src for bookworm-backports; run make setup): $uris"
	line=$(grep -F " $QEMU_ORIG " <<<"$uris") ||
		die "apt lists no $QEMU_ORIG for qemu $QEMU_DEB_VERSION: $uris"
	uri=$(awk '{print $1}' <<<"$line" | tr -d "'")
	hash=$(awk '{print $4}' <<<"$line")
	[ "$hash" = "SHA256:$QEMU_ORIG_SHA256" ] ||
		die "Debian's index gives $QEMU_ORIG $hash, qemu/source.env pins SHA256:$QEMU_ORIG_SHA256"
	say "fetching $QEMU_ORIG"
	# As root into root's cache: apt's unprivileged download user could not
	# write there, so say so rather than have apt warn.
	/usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file "$uri" "$tarball.part" "$hash" >/dev/null
	mv "$tarball.part" "$tarball"
fi

# 2. Unpack and patch in a scratch directory next to the cache entry.
work=$(mktemp -d "$cache/build-$key.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$tarball"
src=$(echo "$work"/qemu-*)
for p in "${patches[@]}"; do
	say "patch $p"
	patch -d "$src" -p1 -s --no-backup-if-mismatch <"$here/patches/$p" ||
		die "$p does not apply to $QEMU_ORIG"
done

# 3. meson and pycotap (pinned) for QEMU's configure.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --require-hashes \
	-r "$here/build-requirements.txt"

# 4. Configure, build, install into the cache entry (QEMU installs are
#    relocatable: it finds its data next to its binary).
mkdir -p "$work/build"
say "configure"
(cd "$work/build" && "$src/configure" --prefix="$work/install" \
	--python="$work/venv/bin/python3" "${configure_options[@]}" >"$work/configure.log" 2>&1) || {
	tail -n 30 "$work/configure.log" >&2
	die "configure failed"
}
say "compile (ninja; progress every 10 %)"
# Only the emulator and what installing it needs (not QEMU's own tests);
# ninja prints [done/total] per step: show a line at every tenth.
if ! ninja -C "$work/build" -j"$(nproc)" qemu-system-aarch64 trace/trace-events-all 2>&1 |
	tee "$work/ninja.log" | awk '
	match($0, /^\[[0-9]+\/[0-9]+\]/) {
		split(substr($0, 2, RLENGTH - 2), n, "/")
		p = int(10 * n[1] / n[2])
		if (p > shown) { shown = p; printf "qemu:   %d %% (%s/%s)\n", 10 * p, n[1], n[2] > "/dev/stderr" }
	}'; then
	grep -E "error|FAILED" "$work/ninja.log" | head -n 20 >&2
	die "compiling QEMU failed"
fi
"$work/venv/bin/meson" install -C "$work/build" --no-rebuild >"$work/install.log" 2>&1 || {
	tail -n 20 "$work/install.log" >&2
	die "installing QEMU failed"
}
"$work/install/bin/qemu-system-aarch64" --version >/dev/null || die "the built QEMU does not run"
{
	echo "source: $QEMU_ORIG ($QEMU_DEB_VERSION)"
	echo "patches: ${patches[*]}"
	echo "options: ${configure_options[*]}"
} >"$work/install/BUILD-INFO"
touch "$work/install/.complete"
rm -rf "$install"
mv "$work/install" "$install"
point_link
say "built in $(($(date +%s) - start)) s: $binary"
