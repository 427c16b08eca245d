#!/bin/sh
# PID 1 of a scenario guest (no systemd): the basic mounts, loopback up, the scenario script
# (python, from the host's tree), its exit status in /testbed/rc, then power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ip link set lo up 2>/dev/null || busybox ip link set lo up
cd /testbed
"$tb_python" "$tb_repo/Tests/testbed/guest/$tb_scenario" >/testbed/scenario.log 2>&1
echo $? > /testbed/rc
sync
echo o > /proc/sysrq-trigger
sleep 60
