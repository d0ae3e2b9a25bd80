set -e
echo "model $(cat /sys/bus/platform/devices/tandem/rpc_t_ctx_ns /sys/bus/platform/devices/tandem/rpc_t_c_hdr_ns /sys/bus/platform/devices/tandem/rpc_t_s2_ns /sys/bus/platform/devices/tandem/rpc_v_server_bytes_per_ms /sys/bus/platform/devices/tandem/rpc_x_opt | tr "\n" " ")"
echo "calibration $(dmesg | grep -o 'RPC:\? \(model\|calibration\).*' | tr '\n' ';')"
echo '@@PHASE lat 1 busy'
tandem-rpc bench -C 0 -m busy -n 20 1
echo '@@PHASE lat 1 block'
tandem-rpc bench -C 0 -m block -n 20 1
echo '@@PHASE lat 1 auto'
tandem-rpc bench -C 0 -m auto -n 20 1
echo '@@PHASE lat 10 busy'
tandem-rpc bench -C 0 -m busy -n 20 10
echo '@@PHASE lat 10 block'
tandem-rpc bench -C 0 -m block -n 20 10
echo '@@PHASE lat 10 auto'
tandem-rpc bench -C 0 -m auto -n 20 10
echo '@@PHASE lat 64 busy'
tandem-rpc bench -C 0 -m busy -n 20 64
echo '@@PHASE lat 64 block'
tandem-rpc bench -C 0 -m block -n 20 64
echo '@@PHASE lat 64 auto'
tandem-rpc bench -C 0 -m auto -n 20 64
echo '@@PHASE lat 100 busy'
tandem-rpc bench -C 0 -m busy -n 20 100
echo '@@PHASE lat 100 block'
tandem-rpc bench -C 0 -m block -n 20 100
echo '@@PHASE lat 100 auto'
tandem-rpc bench -C 0 -m auto -n 20 100
echo '@@PHASE lat 1000 busy'
tandem-rpc bench -C 0 -m busy -n 20 1000
echo '@@PHASE lat 1000 block'
tandem-rpc bench -C 0 -m block -n 20 1000
echo '@@PHASE lat 1000 auto'
tandem-rpc bench -C 0 -m auto -n 20 1000
echo '@@PHASE lat 4000 busy'
tandem-rpc bench -C 0 -m busy -n 20 4000
echo '@@PHASE lat 4000 block'
tandem-rpc bench -C 0 -m block -n 20 4000
echo '@@PHASE lat 4000 auto'
tandem-rpc bench -C 0 -m auto -n 20 4000
echo '@@PHASE lat 5000 busy'
tandem-rpc bench -C 0 -m busy -n 20 5000
echo '@@PHASE lat 5000 block'
tandem-rpc bench -C 0 -m block -n 20 5000
echo '@@PHASE lat 5000 auto'
tandem-rpc bench -C 0 -m auto -n 20 5000
echo '@@PHASE lat 6000 busy'
tandem-rpc bench -C 0 -m busy -n 20 6000
echo '@@PHASE lat 6000 block'
tandem-rpc bench -C 0 -m block -n 20 6000
echo '@@PHASE lat 6000 auto'
tandem-rpc bench -C 0 -m auto -n 20 6000
echo '@@PHASE lat 7000 busy'
tandem-rpc bench -C 0 -m busy -n 20 7000
echo '@@PHASE lat 7000 block'
tandem-rpc bench -C 0 -m block -n 20 7000
echo '@@PHASE lat 7000 auto'
tandem-rpc bench -C 0 -m auto -n 20 7000
echo '@@PHASE lat 8000 busy'
tandem-rpc bench -C 0 -m busy -n 20 8000
echo '@@PHASE lat 8000 block'
tandem-rpc bench -C 0 -m block -n 20 8000
echo '@@PHASE lat 8000 auto'
tandem-rpc bench -C 0 -m auto -n 20 8000
echo '@@PHASE lat 10000 busy'
tandem-rpc bench -C 0 -m busy -n 20 10000
echo '@@PHASE lat 10000 block'
tandem-rpc bench -C 0 -m block -n 20 10000
echo '@@PHASE lat 10000 auto'
tandem-rpc bench -C 0 -m auto -n 20 10000
echo '@@PHASE lat 50000 busy'
tandem-rpc bench -C 0 -m busy -n 20 50000
echo '@@PHASE lat 50000 block'
tandem-rpc bench -C 0 -m block -n 20 50000
echo '@@PHASE lat 50000 auto'
tandem-rpc bench -C 0 -m auto -n 20 50000
echo '@@PHASE lat 65536 busy'
tandem-rpc bench -C 0 -m busy -n 20 65536
echo '@@PHASE lat 65536 block'
tandem-rpc bench -C 0 -m block -n 20 65536
echo '@@PHASE lat 65536 auto'
tandem-rpc bench -C 0 -m auto -n 20 65536
echo '@@PHASE pair 1 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1
echo '@@PHASE pair 1 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1
echo '@@PHASE pair 1 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1
echo '@@PHASE pair 10 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10
echo '@@PHASE pair 10 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10
echo '@@PHASE pair 10 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10
echo '@@PHASE pair 64 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 64
echo '@@PHASE pair 64 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 64
echo '@@PHASE pair 64 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 64
echo '@@PHASE pair 100 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 100
echo '@@PHASE pair 100 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 100
echo '@@PHASE pair 100 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 100
echo '@@PHASE pair 1000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1000
echo '@@PHASE pair 4000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 4000
echo '@@PHASE pair 5000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 5000
echo '@@PHASE pair 6000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 6000
echo '@@PHASE pair 7000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 7000
echo '@@PHASE pair 8000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 8000
echo '@@PHASE pair 10000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10000
echo '@@PHASE pair 50000 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 50000
echo '@@PHASE pair 65536 busy 0'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 block 0'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 auto 0'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 65536
echo '@@PHASE pair 1 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1
echo '@@PHASE pair 1 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1
echo '@@PHASE pair 1 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1
echo '@@PHASE pair 10 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10
echo '@@PHASE pair 10 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10
echo '@@PHASE pair 10 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10
echo '@@PHASE pair 64 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 64
echo '@@PHASE pair 64 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 64
echo '@@PHASE pair 64 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 64
echo '@@PHASE pair 100 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 100
echo '@@PHASE pair 100 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 100
echo '@@PHASE pair 100 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 100
echo '@@PHASE pair 1000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1000
echo '@@PHASE pair 4000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 4000
echo '@@PHASE pair 5000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 5000
echo '@@PHASE pair 6000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 6000
echo '@@PHASE pair 7000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 7000
echo '@@PHASE pair 8000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 8000
echo '@@PHASE pair 10000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10000
echo '@@PHASE pair 50000 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 50000
echo '@@PHASE pair 65536 busy 1'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 block 1'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 auto 1'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 65536
echo '@@PHASE pair 1 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1
echo '@@PHASE pair 1 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1
echo '@@PHASE pair 1 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1
echo '@@PHASE pair 10 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10
echo '@@PHASE pair 10 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10
echo '@@PHASE pair 10 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10
echo '@@PHASE pair 64 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 64
echo '@@PHASE pair 64 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 64
echo '@@PHASE pair 64 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 64
echo '@@PHASE pair 100 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 100
echo '@@PHASE pair 100 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 100
echo '@@PHASE pair 100 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 100
echo '@@PHASE pair 1000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 1000
echo '@@PHASE pair 1000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 1000
echo '@@PHASE pair 4000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 4000
echo '@@PHASE pair 4000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 4000
echo '@@PHASE pair 5000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 5000
echo '@@PHASE pair 5000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 5000
echo '@@PHASE pair 6000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 6000
echo '@@PHASE pair 6000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 6000
echo '@@PHASE pair 7000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 7000
echo '@@PHASE pair 7000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 7000
echo '@@PHASE pair 8000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 8000
echo '@@PHASE pair 8000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 8000
echo '@@PHASE pair 10000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 10000
echo '@@PHASE pair 10000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 10000
echo '@@PHASE pair 50000 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 50000
echo '@@PHASE pair 50000 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 50000
echo '@@PHASE pair 65536 busy 2'
tandem-rpc pair -C 0 -m busy -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 block 2'
tandem-rpc pair -C 0 -m block -n 100 -w 2000000 65536
echo '@@PHASE pair 65536 auto 2'
tandem-rpc pair -C 0 -m auto -n 100 -w 2000000 65536
