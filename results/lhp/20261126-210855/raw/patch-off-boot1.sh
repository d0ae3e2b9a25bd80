hackbench -g 8 -l 100 >/dev/null || exit 1
for i in $(seq 15); do hackbench -g 8 -l 100 || exit 1; done
