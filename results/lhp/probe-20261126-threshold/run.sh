#!/bin/sh
# Reruns this probe from the repository's root (one boot per console log;
# per-core timing, Q = 1 µs, 4 cores, Linux alone). Prints the console.
set -e
here=$(dirname "$0")
exec_linux_alone() { # extra boot arguments, guest script
	./tandem exec --config linux-only --timing percore --quantum-ns 1000 --smp 4 \
		--bootargs "tandem_spinstat=on $1" -- "cat /proc/cmdline; $(cat "$2")"
}
echo "=== pcp high mark: default, then vm.percpu_pagelist_high_fraction=100000"
exec_linux_alone "" "$here/pcp-guest.sh"
for reps in 20 40; do
	for args in "" "rcutree.use_softirq=0"; do
		echo "=== bootargs: tandem_spinstat=on $args"
		REPS=$reps exec_linux_alone "$args" "$here/rcu-guest.sh"
	done
done
