"""One gaend per controller on one bus: each instance owns its own name
(org.gaend.hci0, org.gaend.hci1, as systemd/gaend@.service passes), gaenctl --name reaches the
right one, gaenctl without --name refuses to guess, and a third gaend asking for a name already
owned stops with a clear line."""

from __future__ import annotations

import json
import subprocess

from conftest import wait_for
from test_node_e2e import SCALE, Bus, nodes, two_radios  # noqa: F401  (nodes is a fixture)


def gaenctl(bin_dir, bus: Bus, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "gaenctl"), "--bus", bus.address, *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_two_instances_on_one_bus(radio, nodes, bin_dir, tmp_path):
    r = two_radios(radio)
    bus = Bus(tmp_path / "bus")
    try:
        # hci0 runs without trial mode, hci1 with it: Status tells the daemons apart.
        hci0 = nodes("hci0", r.ready["devices"]["a"]["connect"], bus=bus, bus_name="org.gaend.hci0",
                     extra=["--time-scale", str(SCALE)])
        hci1 = nodes("hci1", r.ready["devices"]["b"]["connect"], bus=bus, bus_name="org.gaend.hci1")
        hci0.start()
        hci1.start()

        # --name takes the full name or the suffix alone.
        for name, full, trial in (("org.gaend.hci1", "org.gaend.hci1", True), ("hci1", "org.gaend.hci1", True),
                                  ("org.gaend.hci0", "org.gaend.hci0", False), ("hci0", "org.gaend.hci0", False)):
            out = gaenctl(bin_dir, bus, "--name", name, "status", "--json")
            assert out.returncode == 0, out.stderr
            status = json.loads(out.stdout)
            assert status["busName"] == full and status["trialMode"] is trial, (name, status)

        # Without --name gaenctl does not guess.
        both = gaenctl(bin_dir, bus, "status")
        assert both.returncode == 1
        assert both.stderr == ("gaenctl status: several gaend instances on this bus: org.gaend.hci0, org.gaend.hci1; "
                               "choose one with --name\n"), both.stderr

        # Each name drives its own controller: stopping hci1 stops advertising on controller b only.
        assert wait_for(lambda: r.state("a")["advertising"] and r.state("b")["advertising"], 20, 0.2)
        stop = gaenctl(bin_dir, bus, "stop", "--name", "hci1")
        assert stop.returncode == 0, stop.stderr
        assert wait_for(lambda: not r.state("b")["advertising"], 20, 0.2), r.state("b")
        assert r.state("a")["advertising"]
        assert hci1.status()["enabled"] is False and hci0.status()["enabled"] is True

        # A third gaend asking for a name already owned exits at once; the owner is unaffected.
        dup = nodes("dup", "tcp:127.0.0.1:1", bus=bus, bus_name="org.gaend.hci1")
        dup.start(wait=False)
        assert dup.proc.wait(30) == 1
        assert ("gaend: D-Bus name org.gaend.hci1 is already owned by another process "
                "(another gaend on this controller?)") in dup.stderr, dup.stderr
        assert hci1.proc.poll() is None and hci1.status()["busName"] == "org.gaend.hci1"
    finally:
        bus.stop()

