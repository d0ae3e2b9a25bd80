sleep 0.000137
tandem-spin save /tmp/spin.a || exit 1
hackbench -g 8 -l 100 >/dev/null || exit 1
tandem-spin save /tmp/spin.b || exit 1
echo @@SPIN@@
tandem-spin report /tmp/spin.a /tmp/spin.b || exit 1
