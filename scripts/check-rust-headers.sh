#!/bin/sh
# Every Rust source starts with a `//!` line saying what it is.
set -eu
status=0
for f in $(git ls-files '*.rs'); do
	if ! head -n 1 "$f" | grep -q '^//!'; then
		echo "check-rust-headers: $f does not start with a //! line" >&2
		status=1
	fi
done
exit $status
