#!/bin/sh
# Fails if a firmware ELF uses any FP/SIMD register. The monitor (and later
# the RTOS) shares those registers with Linux without saving them, so one
# stray `mov v0.16b` would corrupt Linux's state. The soft-float target
# should guarantee this; this check makes it a test.
set -eu
elf=$1
# Branch and adr targets print as a bare hex address and a symbol
# ("b036 <sym+0x36>"), which would read as register b036: drop them first.
hits=$(aarch64-linux-gnu-objdump -d --no-show-raw-insn "$elf" |
	sed -E 's/[[:space:]][0-9a-f]+ <[^>]*>//g' |
	grep -E '[[:space:]](v[0-9]+\.|q[0-9]+|d[0-9]+|s[0-9]+|h[0-9]+|b[0-9]+)([,[:space:]]|$)' |
	grep -vE '^\s*$' || true)
if [ -n "$hits" ]; then
	echo "check-no-fp: $elf uses FP/SIMD registers:" >&2
	echo "$hits" | head -n 20 >&2
	exit 1
fi
echo "check-no-fp: $elf uses no FP/SIMD register"
