#!/bin/bash
# Builds Tandem's initramfs from Debian arm64 packages, our init scripts, the
# tandem driver and tools. Output: $OUT/initramfs.cpio (uncompressed: QEMU
# loads it directly and the kernel unpacks it without decompressing).
#
# Usage: rootfs/build.sh OUT_DIR TOOLS_DIR MODULE_KO...
# (all go to /lib/modules: rcS loads Tandem's driver, tandem.ko, at boot;
# the others, such as the hostile-Linux test module, wait there for a test)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$1
tools_dir=$2
shift 2
modules=("$@")
debs=$out/debs
pkgroot=$out/pkgroot
stage=$out/stage

readelf=aarch64-linux-gnu-readelf

lock=$here/packages.lock

# 1. Download exactly the packages rootfs/packages.lock names (once per lock:
#    debs/.complete holds the digest of the lock they came from).
[ -f "$lock" ] || { echo "rootfs: $lock is missing; run 'make rootfs-lock'" >&2; exit 1; }
listed=$(sha256sum "$here/packages.txt" | cut -d' ' -f1)
if ! grep -qx "# packages.txt $listed" "$lock"; then
	echo "rootfs: rootfs/packages.txt changed since rootfs/packages.lock was written;" \
		"run 'make rootfs-lock' and commit the lock" >&2
	exit 1
fi
lock_digest=$(sha256sum "$lock" | cut -d' ' -f1)
mkdir -p "$debs"
if [ "$(cat "$debs/.complete" 2>/dev/null)" != "$lock_digest" ]; then
	rm -f "$debs"/*.deb "$debs/.complete"
	mapfile -t locked < <(grep -v '^#' "$lock" | awk '{ print $1 ":arm64=" $2 }')
	echo "rootfs: downloading the ${#locked[@]} locked arm64 packages"
	if ! (cd "$debs" && apt-get download -q "${locked[@]}" >"$out/download.log" 2>&1); then
		echo "rootfs: Debian's mirror did not serve every version rootfs/packages.lock names" \
			"(an update may have replaced one; see $out/download.log):" >&2
		grep -E '^E:' "$out/download.log" >&2 || true
		echo "rootfs: run 'apt-get update'; if a version is gone, 'make rootfs-lock' locks" \
			"the ones served now (the initramfs changes with it: commit the lock)" >&2
		exit 1
	fi
fi
# Every .deb, cached or fresh, must be the one the lock names, byte for byte.
while read -r name version digest; do
	found=
	for deb in "$debs/${name}_"*.deb; do
		[ -e "$deb" ] || continue
		[ "$(dpkg-deb -f "$deb" Package)" = "$name" ] || continue
		[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || continue
		found=$deb
	done
	if [ -z "$found" ]; then
		rm -f "$debs/.complete"
		echo "rootfs: $name $version (rootfs/packages.lock) is not in $debs; run make again" >&2
		exit 1
	fi
	if [ "$(sha256sum "$found" | cut -d' ' -f1)" != "$digest" ]; then
		rm -f "$debs/.complete"
		echo "rootfs: $found does not have the SHA-256 rootfs/packages.lock gives" \
			"($digest); run make again to download it anew" >&2
		exit 1
	fi
done < <(grep -v '^#' "$lock")
if [ "$(find "$debs" -name '*.deb' | wc -l)" -ne "$(grep -vc '^#' "$lock")" ]; then
	rm -f "$debs/.complete"
	echo "rootfs: $debs holds packages rootfs/packages.lock does not name; run make again" >&2
	exit 1
fi
echo "$lock_digest" >"$debs/.complete"

# 2. Unpack them all into one tree to pick files from.
rm -rf "$pkgroot" "$stage"
mkdir -p "$pkgroot"
for deb in "$debs"/*.deb; do
	dpkg-deb -x "$deb" "$pkgroot"
done
(cd "$debs" && ls *.deb) >"$out/packages.manifest"

# 3. Stage the image: tools, their library closure, the dynamic loader.
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib,dev,proc,sys,tmp,run,etc,root,mnt}
libdirs=(lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib)

copy_file() { # copy a package file (following symlinks) to the same path
	local rel=$1
	mkdir -p "$stage/$(dirname "$rel")"
	cp -L "$pkgroot/$rel" "$stage/$rel"
}

find_lib() {
	local soname=$1 d
	for d in "${libdirs[@]}"; do
		if [ -e "$pkgroot/$d/$soname" ]; then
			echo "$d/$soname"
			return 0
		fi
	done
	return 1
}

declare -A seen=()
queue=()
while read -r tool; do
	[ -e "$pkgroot/$tool" ] || { echo "rootfs: $tool not in the packages" >&2; exit 1; }
	copy_file "$tool"
	queue+=("$tool")
done < <(grep -v '^#' "$here/tools.txt" | sed '/^$/d')

while [ ${#queue[@]} -gt 0 ]; do
	file=${queue[0]}
	queue=("${queue[@]:1}")
	while read -r soname; do
		[ -n "${seen[$soname]:-}" ] && continue
		seen[$soname]=1
		lib=$(find_lib "$soname") || { echo "rootfs: $file needs $soname, not found in the packages" >&2; exit 1; }
		copy_file "$lib"
		queue+=("$lib")
	done < <("$readelf" -d "$pkgroot/$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
copy_file lib/ld-linux-aarch64.so.1

# 4. Our part: init, driver, tools.
cp "$here/init" "$stage/init"
cp "$here/inittab" "$stage/etc/inittab"
cp "$here/rcS" "$stage/etc/rcS"
cp "$here/profile" "$stage/etc/profile"
chmod 755 "$stage/init" "$stage/etc/rcS"
mkdir -p "$stage/lib/modules"
cp "${modules[@]}" "$stage/lib/modules/"
for t in "$tools_dir"/*; do
	install -m 755 "$t" "$stage/usr/bin/$(basename "$t")"
done
echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
echo "root:x:0:" >"$stage/etc/group"

# 5. Pack reproducibly: sorted names, fixed owner and time.
find "$stage" -exec touch -h -d @0 {} +
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc --owner=0:0 --reproducible) >"$out/initramfs.cpio.tmp"
mv "$out/initramfs.cpio.tmp" "$out/initramfs.cpio"
echo "rootfs: $(du -h "$out/initramfs.cpio" | cut -f1) initramfs, $(find "$stage" -type f | wc -l) files"
