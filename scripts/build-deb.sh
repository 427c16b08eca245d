#!/usr/bin/env bash
# Builds a Debian package of the release build: gaend_VERSION_ARCH.deb in OUT_DIR (default .).
# `make` first (release, Swift standard library linked in). The package installs what
# `make install PREFIX=/usr` does, binaries stripped; Depends is computed from the libraries
# the binaries load (dpkg -S), so the same script serves amd64 and arm64 builds.
# Maintainer scripts: the users (systemd-sysusers), udev and systemd told about the new files,
# controllers already present handed over; on removal the units are stopped.
# /usr/bin/gaenctl is an alternative (update-alternatives): the board's gaenctl (gaend's binary,
# priority 10), or the full one of the research package (priority 20), a superset of it; gaenctl(1)
# and gaenctl's completions are its slaves, so they describe the gaenctl that runs.
# With --research: gaend-research-tools_VERSION_ARCH.deb, the full gaenctl with the research tools
# (`make install-research PREFIX=/usr`: /usr/bin/gaenctl-research, the deploy files `trial
# provision` reads, the example trial), for the analyst's machine or the trial server; it
# needs no gaend.
# With --server: the trial server's package instead, gaend-trial-server_VERSION_all.deb
# (`make install-server PREFIX=/usr`: the publisher's user, directories and units, the nginx
# site, /etc/gaend-trial), which depends on this version's gaend-research-tools for gaenctl (the
# server provisions the trial and publishes); needs no build.
# Usage: scripts/build-deb.sh [--server | --research] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
server=0 research=0
if [ "${1:-}" = --server ]; then server=1; shift; elif [ "${1:-}" = --research ]; then research=1; shift; fi
out=$(realpath "${1:-.}")
if [ "$server" = 1 ]; then
    base=$(sed -n 's/.*static let string = "\([0-9.]*\)".*/\1/p' Sources/GaendAPI/GaendVersion.swift)
    version="$base-1~git$(git rev-list --count HEAD 2>/dev/null || echo 0)"
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    make --no-print-directory install-server DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc >/dev/null
    chmod 0755 "$stage"
    mkdir -p "$stage/DEBIAN"
    cat > "$stage/DEBIAN/control" <<CONTROL
Package: gaend-trial-server
Version: $version
Architecture: all
Maintainer: gaend developers <gaend@localhost>
Depends: gaend-research-tools (= $version), nginx, systemd, openssl
Recommends: prometheus, prometheus-alertmanager
Section: net
Priority: optional
Installed-Size: $(du -sk "$stage" | cut -f1)
Homepage: https://localhost/gaend
Description: gaend field trial server: key submissions, publisher, collection
 The trial server of a gaend field trial: nginx's site for the boards' key
 uploads, the published key tree and the collected days; the hourly publisher
 (gaend-publish.timer, user gaend-publish); /etc/gaend-trial/publish.env and an
 example app configuration. gaenctl trial provision writes the trial's own
 settings from its inventory.
CONTROL
    (cd "$stage" && find etc -type f | sed 's|^|/|' | sort) > "$stage/DEBIAN/conffiles"
    cat > "$stage/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    systemd-sysusers /usr/lib/sysusers.d/gaend-trial-server.conf
    systemd-tmpfiles --create /usr/lib/tmpfiles.d/gaend-trial-server.conf || true
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload
        # Skipped by its condition until /etc/gaend-trial/signing-key.pem exists.
        systemctl enable --now gaend-publish.timer
    else
        systemctl enable gaend-publish.timer || true
    fi
    /usr/lib/gaend-trial-server/enable-site
fi
SCRIPT
    cat > "$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = remove ]; then
    systemctl disable --now gaend-publish.timer || true
    rm -f /etc/nginx/sites-enabled/gaend-trial.conf
    if [ -d /run/systemd/system ]; then systemctl reload nginx.service || true; fi
fi
SCRIPT
    cat > "$stage/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
# The trial's data (uploads, the published tree, collected days) stays on remove and purge:
# it is the trial's record, deleted by hand (/var/lib/gaend-trial).
SCRIPT
    chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"
    deb="$out/gaend-trial-server_${version}_all.deb"
    dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
    echo "$deb"
    exit 0
fi
# SCRATCH: the build folder `make build` used (the Makefile's SCRATCH, default .build).
built=${SCRATCH:-.build}/release
[ -x "$built/gaend" ] && [ -x "$built/gaenctl" ] || { echo "build-deb: build first: make" >&2; exit 1; }
base=$(sed -n 's/.*static let string = "\([0-9.]*\)".*/\1/p' Sources/GaendAPI/GaendVersion.swift)
version="$base-1~git$(git rev-list --count HEAD 2>/dev/null || echo 0)"
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Runtime libraries of the binaries given -> their packages (no versions: what this Debian
# release ships): those they link, and libcurl, which HTTPClient loads when first used (dlopen:
# Sources/CCurl).
depends() {
    { for b in "$@"; do ldd "$b"; done | awk '/=> \// {print $3}'
      # awk reads to the end: an early exit would leave ldconfig writing into a closed pipe, and
      # its SIGPIPE fail the build under pipefail (seen once: exit 141).
      ldconfig -p | awk '$1 == "libcurl.so.4" && /=> \// && !found {print $NF; found = 1}'; } | sort -u \
        | while read -r lib; do dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true; done \
        | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g'
}

# The generic names of gaenctl's pages: slaves of the alternative, not files of a package.
generic_pages=(usr/share/man/man1/gaenctl.1 usr/share/bash-completion/completions/gaenctl
               usr/share/zsh/vendor-completions/_gaenctl usr/share/fish/vendor_completions.d/gaenctl.fish)
# slaves FLAVOUR: update-alternatives' --slave arguments for that gaenctl's pages.
slaves() {
    echo "--slave /usr/share/man/man1/gaenctl.1 gaenctl.1 /usr/share/man/man1/gaenctl-$1.1 \\
        --slave /usr/share/bash-completion/completions/gaenctl gaenctl.bash-completion /usr/share/gaend/completions/$1/gaenctl \\
        --slave /usr/share/zsh/vendor-completions/_gaenctl gaenctl.zsh-completion /usr/share/gaend/completions/$1/_gaenctl \\
        --slave /usr/share/fish/vendor_completions.d/gaenctl.fish gaenctl.fish-completion /usr/share/gaend/completions/$1/gaenctl.fish"
}

if [ "$research" = 1 ]; then
    make --no-print-directory install-research DESTDIR="$stage" PREFIX=/usr >/dev/null
    # /usr/bin/gaenctl and its pages' generic names are the alternative the maintainer scripts set.
    rm "$stage/usr/bin/gaenctl"
    for f in "${generic_pages[@]}"; do rm "$stage/$f"; done
    strip --strip-unneeded "$stage/usr/bin/gaenctl-research"
    mkdir -p "$stage/DEBIAN"
    cat > "$stage/DEBIAN/control" <<CONTROL
Package: gaend-research-tools
Version: $version
Architecture: $arch
Maintainer: gaend developers <gaend@localhost>
Depends: $(depends "$stage/usr/bin/gaenctl-research")
Suggests: gaend, duckdb
Section: science
Priority: optional
Installed-Size: $(du -sk "$stage" | cut -f1)
Homepage: https://localhost/gaend
Description: gaend's research tools: the full gaenctl for the analyst's machine
 The full gaenctl (as /usr/bin/gaenctl through update-alternatives, and
 gaenctl-research): the board's commands and the research tools, which a board's
 gaenctl does not hold: trial provision, import, verify, report and replay,
 simulate, risk, match, windows, derive, calibrate. Provisioning reads the
 shipped server files from /usr/share/gaend/deploy.
CONTROL
    cat > "$stage/DEBIAN/postinst" <<SCRIPT
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    # A superset of the board's gaenctl (gaend's, priority 10): the full one wins where both are.
    update-alternatives --install /usr/bin/gaenctl gaenctl /usr/bin/gaenctl-research 20 \\
        $(slaves research)
fi
SCRIPT
    cat > "$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = deconfigure ]; then
    update-alternatives --remove gaenctl /usr/bin/gaenctl-research
fi
SCRIPT
    chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm"
    deb="$out/gaend-research-tools_${version}_${arch}.deb"
    dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
    echo "$deb"
    exit 0
fi

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc >/dev/null
# /usr/bin/gaenctl (gaend's binary by that name) and its pages' generic names are the alternative
# the maintainer scripts set.
rm "$stage/usr/bin/gaenctl"
for f in "${generic_pages[@]}"; do rm "$stage/$f"; done
strip --strip-unneeded "$stage/usr/bin/gaend"
deps=$(depends "$stage/usr/bin/gaend")

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
 D-Bus API; gaenctl (the same binary) is its client on the board: status,
 keys, the app half, metrics, collection, radio. udev starts gaend@hciN.service
 for each controller (controllers: in gaend.conf). The research tools (trial
 provision and reports, simulation, risk engines, calibration) are the full
 gaenctl's, in gaend-research-tools.
CONTROL
echo /etc/gaend/gaend.conf.example > "$stage/DEBIAN/conffiles"

cat > "$stage/DEBIAN/postinst" <<SCRIPT
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    # The board's gaenctl: gaend's binary called by that name (the research package's full
    # gaenctl, priority 20, wins where both are installed).
    update-alternatives --install /usr/bin/gaenctl gaenctl /usr/bin/gaend 10 \\
        $(slaves board)
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
if [ "$1" = remove ] || [ "$1" = deconfigure ]; then
    update-alternatives --remove gaenctl /usr/bin/gaend
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
