REPS=${REPS:-40}
L=/sys/kernel/debug/tandem_spin_longest
for rep in $(seq 1 "$REPS"); do
  echo 1 > $L || exit 1
  hackbench -g 8 -l 100 >/dev/null || exit 1
  echo "@@LONGEST rep=$rep"; cat $L || exit 1
done
