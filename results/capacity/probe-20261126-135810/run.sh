cd /work/wt-capacity
run() { # load mode
  echo "=== $1 $2"
  nice -n 5 ./tandem exec --timing percore --quantum-ns 1000 --smp 4 --workload 1:1000:$(( $1 * 10 )) --capacity $2 --bootargs tandem_spinstat=on -- "$(cat /tmp/cap/spin.sh)" 2>&1 | grep -v "^\[" 
}
run 0 none
for m in none static steal both; do run 80 $m; done
