"""Wrong clocks: the real gaend on the virtual radio under clock steps.

Clock steps use libfaketime on the wall clock only (the monotonic clock stays real), with the
node on a scaled clock: real wall-clock steps show through a scaled clock, so +40 days is one
write to the faketime file and a rotation follows within seconds."""

from __future__ import annotations

import os
import subprocess
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

    The node starts at a chosen UTC time of the current day (`start`, "HH:MM"), ahead of or
    behind the real clock, so the tests cover starts near midnight and offsets of either sign
    whatever hour they run at. Only the wall clock is faked: monotonic timers stay real through
    faketime/monotonic_timers.c (libfaketime alone moves them by the offset)."""

    def __init__(self, directory: Path, start: str, shim: Path) -> None:
        self.file = directory / "faketime"
        self.shim = shim
        hours, minutes = map(int, start.split(":"))
        now = time.time()
        self.start_wall = now // 86400 * 86400 + hours * 3600 + minutes * 60
        self.base = int(self.start_wall - now)
        self.started = time.monotonic()
        self.set("+0")

    def set(self, offset: str) -> None:
        """`offset`: "+0", "+40d", "-2h": the real clock's offset from the node's start."""
        units = {"d": 86400, "h": 3600, "m": 60}
        seconds = int(offset[:-1]) * units[offset[-1]] if offset[-1] in units else int(offset)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(f"{self.base + seconds:+d}\n")
        os.replace(tmp, self.file)

    def back_to_start(self, scale: float, after: float = 60) -> None:
        """Steps the node's scaled wall clock back to `after` node seconds past its start."""
        elapsed = time.monotonic() - self.started
        self.set(str(int(after - elapsed * scale)))

    def env(self) -> dict:
        return {**os.environ, "LD_PRELOAD": f"{self.shim} {FAKETIME}", "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def start(self, node) -> None:
        # libfaketime 0.9.10 hides a Swift program's arguments when the program is the first
        # process it is preloaded into (seen here: `gaenctl derive --help` printed the top-level
        # help); one exec in between (nice) avoids it.
        self.started = time.monotonic()
        node.start(env=self.env(), wrapper=["nice", "-n", "0"])


@pytest.fixture(scope="session")
def monotonic_timers(tmp_path_factory) -> Path:
    """faketime/monotonic_timers.c built for this run."""
    out = tmp_path_factory.mktemp("faketime") / "monotonic_timers.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(out), str(Path(__file__).parent / "faketime" / "monotonic_timers.c"),
                    "-ldl"], check=True)
    return out


def wait_rotations(node, n: int, timeout: float = 60) -> None:
    start = node.status()["advertisementCount"]
    assert wait_for(lambda: node.status()["advertisementCount"] >= start + n, timeout, 0.5), node.status()


# Node start times (UTC, today): just after midnight, the hour a run once failed at, and near
# midnight, where a few node hours cross into the next day.
START_TIMES = ["00:30", "09:50", "23:30"]


def step_node(nodes, radio, shim: Path, confirm_minutes: float, start: str):
    if FAKETIME is None:
        pytest.skip("libfaketime is not installed (scripts/setup.sh installs the faketime package)")
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--trial", "--time-scale", str(SCALE)],
              config=STEP_CONFIG.format(tx=TX_POWER, confirm=confirm_minutes))
    clock = FakeClock(n.dir, start, shim)
    clock.start(n)
    n.wait_scans(3, timeout=60)
    wait_rotations(n, 1)
    return n, clock


@pytest.mark.parametrize("start", START_TIMES)
def test_forty_days_ahead_and_back_keeps_todays_key_and_every_scan(radio, nodes, monotonic_timers, start):
    n, clock = step_node(nodes, radio, monotonic_timers, confirm_minutes=600, start=start)
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

    # ±1 day steps are proven by NodeClockStepTests (unit, manual clock).
    assert n.terminate() == 0, n.stderr


@pytest.mark.parametrize("start", START_TIMES)
def test_genuine_forty_day_gap_deletes_by_retention_and_never_remints(radio, nodes, monotonic_timers, start):
    # One node-minute of confirmation: at x60 the jump holds after one real second.
    n, clock = step_node(nodes, radio, monotonic_timers, confirm_minutes=1, start=start)
    keys0 = key_days(n)
    scans0 = stored_scans(n)
    clock.set("+40d")
    assert wait_for(lambda: not (scans0 & stored_scans(n)), 60, 1), "retention did not follow a time that held"
    assert wait_for(lambda: not (set(keys0) & set(key_days(n))), 30, 1), key_days(n)
    assert "clock-suspect" not in n.status()["status"]

    # Back into the first day (a node minute past the start, whatever time has run since): its
    # key is gone and no second one is made; the node says so.
    clock.back_to_start(SCALE)
    # The next rotation finds the day retired and takes the node off air (no advertisement).
    assert wait_for(lambda: "clock-suspect" in n.status()["status"], 60, 0.5), n.status()
    assert wait_for(lambda: n.status()["advertisingOnAir"] is False, 30, 0.5), n.status()
    assert not (set(keys0) & set(key_days(n))), "a second key was made for a day that had one"
    assert "never makes a second key" in n.stderr
    assert n.proc.poll() is None
    assert n.terminate() == 0, n.stderr


