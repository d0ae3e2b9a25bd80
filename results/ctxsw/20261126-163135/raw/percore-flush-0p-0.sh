
ctxsw_record() {
    dd if=/sys/kernel/debug/tandem/region bs=4096 skip=264 count=1 2>/dev/null |
        od -A n -t x8 -N 64 | tr -s ' \n' '  '
}
n=0
while :; do
    set -- $(ctxsw_record)
    [ "$(( 0x$1 & 0xffffffff ))" -eq 2 ] && break
    n=$((n + 1))
    if [ $n -ge 600 ]; then echo "ctxsw record not done: $*"; exit 1; fi
    sleep 1
done
echo "@@CTXSW@@ $(ctxsw_record)"
