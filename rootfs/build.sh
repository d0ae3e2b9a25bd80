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

list_packages() {
	grep -v '^#' "$here/packages.txt" | sed '/^$/d'
}

# 1. Download the packages and their dependencies (once; apt caches by name).
#    Interpreters the tools never exec (python, perl) are left out.
mkdir -p "$debs"
if [ ! -f "$debs/.complete" ] || [ "$here/packages.txt" -nt "$debs/.complete" ]; then
	echo "rootfs: resolving arm64 packages"
	mapfile -t wanted < <(list_packages | sed 's/$/:arm64/')
	mapfile -t all < <(apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances "${wanted[@]}" |
		grep -E '^[a-z0-9].*:arm64$' | grep -vE '^(python3|libpython3|perl|dpkg|install-info)' | sort -u)
	if [ ${#all[@]} -eq 0 ]; then
		echo "rootfs: apt knows no arm64 packages; run 'make setup' (it adds the arm64 architecture)" >&2
		exit 1
	fi
	echo "rootfs: downloading ${#all[@]} packages"
	(cd "$debs" && apt-get download -q "${all[@]}" >/dev/null)
	: >"$debs/.complete"
fi

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
