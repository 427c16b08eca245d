#!/bin/sh
# PID 1 of a systemd scenario, before systemd: a target that boots only what a board's base
# system runs (journald, udevd, dbus, tmpfiles ...) plus the scenario as a oneshot service that
# powers the guest off when it ends. The scenario's settings (tb_*) go to an environment file.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
env | grep '^tb_' > /etc/testbed.env
mkdir -p /etc/systemd/system
cat > /etc/systemd/system/testbed.target <<UNIT
[Unit]
Description=gaend test bed
Requires=basic.target
After=basic.target
Wants=testbed.service dbus.service systemd-udevd.service systemd-logind.service
AllowIsolate=yes
UNIT
cat > /etc/systemd/system/testbed.service <<UNIT
[Unit]
Description=gaend test bed scenario
After=basic.target dbus.service systemd-udevd.service
[Service]
Type=oneshot
EnvironmentFile=/etc/testbed.env
Environment=HOME=/root LANG=C.UTF-8
ExecStart=/bin/sh -c 'ip link set lo up; "\$tb_python" "\$tb_repo/Tests/testbed/guest/\$tb_scenario" > /testbed/scenario.log 2>&1; echo \$? > /testbed/rc; sync; systemctl poweroff --force --force; echo o > /proc/sysrq-trigger'
TimeoutStartSec=infinity
SuccessAction=poweroff-force
FailureAction=poweroff-force
UNIT
# The host's /tmp shows through the overlay; systemd-tmpfiles would empty it entry by entry at
# boot (slow over 9p). A board's /tmp starts empty: a tmpfs. And the host may be a container:
# its marker must not make the guest's systemd think it is one.
mount -t tmpfs -o mode=1777 tmpfs /tmp
rm -f /.dockerenv /run/.containerenv
# The host's machine-id would make the guest's journal a copy of another machine's; a fresh one.
rm -f /etc/machine-id
umount /proc
exec /lib/systemd/systemd --unit=testbed.target
