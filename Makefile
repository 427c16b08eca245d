# Build and install gaend.
#   make                     release build, Swift standard library linked in (no toolchain needed to run)
#   sudo make install        installs and activates (users, udev, systemd, D-Bus); see README "On a board"
#   make install DESTDIR=/tmp/stage PREFIX=/usr   stages a package tree (nothing activated)
PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
SWIFT ?= swift
SWIFTFLAGS ?= -c release --static-swift-stdlib
BINDIR = $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVDIR ?= $(PREFIX)/lib/udev/rules.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DATADIR ?= $(PREFIX)/share
DOCDIR ?= $(DATADIR)/doc/gaend
MANDIR ?= $(DATADIR)/man
# dbus-daemon reads policies from /usr/share/dbus-1/system.d (packages) and /etc/dbus-1/system.d
# (local installs) only: not below /usr/local.
ifeq ($(PREFIX),/usr)
DBUSPOLICYDIR ?= /usr/share/dbus-1/system.d
else
DBUSPOLICYDIR ?= $(SYSCONFDIR)/dbus-1/system.d
endif
DBUSIFACEDIR ?= $(DATADIR)/dbus-1/interfaces
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# The release binaries (.build/release is SwiftPM's link to the host triple's directory, on
# x86_64 and aarch64 alike).
BUILT = .build/release

.PHONY: all build test install activate uninstall man deb

all: build

build:
	$(SWIFT) build $(SWIFTFLAGS) --product gaend
	$(SWIFT) build $(SWIFTFLAGS) --product gaenctl

test:
	./scripts/test.sh

# Regenerates the committed man pages and completions from the binaries' own help.
man: build
	./scripts/gen-docs.sh $(BUILT)

install:
	@test -x $(BUILT)/gaend -a -x $(BUILT)/gaenctl || { echo "make install: build first: make" >&2; exit 1; }
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(UDEVDIR) $(DESTDIR)$(SYSUSERSDIR) \
	    $(DESTDIR)$(DBUSPOLICYDIR) $(DESTDIR)$(DBUSIFACEDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/gaend \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(BUILT)/gaend $(DESTDIR)$(BINDIR)/gaend
	install -m 0755 $(BUILT)/gaenctl $(DESTDIR)$(BINDIR)/gaenctl
	for u in gaend@.service gaend-store-key.service; do \
	    sed -e 's|/usr/local/bin/gaend|$(BINDIR)/gaend|g' -e 's|/usr/local/share/doc/gaend|$(DOCDIR)|g' systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u; \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$u; done
	install -m 0644 udev/99-gaend.rules $(DESTDIR)$(UDEVDIR)/99-gaend.rules
	install -m 0644 systemd/gaend.sysusers $(DESTDIR)$(SYSUSERSDIR)/gaend.conf
	install -m 0644 dbus/org.gaend.conf $(DESTDIR)$(DBUSPOLICYDIR)/org.gaend.conf
	install -m 0644 dbus/*.xml $(DESTDIR)$(DBUSIFACEDIR)/
	install -m 0644 config/gaend.conf.example $(DESTDIR)$(SYSCONFDIR)/gaend/gaend.conf.example
	install -m 0644 docs/man/gaend.8 $(DESTDIR)$(MANDIR)/man8/gaend.8
	install -m 0644 docs/man/gaenctl.1 $(DESTDIR)$(MANDIR)/man1/gaenctl.1
	install -m 0644 docs/man/gaend.conf.5 $(DESTDIR)$(MANDIR)/man5/gaend.conf.5
	install -m 0644 docs/completions/gaenctl.bash $(DESTDIR)$(BASHCOMPDIR)/gaenctl
	install -m 0644 docs/completions/gaend.bash $(DESTDIR)$(BASHCOMPDIR)/gaend
	install -m 0644 docs/completions/_gaenctl $(DESTDIR)$(ZSHCOMPDIR)/_gaenctl
	install -m 0644 docs/completions/_gaend $(DESTDIR)$(ZSHCOMPDIR)/_gaend
	install -m 0644 docs/completions/gaenctl.fish $(DESTDIR)$(FISHCOMPDIR)/gaenctl.fish
	install -m 0644 docs/completions/gaend.fish $(DESTDIR)$(FISHCOMPDIR)/gaend.fish
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	cp -r docs $(DESTDIR)$(DOCDIR)/
	@if [ -z "$(DESTDIR)" ]; then $(MAKE) --no-print-directory activate; fi

# What a package's maintainer scripts do: the users and groups, then dbus-daemon reloaded (it
# read the new policy when it appeared, before user gaend existed, and dropped that user's
# rules), udev and systemd told about the new files, controllers already present handed over.
activate:
	@if [ "$$(id -u)" -ne 0 ] || [ ! -d /run/systemd/system ]; then \
	    echo "make install: not activated (needs root and systemd): run systemd-sysusers; systemctl reload dbus; systemctl daemon-reload; udevadm control --reload; udevadm trigger --subsystem-match=bluetooth --action=add"; \
	else \
	    systemd-sysusers $(DESTDIR)$(SYSUSERSDIR)/gaend.conf; \
	    systemctl reload dbus.service || true; \
	    systemctl daemon-reload; \
	    udevadm control --reload; \
	    udevadm trigger --subsystem-match=bluetooth --action=add; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gaend $(DESTDIR)$(BINDIR)/gaenctl $(DESTDIR)$(UNITDIR)/gaend@.service \
	    $(DESTDIR)$(UNITDIR)/gaend-store-key.service $(DESTDIR)$(UDEVDIR)/99-gaend.rules \
	    $(DESTDIR)$(SYSUSERSDIR)/gaend.conf $(DESTDIR)$(DBUSPOLICYDIR)/org.gaend.conf \
	    $(DESTDIR)$(MANDIR)/man8/gaend.8 $(DESTDIR)$(MANDIR)/man1/gaenctl.1 $(DESTDIR)$(MANDIR)/man5/gaend.conf.5 \
	    $(DESTDIR)$(BASHCOMPDIR)/gaenctl $(DESTDIR)$(BASHCOMPDIR)/gaend $(DESTDIR)$(ZSHCOMPDIR)/_gaenctl \
	    $(DESTDIR)$(ZSHCOMPDIR)/_gaend $(DESTDIR)$(FISHCOMPDIR)/gaenctl.fish $(DESTDIR)$(FISHCOMPDIR)/gaend.fish
	rm -rf $(DESTDIR)$(DOCDIR)

# A Debian package of this build: gaend_VERSION_ARCH.deb in the current directory.
deb: build
	./scripts/build-deb.sh
