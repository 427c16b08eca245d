"""Fault suite: rotten bits and kill -9 loops against the real gaend on the virtual
radio (clock steps: test_clock_steps_e2e.py; stalled callers: test_callers_e2e.py). Each test
asserts that the node keeps serving and what it keeps."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_node_e2e import nodes, signing_key, two_radios  # noqa: F401  (nodes is a fixture)


def stored_scans(node) -> set[str]:
    """The scan start times in the node's export (empty scans included)."""
    rows = node.export("csv").splitlines()
    header = rows[0].split(",")
    col = header.index("scan_start")
    return {r.split(",")[col] for r in rows[1:]}


def key_days(node) -> dict[int, str]:
    """Rolling start interval -> key data of the node's key history (trial mode: today's too)."""
    return {k["rollingStartIntervalNumber"]: k["keyData"] for k in node.keys()}


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


def rot_the_log(store: Path, how: str) -> str:
    """After a kill -9: deletes the write-ahead log and its index, or flips one bit in the
    page of its first or of its middle frame (32-byte header, 24-byte frame headers, 4096-byte
    pages). Says what it did; an empty log has nothing to flip."""
    wal, shm = Path(f"{store}-wal"), Path(f"{store}-shm")
    if how == "delete":
        for p in (wal, shm):
            p.unlink(missing_ok=True)
        return "deleted"
    frames = (wal.stat().st_size - 32) // (24 + 4096) if wal.exists() else 0
    if frames <= 0:
        return "empty log"
    frame = 0 if how == "first" else frames // 2
    data = bytearray(wal.read_bytes())
    data[32 + frame * (24 + 4096) + 24 + 2048] ^= 0x10
    wal.write_bytes(bytes(data))
    return f"bit flipped in frame {frame} of {frames}"


READER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
db.execute("SELECT count(*) FROM scan").fetchone()
print("holding", flush=True)
time.sleep(600)
"""


def recording_pair(radio, nodes, scans: int):
    """Nodes a and b on one virtual radio, b scanning continuously in 2 s scans (so that each
    scan stores a's beacons), both started; returns once b has stored `scans` scans."""
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"],
              config="scanning:\n  mode: continuous\n  duration_seconds: 2\n")
    a.start()
    b.start()
    b.wait_scans(scans)
    return a, b


def test_a_rotten_or_lost_log_after_kill9_loses_nothing_uncounted(radio, nodes):
    """kill -9 while a reader holds a snapshot (so recent commits are still in the write-ahead
    log), then the log deleted (with its index) or one bit flipped in its first or middle
    frame: every scan stored before is read back or counted in quarantinedRecords, and the
    day's key is the one it was (never a second key)."""
    _, b = recording_pair(radio, nodes, scans=6)
    keys = key_days(b)
    today = max(keys)
    for how in ("delete", "first", "middle"):
        # A reader's snapshot (another process, killed with gaend so that it never checkpoints
        # on close) keeps the commits after it in the log, as a long export does.
        reader = subprocess.Popen([sys.executable, "-c", READER, str(b.store)], stdout=subprocess.PIPE, text=True)
        assert reader.stdout.readline().strip() == "holding"
        seen = b.status()["scanCount"]
        b.wait_scans(seen + 3)
        scans_before = stored_scans(b)
        counted_before = b.status().get("quarantinedRecords", 0)
        b.kill9()
        reader.kill()
        reader.wait(10)
        did = rot_the_log(b.store, how)
        b.start()
        lost = scans_before - stored_scans(b)
        counted = b.status().get("quarantinedRecords", 0) - counted_before
        print(f"log {did}: {len(lost)} of {len(scans_before)} scans lost, {counted} counted")
        assert len(lost) <= counted, f"log {did}: {len(lost)} of {len(scans_before)} scans lost, {counted} counted"
        days = key_days(b)
        assert days.get(today) == keys[today], f"log {did}: the day's key changed ({keys[today]} -> {days.get(today)})"
        assert set(keys) <= set(days), (keys, days)


def test_damaged_store_is_set_aside_and_the_node_goes_on(radio, nodes):
    """One structural bit (the first page's b-tree header at offset 100): gaend does not exit
    or restart-loop. It sets the damaged file aside (kept byte for byte), says so in the
    journal and in status, keeps advertising the day's key (from the ledger) and records into
    a fresh store; the next start opens the fresh store as it is."""
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"])
    a.start()
    b.start()
    b.wait_scans(3)
    keys_before = key_days(b)
    today = max(keys_before)
    assert b.terminate() == 0, b.stderr
    damaged = bytearray(b.store.read_bytes())
    damaged[100] ^= 0x01
    b.store.write_bytes(bytes(damaged))
    b.start()
    time.sleep(1)
    assert b.proc.poll() is None, b.stderr
    aside = [p for p in b.state.glob("store.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1, list(b.state.iterdir())
    assert aside[0].read_bytes() == bytes(damaged)
    assert "the store is damaged: set aside" in b.stderr and str(aside[0]) in b.stderr, b.stderr
    status = b.status()
    # Counted as the scans it held (at least the 3 recorded before), not as 1 (issue 29).
    assert status["quarantinedRecords"] >= 3, status
    assert "storage-error" not in status["status"], status
    # The day's key is the one advertised before the damage: no second key for the day.
    keys_after = key_days(b)
    assert keys_after.get(today) == keys_before[today], (keys_before, keys_after)
    # On air: an RPI of that same key (trial mode shows the RPI on air).
    out = subprocess.run([str(b.bin_dir / "gaenctl"), "derive", "--tek", keys_before[today], "--interval", str(today),
                          "--count", "144"], capture_output=True, text=True, check=True)
    rpis = {i["rpi"] for i in json.loads(out.stdout)["intervals"]}
    assert wait_for(lambda: b.status().get("currentRpi") in rpis, 30, 0.5), (b.status(), keys_before[today])
    # Recording goes on into the fresh store.
    b.wait_scans(status["scanCount"] + 2)
    assert len(stored_scans(b)) >= 2
    assert b.terminate() == 0, b.stderr
    b.start()
    assert b.proc.poll() is None, b.stderr
    assert len([p for p in b.state.glob("store.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]) == 1
    assert key_days(b).get(today) == keys_before[today]


def test_store_damaged_while_running_is_set_aside_and_recording_goes_on(radio, nodes):
    """The store file damaged in place under a running gaend (its header overwritten, as a
    failing card or a stray write does): the next scan's write finds it. gaend sets it aside
    at once (kept, in the journal and status), opens a fresh store with the day's key from
    the ledger, writes that scan there and goes on recording; no restart is needed."""
    _, b = recording_pair(radio, nodes, scans=3)
    keys_before = key_days(b)
    today = max(keys_before)
    pid = b.proc.pid
    message = "the store became damaged while gaend runs: set aside"

    def damage() -> None:
        with open(b.store, "r+b") as f:
            f.write(b"not an SQLite f\0")
            f.flush()
            os.fsync(f.fileno())

    # A checkpoint in flight may rewrite the first page just after the damage: damage again
    # until the node reports it (each try is one scan's wait).
    for _ in range(5):
        damage()
        if wait_for(lambda: message in b.stderr, 15, 0.2):
            break
    assert message in b.stderr, b.stderr
    assert b.proc.poll() is None and b.proc.pid == pid, b.stderr
    aside = [p for p in b.state.glob("store.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1, list(b.state.iterdir())
    assert aside[0].read_bytes().startswith(b"not an SQLite f\0")
    assert str(aside[0]) in b.stderr and "found while running" in b.stderr, b.stderr
    status = b.status()
    # Counted as the scans it held (at least the 3 recorded before), not as 1 (issue 29).
    assert status["quarantinedRecords"] >= 3, status
    assert "storage-error" not in status["status"], status
    # The fresh store holds the scan that met the damage and those after it.
    b.wait_scans(status["scanCount"] + 2)
    assert len(stored_scans(b)) >= 2
    assert "storage-error" not in b.status()["status"]
    assert "cannot store the scan" not in b.stderr, b.stderr
    # No second key for the day.
    assert key_days(b).get(today) == keys_before[today], (keys_before, key_days(b))
    assert b.terminate() == 0, b.stderr
    b.start()
    assert b.proc.poll() is None, b.stderr
    assert len([p for p in b.state.glob("store.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]) == 1
    assert key_days(b).get(today) == keys_before[today]


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


FLOOD_CONFIG = """
scanning:
  mode: continuous
  duration_seconds: 4
store:
  max_pending_mb: 1
research:
  enabled: true
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_disk_full_under_a_report_flood_stays_bounded(radio, nodes):
    """2,000 reports/s on a full disk: the node keeps serving, scans wait in memory up to
    store.max_pending_mb and the oldest are dropped and counted beyond it, memory stays
    bounded, and storing resumes when space returns."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--ignore-clock-sync"], config=FLOOD_CONFIG)
    n.state.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(n.state)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        n.start()
        n.wait_scans(1, timeout=30)
        r.ok(cmd="flood", device="n", rate=2000, seconds=120)
        n.wait_scans(3, timeout=30)
        filler = n.state / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)  # fills the tmpfs
        assert wait_for(lambda: "storage-full" in n.status()["status"], 30, 0.5), n.status()
        base = rss_kb(n.proc.pid)
        assert wait_for(lambda: n.status().get("droppedScans", 0) > 0, 60, 1), n.status()
        samples = []
        for _ in range(10):
            t0 = time.monotonic()
            status = n.status()
            assert time.monotonic() - t0 < 2, "status took over 2 s under the flood"
            samples.append(rss_kb(n.proc.pid))
            time.sleep(2)
        # Scans keep being counted (finished, waiting or dropped), memory stays bounded: the
        # 1 MiB queue, not the flood's 500 kB a second.
        assert status["scanCount"] > 3 and status["droppedSightings"] > 0, status
        assert max(samples) - base < 24 * 1024, f"RSS grew from {base} kB to {max(samples)} kB"
        print(f"disk full under 2000 reports/s: RSS {base} -> {max(samples)} kB, status {status}")
        assert n.proc.poll() is None
        r.ok(cmd="flood", device="n", rate=0)
        filler.unlink()
        assert wait_for(lambda: "storage-full" not in n.status()["status"], 30, 0.5), n.status()
        before = len(stored_scans(n))
        n.wait_scans(n.status()["scanCount"] + 2, timeout=30)
        assert len(stored_scans(n)) > before
        assert "dropped the oldest scan" in n.stderr
    finally:
        n.close()
        subprocess.run(["umount", "-l", str(n.state)], capture_output=True)


def rss_anon_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon")


def test_memory_stays_flat_as_sightings_are_recorded(radio, nodes):
    """Report floods with the disk not full: what the node recorded is in the store, not in
    memory. RSS is read at rest (a flood stopped and two scans ended since), where it does not
    depend on how far the node lagged behind the flood: after 100,000, 250,000 and 400,000
    sightings anonymous RSS is within 6 MB of the idle node's, and the last 150,000 added
    under 3 MB. During a flood the working set (the scans being collected and written) is
    bounded by the scan length. Without the allocator trim after each scan's write, the freed
    buffers stayed resident: 11-25 MB at rest; a buffer of the newest 64 finished scans that
    nobody read held 30 MB and more.

    The growth bound is taken after 250,000 sightings, not 100,000: the level at rest rises
    in steps while SQLite's page cache and the allocator's two arenas fill, and where the
    steps fall depends on the machine's load (measured: up to 2.2 MB between 100,000 and
    450,000 sightings, alone or loaded, then flat within 0.2 MB to 1,085,000; once, under a
    test-bed guest and the whole end-to-end suite, 3.8 MB between 100,000 and 250,000)."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--ignore-clock-sync"], config=FLOOD_CONFIG)
    n.start()
    n.wait_scans(2, timeout=30)
    idle = rss_anon_kb(n.proc.pid)

    def flood(sightings: int) -> int:
        start = n.status()["sightingCount"]
        r.ok(cmd="flood", device="n", rate=5000, seconds=600)
        assert wait_for(lambda: n.status()["sightingCount"] - start >= sightings, 300, 1), n.status()
        r.ok(cmd="flood", device="n", rate=0)
        n.wait_scans(n.status()["scanCount"] + 2, timeout=60)
        return rss_anon_kb(n.proc.pid)

    levels = []
    for sightings in (100_000, 150_000, 150_000):
        levels.append(flood(sightings))
        count = n.status()["sightingCount"]
        assert levels[-1] - idle < 6 * 1024, f"anonymous RSS at rest {levels[-1]} kB against {idle} kB idle, after {count} sightings"
    status = n.status()
    warm, rest = levels[-2], levels[-1]
    print(f"{status['sightingCount']} sightings: anonymous RSS idle {idle} kB, at rest {' then '.join(map(str, levels))} kB")
    assert rest - warm < 3 * 1024, f"anonymous RSS at rest grew from {warm} kB to {rest} kB over the last 150,000 sightings"
    assert status.get("droppedScans", 0) == 0, status


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_disk_full_flood_memory_is_bounded_by_the_queue(radio, nodes):
    """4,000 reports/s on a full disk with the default 16 MiB queue: RSS stays within the
    queue's bound and some slack, however long the flood; at SIGTERM the waiting scans are
    counted and logged as dropped, and the exit status says whether the store closed."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    config = FLOOD_CONFIG.replace("max_pending_mb: 1", "max_pending_mb: 16")
    n = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--ignore-clock-sync"], config=config)
    n.state.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(n.state)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        n.start()
        n.wait_scans(1, timeout=30)
        # The idle node's RSS: a base read once the disk is full depended on how much of the
        # flood the node had taken in by then (on a loaded machine, little).
        base = rss_kb(n.proc.pid)
        subprocess.run(["dd", "if=/dev/zero", f"of={n.state / 'filler'}", "bs=4k"], capture_output=True)
        r.ok(cmd="flood", device="n", rate=4000, seconds=600)
        assert wait_for(lambda: "storage-full" in n.status()["status"], 30, 0.5), n.status()
        samples = []
        end = time.monotonic() + 90
        while time.monotonic() < end:
            samples.append(rss_kb(n.proc.pid))
            time.sleep(5)
        status = n.status()
        print(f"disk full at 4000 reports/s for 90 s: RSS {base} -> max {max(samples)} kB; {status}")
        assert status["sightingCount"] > 100_000, status
        # The queue's 16 MiB (encoded scans) and the transient peak of the scans being
        # collected, encoded and sealed (tens of thousands of reports each): without the
        # bound, RSS grew 62 -> 304 MB in 400 s.
        assert max(samples) - base < 48 * 1024, f"RSS grew from {base} kB to {max(samples)} kB"
        r.ok(cmd="flood", device="n", rate=0)
        code = n.terminate()
        err = n.stderr
        assert "stopping with scans still waiting for disk space: dropped" in err, err[-3000:]
        assert code == (1 if "closing the store failed" in err else 0), (code, err[-3000:])
    finally:
        n.close()
        subprocess.run(["umount", "-l", str(n.state)], capture_output=True)
