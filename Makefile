# Build and install gaend. `make install DESTDIR=/tmp/stage PREFIX=/usr` stages a package tree.
PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
SWIFT ?= swift
BINDIR = $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVDIR ?= $(PREFIX)/lib/udev/rules.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DBUSDIR ?= $(PREFIX)/share/dbus-1
DOCDIR ?= $(PREFIX)/share/doc/gaend

.PHONY: all build test install uninstall

all: build

build:
	$(SWIFT) build -c release --product gaend
	$(SWIFT) build -c release --product gaenctl

test:
	./scripts/test.sh

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(UDEVDIR) $(DESTDIR)$(SYSUSERSDIR) \
	    $(DESTDIR)$(DBUSDIR)/system.d $(DESTDIR)$(DBUSDIR)/interfaces $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/gaend
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/gaend" $(DESTDIR)$(BINDIR)/gaend
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/gaenctl" $(DESTDIR)$(BINDIR)/gaenctl
	sed 's|/usr/local/bin/gaend|$(BINDIR)/gaend|' systemd/gaend@.service > $(DESTDIR)$(UNITDIR)/gaend@.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/gaend@.service
	install -m 0644 udev/99-gaend.rules $(DESTDIR)$(UDEVDIR)/99-gaend.rules
	install -m 0644 systemd/gaend.sysusers $(DESTDIR)$(SYSUSERSDIR)/gaend.conf
	if [ -f dbus/org.gaend.conf ]; then install -m 0644 dbus/org.gaend.conf $(DESTDIR)$(DBUSDIR)/system.d/org.gaend.conf; fi
	for f in dbus/*.xml; do [ -f "$$f" ] && install -m 0644 "$$f" $(DESTDIR)$(DBUSDIR)/interfaces/; done; true
	if [ -f config/gaend.conf.example ]; then install -m 0644 config/gaend.conf.example $(DESTDIR)$(SYSCONFDIR)/gaend/gaend.conf.example; fi
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	cp -r docs $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gaend $(DESTDIR)$(BINDIR)/gaenctl $(DESTDIR)$(UNITDIR)/gaend@.service \
	    $(DESTDIR)$(UDEVDIR)/99-gaend.rules $(DESTDIR)$(SYSUSERSDIR)/gaend.conf \
	    $(DESTDIR)$(DBUSDIR)/system.d/org.gaend.conf
	rm -rf $(DESTDIR)$(DOCDIR)
