#!/bin/bash
# `make fresh-test`: the README's commands on a machine that has never seen
# Tandem. Builds a throwaway Debian bookworm root (debootstrap, minbase: less
# than any real install has, so whatever set-up forgets to install shows up
# here), copies a clean clone of the current commit into it, and runs there
#   1. make test
#   2. ./tandem exec -- nproc     (a stand-in for `make run`: boots to a shell)
# A new user needs `make` to type the first command (the README says so);
# that, and nothing else, is installed before it.
# Prints each phase's time and ends with the same line as `make test`. The
# root is unmounted and removed afterwards, also on failure or Ctrl-C.
#
# Needs root (debootstrap, mount, chroot) and Debian's archive. Set
# TANDEM_FRESH_KEEP=1 to keep the root for a look after a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mirror=${TANDEM_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${TANDEM_FRESH_SECURITY:-http://deb.debian.org/debian-security}

say() { echo "fresh-test: $*"; }
die() {
	echo "fresh-test: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, mount, chroot)"
commit=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	say "note: uncommitted changes are not tested; this tests commit ${commit:0:12}"
fi

work=$(mktemp -d /var/tmp/tandem-fresh.XXXXXX)
chroot_dir=$work/root
start_all=$(date +%s)
phases=()
result=FAILED

mounted() { findmnt -rn -o TARGET | grep -E "^$chroot_dir(/|$)" | sort -r || true; }

cleanup() {
	local status=$? pid target
	trap - EXIT INT TERM
	# Whatever still runs inside the root (a QEMU left by a failed test).
	for pid in $(ls /proc | grep -E '^[0-9]+$'); do
		[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$chroot_dir" ] && kill -9 "$pid" 2>/dev/null
	done
	sleep 0.5
	for target in $(mounted); do
		umount "$target" 2>/dev/null || umount -l "$target" || true
	done
	if [ -n "$(mounted)" ]; then
		echo "fresh-test: could not unmount under $chroot_dir; not removing $work" >&2
	elif [ -n "${TANDEM_FRESH_KEEP:-}" ]; then
		say "kept $work (TANDEM_FRESH_KEEP)"
	else
		rm -rf "$work"
	fi
	for line in "${phases[@]}"; do echo "fresh-test: $line"; done
	local total=$(($(date +%s) - start_all))
	echo "== make fresh-test: $result in $((total / 60)) min $((total % 60)) s (commit ${commit:0:12})"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

phase() { # phase NAME COMMAND...: run, time and record it
	local name=$1 t0 rc=0
	shift
	say "== $name"
	t0=$(date +%s)
	# In the background and waited for: bash runs a trap only once the
	# foreground command ends, so a SIGTERM during `make test` would wait
	# for it; `wait` returns at once and the cleanup kills what runs inside.
	("$@") &
	wait $! || rc=$?
	local dt=$(($(date +%s) - t0))
	phases+=("$(printf '%-34s %s %2d min %2d s' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" $((dt / 60)) $((dt % 60)))")
	[ $rc -eq 0 ] || exit $rc
}

in_root() { # a login-like environment in the root, as a new user has it
	chroot "$chroot_dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "cd /root/tandem && $1"
}

bootstrap() {
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap on this machine"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
	fi
	debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		die "debootstrap failed; log: $work/debootstrap.log (kept: run with TANDEM_FRESH_KEEP=1)"
	# The suites a Debian install has by default.
	cat >"$chroot_dir/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
	# This machine's network, not its software: name servers, and the local
	# certificate authorities a site adds for its HTTPS proxy (without them
	# rustup's and pip's downloads fail behind such a proxy). Installing
	# ca-certificates in the root (set-up does) trusts them there too.
	cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
	if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
		mkdir -p "$chroot_dir/usr/local/share/ca-certificates"
		cp /usr/local/share/ca-certificates/*.crt "$chroot_dir/usr/local/share/ca-certificates/"
	fi
}

mount_all() {
	mount -t proc proc "$chroot_dir/proc"
	mount -t sysfs sysfs "$chroot_dir/sys"
	mount --rbind /dev "$chroot_dir/dev"
	mount --make-rslave "$chroot_dir/dev"
}

clone() {
	git clone -q --no-local "$root" "$chroot_dir/root/tandem"
	git -C "$chroot_dir/root/tandem" checkout -q "$commit"
}

prerequisite() {
	in_root "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends make >/dev/null"
}

exec_nproc() {
	local out
	out=$(in_root "./tandem exec -- nproc")
	echo "$out"
	[ "$(echo "$out" | tail -n1)" = "4" ] || die "expected nproc to print 4, got: $out"
}

phase "debootstrap (bookworm, minbase)" bootstrap
phase "mount /proc, /sys, /dev" mount_all
phase "clean clone of ${commit:0:12}" clone
phase "the README's prerequisite: make" prerequisite
phase "make test" in_root "make test"
phase "./tandem exec -- nproc" exec_nproc
result=PASSED
