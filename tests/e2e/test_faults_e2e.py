"""Fault suite (issue 13): wrong clocks, rotten bits and kill -9 loops against the real gaend on
the virtual radio. Each test asserts that the node keeps serving and what it keeps.

Clock steps use libfaketime on the wall clock only (the monotonic clock stays real), with the
node on a scaled clock: real wall-clock steps show through a scaled clock, so +40 days is one
write to the faketime file and a rotation follows within seconds."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_node_e2e import TX_POWER, nodes, signing_key, two_radios  # noqa: F401  (nodes is a fixture)

FAKETIME_LIBS = [Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
                 Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1")]
FAKETIME = next((p for p in FAKETIME_LIBS if p.exists()), None)
DAY = 86_400
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
    """The offset libfaketime applies to gaend's wall clock, changed while it runs."""

    def __init__(self, directory: Path) -> None:
        self.file = directory / "faketime"
        self.set("+0")

    def set(self, offset: str) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(offset + "\n")
        os.replace(tmp, self.file)

    def env(self) -> dict:
        return {**os.environ, "LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def stored_scans(node) -> set[str]:
    """The scan start times in the node's export (empty scans included)."""
    rows = node.export("csv").splitlines()
    header = rows[0].split(",")
    col = header.index("scan_start")
    return {r.split(",")[col] for r in rows[1:]}


def key_days(node) -> dict[int, str]:
    """Rolling start interval -> key data of the node's key history (trial mode: today's too)."""
    return {k["rollingStartIntervalNumber"]: k["keyData"] for k in node.keys()}


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
    n.start(env=clock.env())
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
    assert keys0.items() <= key_days(n).items(), "a suspect clock deleted a key"

    clock.set("+0")
    assert wait_for(lambda: "clock-suspect" not in n.status()["status"], 30, 0.5), n.status()
    wait_rotations(n, 1)
    after = key_days(n)
    assert keys0.items() <= after.items(), "today's key changed after +40 days and back"
    assert len([k for k in after if k in keys0]) == len(keys0)
    assert scans0 <= stored_scans(n)
    assert "jumped far ahead" in n.stderr

    # -1 day and back: no second key for today, nothing deleted.
    clock.set("-1d")
    wait_rotations(n, 1)
    clock.set("+0")
    wait_rotations(n, 1)
    assert keys0.items() <= key_days(n).items()
    assert scans0 <= stored_scans(n)
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
    wait_rotations(n, 1)
    assert wait_for(lambda: "clock-suspect" in n.status()["status"], 30, 0.5), n.status()
    assert not (set(keys0) & set(key_days(n))), "a second key was made for a day that had one"
    assert "never makes a second key" in n.stderr
    assert n.proc.poll() is None
    assert n.terminate() == 0, n.stderr


def flip_bit_in_one_scan(store: Path) -> int:
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT id, sealed FROM scan WHERE report_count > 0 ORDER BY id").fetchall()
        assert len(rows) >= 3, "too few scans with reports"
        scan_id, blob = rows[len(rows) // 2]
        blob = bytearray(blob)
        blob[len(blob) // 2] ^= 0x04
        db.execute("UPDATE scan SET sealed = ? WHERE id = ?", (bytes(blob), scan_id))
        db.commit()
        return scan_id
    finally:
        db.close()


def test_flipped_bit_costs_exactly_one_scan(radio, nodes, tmp_path):
    """One flipped bit in one sealed scan: that scan is quarantined (logged, counted in
    status), export and matching serve everything else, and the node keeps recording."""
    r = two_radios(radio)
    private, public = signing_key(tmp_path)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"],
              extra=["--trial", "--time-scale", "20", "--trust", f"e2e-ha:1={public}"])
    a.start()
    b.start()
    b.wait_scans(8, timeout=60)
    b.ctl("stop", check=True)
    before = b.export("csv").splitlines()[1:]
    scans_before = stored_scans(b)
    assert b.terminate() == 0, b.stderr
    flip_bit_in_one_scan(b.store)
    b.start()
    b.ctl("stop", check=True)
    after = b.export("csv").splitlines()[1:]
    lost = scans_before - stored_scans(b)
    assert len(lost) == 1, f"lost scans: {lost}"
    assert set(after) == {row for row in before if row.split(",")[4] not in lost}
    assert "store record quarantined" in b.stderr
    status = b.status()
    assert status.get("quarantinedRecords") == 1, status
    # Matching works on everything else: A's keys give windows, as `gaenctl windows` computes
    # them offline from the export that no longer holds the rotten scan.
    zip_path = tmp_path / "a.zip"
    a.ctl("keys", "history", "-o", zip_path, "--signing-key", private, "--key-id", "e2e-ha", "--key-version", "1", check=True)
    provided = json.loads(b.ctl("keys", "provide", "--json", zip_path, check=True).stdout)
    assert provided["matchedKeys"] == 1 and provided["windows"] >= 1, provided
    export = tmp_path / "b-sightings.csv"
    b.ctl("sightings", "export", "-o", export, check=True)
    offline = b.ctl("windows", "--sightings", export, "--keys", zip_path, "--trust", f"e2e-ha:1={public}", check=True)
    windows = json.loads(b.ctl("windows", "--json", check=True).stdout)
    assert [{k: v for k, v in w.items() if k != "transmissionRiskLevel"} for w in json.loads(offline.stdout)] == windows
    # Still recording.
    b.ctl("start", check=True)
    count = b.status()["scanCount"]
    b.wait_scans(count + 2)


def test_kill9_loop_never_shrinks_and_keeps_one_key(radio, nodes):
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"],
              config="advertising:\n  interval_min_ms: 20\n  interval_max_ms: 27\nscanning:\n  mode: continuous\n  duration_seconds: 4\n"
                     "calibration:\n  tx_power: -20\n")
    a.start()
    b.start()
    b.wait_scans(2)
    rng = random.Random(13)
    seen = len(stored_scans(b))
    keys = key_days(b)
    survived = 0
    for _ in range(10):
        time.sleep(rng.uniform(0.1, 1.5))
        b.kill9()
        b.start()
        now = len(stored_scans(b))
        assert now >= seen, f"stored scans went from {seen} to {now}"
        seen = now
        assert key_days(b) == keys or set(keys) <= set(key_days(b)), "a key changed across kill -9"
        days = list(key_days(b))
        assert len(days) == len(set(days))
        survived += 1
    b.wait_scans(1)
    assert len(stored_scans(b)) >= seen
    print(f"kill -9 runs survived: {survived}/10")
