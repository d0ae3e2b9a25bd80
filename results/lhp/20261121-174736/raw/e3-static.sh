( while :; do hackbench -g 8 -l 100 >/dev/null; done ) &
sleep 0.2
tandem-lat -d save /tmp/d.a || exit 1
sleep 2
tandem-lat -d save /tmp/d.b || exit 1
kill %1
echo @@DISPATCH@@
tandem-lat -d report /tmp/d.a /tmp/d.b || exit 1
