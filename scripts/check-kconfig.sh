#!/bin/sh
# Checks that every option of a Kconfig fragment took effect in a .config.
# allnoconfig silently drops options whose dependencies are unmet; this turns
# that into a build error naming the option and what it became.
# Usage: check-kconfig.sh FRAGMENT DOTCONFIG
set -eu
fragment=$1
dotconfig=$2
status=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		symbol=${line%%=*}
		if ! grep -qx -- "$line" "$dotconfig"; then
			got=$(grep -E "^(# )?$symbol[= ]" "$dotconfig" || echo "absent")
			echo "kconfig: $fragment wants '$line', got '$got'" >&2
			status=1
		fi
		;;
	"# CONFIG_"*" is not set")
		symbol=${line#\# }
		symbol=${symbol%% *}
		if grep -q "^$symbol=" "$dotconfig"; then
			echo "kconfig: $fragment wants $symbol off, got '$(grep "^$symbol=" "$dotconfig")'" >&2
			status=1
		fi
		;;
	esac
done <"$fragment"
exit $status
