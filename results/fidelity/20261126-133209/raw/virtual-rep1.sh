set -e
echo @@FIDELITY overlap
tandem-probe overlap -a 1 -b 2 -n 200 -k 50000
echo @@FIDELITY handoff
tandem-probe handoff -a 1 -b 2 -n 200 -s 1 -g 2000
echo @@FIDELITY notify_idle
tandem-rpc bench -m busy -n 200 -C 0 -d 200 1
echo @@FIDELITY notify_busy
hackbench -g 4 -l 1000000 > /dev/null 2>&1 &
hog=$!
sleep 0.2
tandem-rpc bench -m busy -n 200 -C 0 -d 200 1
kill $hog; wait $hog || true
echo @@FIDELITY hackbench
hackbench -g 4 -l 100 > /dev/null
echo @@FIDELITY end
