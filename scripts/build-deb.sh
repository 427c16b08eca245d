#!/usr/bin/env bash
# Builds a Debian package of the release build: gaend_VERSION_ARCH.deb in OUT_DIR (default .).
# `make` first (release, Swift standard library linked in). The package installs what
# `make install PREFIX=/usr` does, binaries stripped; Depends is computed from the libraries
# the binaries load (dpkg -S), so the same script serves amd64 and arm64 builds.
# Maintainer scripts: the users (systemd-sysusers), udev and systemd told about the new files,
# controllers already present handed over; on removal the units are stopped.
# Usage: scripts/build-deb.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath "${1:-.}")
# SCRATCH: the build folder `make build` used (the Makefile's SCRATCH, default .build).
built=${SCRATCH:-.build}/release
[ -x "$built/gaend" ] && [ -x "$built/gaenctl" ] || { echo "build-deb: build first: make" >&2; exit 1; }
base=$(sed -n 's/.*static let string = "\([0-9.]*\)".*/\1/p' Sources/GaendAPI/GaendVersion.swift)
version="$base-1~git$(git rev-list --count HEAD 2>/dev/null || echo 0)"
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc >/dev/null
strip --strip-unneeded "$stage/usr/bin/gaend" "$stage/usr/bin/gaenctl"

# Runtime libraries -> their packages (no versions: what this Debian release ships).
deps=$(for b in "$stage/usr/bin/gaend" "$stage/usr/bin/gaenctl"; do ldd "$b"; done \
    | awk '/=> \// {print $3}' | sort -u \
    | while read -r lib; do dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true; done \
    | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')

mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: gaend
Version: $version
Architecture: $arch
Maintainer: gaend developers <gaend@localhost>
Depends: $deps, systemd, dbus
Suggests: bluez, tshark
Section: net
Priority: optional
Installed-Size: $(du -sk "$stage" | cut -f1)
Homepage: https://localhost/gaend
Description: Google/Apple Exposure Notification node for Linux boards
 gaend drives a Bluetooth LE controller through the kernel's HCI user channel,
 advertises rotating Rolling Proximity Identifiers under service 0xFD6F as a
 phone does, scans, keeps every sighting in an encrypted store and exposes a
 D-Bus API; gaenctl is its client and the researcher's toolbox. udev starts
 gaend@hciN.service for each controller (controllers: in gaend.conf).
CONTROL
echo /etc/gaend/gaend.conf.example > "$stage/DEBIAN/conffiles"

cat > "$stage/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    systemd-sysusers /usr/lib/sysusers.d/gaend.conf
    if [ -d /run/systemd/system ]; then
        # dbus-daemon read the policy at unpack, before user gaend existed: its rules for
        # gaend were dropped until a reload.
        systemctl reload dbus.service || true
        systemctl daemon-reload
        udevadm control --reload || true
        # Controllers already present are handed over now, as a hot-plugged one would be.
        udevadm trigger --subsystem-match=bluetooth --action=add || true
    fi
fi
SCRIPT
cat > "$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl stop 'gaend@*.service' gaend-store-key.service || true
fi
SCRIPT
cat > "$stage/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    udevadm control --reload || true
fi
# The store and its key stay on remove; purge deletes them.
if [ "$1" = purge ]; then
    rm -rf /var/lib/gaend /var/log/gaend
    rm -f /etc/gaend/store-key.cred
fi
SCRIPT
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"
deb="$out/gaend_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
echo "$deb"
