hackbench -g 8 -l 100 || exit 1
sysbench mutex --threads=8 --mutex-locks=20000 --mutex-num=64 run || exit 1
