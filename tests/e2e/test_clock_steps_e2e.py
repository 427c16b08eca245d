"""Fault suite (issue 13), wrong clocks: the real gaend on the virtual radio under clock steps.

Clock steps use libfaketime on the wall clock only (the monotonic clock stays real), with the
node on a scaled clock: real wall-clock steps show through a scaled clock, so +40 days is one
write to the faketime file and a rotation follows within seconds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_faults_e2e import key_days, stored_scans
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (nodes is a fixture)

FAKETIME_LIBS = [Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
                 Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1")]
FAKETIME = next((p for p in FAKETIME_LIBS if p.exists()), None)
SCALE = 60

# At x60: a rotation every 10-20 s of real time, a 4 s scan every 60 s of node time (1 s real).
STEP_CONFIG = """
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: fixed
  duration_seconds: 4
  fixed_period_seconds: 60
calibration:
  tx_power: {tx}
clock:
  step_confirmation_minutes: {confirm}
"""


class FakeClock:
    """The offset libfaketime applies to gaend's wall clock, changed while it runs.

    Offsets are relative to a node start at the next 06:00 UTC: at x60 a test covers a few
    hours of node time, and the tests step back into the day they started in, so the node must
    not cross midnight on its own (started near midnight, the day it came back to was a new one
    that had never had a key). The base is always ahead of the real time: a backward offset at
    start leaves libdispatch's timers, whose deadlines libfaketime rewrites, far away."""

    def __init__(self, directory: Path) -> None:
        self.file = directory / "faketime"
        now = time.time()
        six = now // 86400 * 86400 + 6 * 3600
        self.base = int((six if six > now else six + 86400) - now)
        self.set("+0")

    def set(self, offset: str) -> None:
        """`offset`: "+0", "+40d", "-2h": from the node's start at 06:00."""
        units = {"d": 86400, "h": 3600, "m": 60}
        seconds = int(offset[:-1]) * units[offset[-1]] if offset[-1] in units else int(offset)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(f"{self.base + seconds:+d}\n")
        os.replace(tmp, self.file)

    def env(self) -> dict:
        return {**os.environ, "LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def start(self, node) -> None:
        # libfaketime 0.9.10 hides a Swift program's arguments when the program is the first
        # process it is preloaded into (seen here: `gaenctl derive --help` printed the top-level
        # help); one exec in between (nice) avoids it.
        node.start(env=self.env(), wrapper=["nice", "-n", "0"])


def wait_rotations(node, n: int, timeout: float = 60) -> None:
    start = node.status()["advertisementCount"]
    assert wait_for(lambda: node.status()["advertisementCount"] >= start + n, timeout, 0.5), node.status()


def step_node(nodes, radio, tmp_path, confirm_minutes: float):
    if FAKETIME is None:
        pytest.skip("libfaketime is not installed (scripts/setup.sh installs the faketime package)")
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--trial", "--time-scale", str(SCALE)],
              config=STEP_CONFIG.format(tx=TX_POWER, confirm=confirm_minutes))
    clock = FakeClock(n.dir)
    clock.start(n)
    n.wait_scans(3, timeout=60)
    wait_rotations(n, 1)
    return n, clock


def test_forty_days_ahead_and_back_keeps_todays_key_and_every_scan(radio, nodes, tmp_path):
    n, clock = step_node(nodes, radio, tmp_path, confirm_minutes=600)
    keys0 = key_days(n)
    scans0 = stored_scans(n)
    assert keys0 and scans0

    clock.set("+40d")
    assert wait_for(lambda: "clock-suspect" in n.status()["status"], 30, 0.5), n.status()
    wait_rotations(n, 2)  # rotations (with retention) on the stepped clock
    assert n.proc.poll() is None, n.stderr
    assert scans0 <= stored_scans(n), "a suspect clock deleted scans"
    # (Key history covers the 14 days before the clock's today, so day 0's key shows again
    # only once the clock is back: checked below.)

    clock.set("+0")
    assert wait_for(lambda: "clock-suspect" not in n.status()["status"], 30, 0.5), n.status()
    wait_rotations(n, 1)
    after = key_days(n)
    assert keys0.items() <= after.items(), "today's key changed after +40 days and back"
    assert len([k for k in after if k in keys0]) == len(keys0)
    assert scans0 <= stored_scans(n)
    assert "jumped far ahead" in n.stderr

    # ±1 day steps are proven by NodeClockStepTests (unit, manual clock), not here: libfaketime
    # also rewrites timerfd_settime deadlines, so after a backward step libdispatch's monotonic
    # timers sit a day away and every sleeping task waits (gdb: all threads idle, the dispatch
    # manager in epoll_wait on its timerfds). A forward step only makes them fire early.
    assert n.terminate() == 0, n.stderr


def test_genuine_forty_day_gap_deletes_by_retention_and_never_remints(radio, nodes, tmp_path):
    # One node-minute of confirmation: at x60 the jump holds after one real second.
    n, clock = step_node(nodes, radio, tmp_path, confirm_minutes=1)
    keys0 = key_days(n)
    scans0 = stored_scans(n)
    clock.set("+40d")
    assert wait_for(lambda: not (scans0 & stored_scans(n)), 60, 1), "retention did not follow a time that held"
    assert wait_for(lambda: not (set(keys0) & set(key_days(n))), 30, 1), key_days(n)
    assert "clock-suspect" not in n.status()["status"]

    # Back into the first day: its key is gone and no second one is made; the node says so.
    clock.set("+0")
    # The next rotation finds the day retired and takes the node off air (no advertisement).
    assert wait_for(lambda: "clock-suspect" in n.status()["status"], 60, 0.5), n.status()
    assert wait_for(lambda: n.status()["advertisingOnAir"] is False, 30, 0.5), n.status()
    assert not (set(keys0) & set(key_days(n))), "a second key was made for a day that had one"
    assert "never makes a second key" in n.stderr
    assert n.proc.poll() is None
    assert n.terminate() == 0, n.stderr


