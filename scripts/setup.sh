#!/usr/bin/env bash
# Installs what gaend needs to build and test on a fresh Debian machine. Idempotent: it only
# installs what is missing, so running it before every build costs a second.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(libbluetooth-dev libdbus-1-dev libssl-dev libsqlite3-dev zlib1g-dev libyaml-dev pkg-config dbus dbus-daemon protobuf-compiler libcurl4-openssl-dev nginx
              libglib2.0-bin systemd util-linux openssl faketime
              qemu-system-x86 busybox-static kmod udev bluez tshark make binutils
              prometheus prometheus-node-exporter prometheus-alertmanager default-jre-headless librsvg2-bin)
# librsvg2-bin: rsvg-convert renders the trial report's figures to PNG in Tests/e2e/test_report_figures.py.
# libyaml-dev: the config's YAML reader (Sources/YAMLReader on libyaml; the package then
# depends on libyaml-0-2). gdbus, busctl, setpriv: real D-Bus clients in tests; openssl: demo keys; faketime: clock-step
# faults. The kernel test bed (Tests/testbed): qemu, busybox for its initramfs, kmod (depmod),
# udev and bluez (the guest's udev and bluetoothd come from the host's root); btmon (bluez) and
# tshark decode captures. The fleet (docs/fleet.md): prometheus (promtool checks the metrics
# and tests the alert rules; the fleet e2e runs its own Prometheus and node_exporter on
# loopback); prometheus-alertmanager: amtool checks the provisioned Alertmanager configuration,
# and the fleet e2e runs Alertmanager with it to a webhook of its own; nginx's WebDAV PUT is also
# the collection server of `gaenctl collect`. default-jre-headless: Java for Spark, which reads
# the trial's daily layout in Tests/e2e/test_spark_layout.py (pyspark from tools/requirements.txt).
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The daemon's user and the groups the D-Bus policy grants (systemd/gaend.sysusers), as a
# deployment makes them: the hostile-caller tests run callers in group gaend on a bus with
# the shipped policy, which names these groups.
if [ "$(id -u)" -eq 0 ] && command -v systemd-sysusers >/dev/null \
   && ! { getent group gaend && getent group gaend-research && getent passwd gaend-app; } >/dev/null 2>&1; then
    echo "setup: creating the gaend user and groups (systemd-sysusers)" >&2
    systemd-sysusers "$PWD/systemd/gaend.sysusers"
fi
# Four app users in group gaend (as a deployment adds a national app's user to it), for the
# hostile-caller tests (Tests/e2e/test_hostile_e2e.py): dbus-daemon looks a caller's groups up
# by user, so the callers need accounts.
if [ "$(id -u)" -eq 0 ] && getent group gaend >/dev/null; then
    for n in 1 2 3 4; do
        getent passwd "gaend-test-app$n" >/dev/null \
            || useradd --system --no-create-home --shell /usr/sbin/nologin --groups gaend "gaend-test-app$n"
    done
fi

# Python packages for the virtual radio (tools/virtual-radio) and its tests.
if ! python3 -c 'import sys; import bumble, pytest, xdist, jeepney, duckdb, pyspark, PIL' >/dev/null 2>&1 \
   || ! python3 - <<'PY' >/dev/null 2>&1
import importlib.metadata as m, sys
sys.exit(0 if m.version("bumble") == "0.0.236" else 1)
PY
then
    echo "setup: installing Python packages from tools/requirements.txt" >&2
    python3 -m pip install -q --disable-pip-version-check -r tools/requirements.txt
fi

command -v swift >/dev/null || { echo "setup: swift toolchain not found on PATH (need Swift 6)" >&2; exit 1; }
