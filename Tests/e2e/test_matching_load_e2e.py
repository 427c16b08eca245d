"""A large key file while the node runs: 500,000 keys are matched on every core beside
the radio's path, no scheduled rotation or scan waits for them, and SIGTERM during matching stops
gaend within the unit's TimeoutStopSec with the store intact."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import time
from pathlib import Path

from conftest import wait_for
from test_node_e2e import FAST_CONFIG, TX_POWER, nodes, two_radios  # noqa: F401 (nodes is a fixture)

SCALE = 10  # one second of node time is 100 ms here
STOP_LIMIT = 15  # systemd/gaend.service TimeoutStopSec
LATE = re.compile(r"late\.seconds=([0-9.]+)")


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, wire: int, payload: bytes) -> bytes:
    return varint(number << 3 | wire) + payload


def export_bin(count: int, seed: int) -> bytes:
    """A bare export.bin (docs/key-files.md) of `count` random keys valid today, unsigned."""
    today = int(time.time()) // 86_400 * 144
    rng = __import__("random").Random(seed)
    keys = bytearray()
    for _ in range(count):
        key = (field(1, 2, varint(16) + rng.randbytes(16)) + field(2, 0, varint(1))
               + field(3, 0, varint(today)) + field(4, 0, varint(144)) + field(5, 0, varint(1)))
        keys += field(7, 2, varint(len(key)) + key)
    now = int(time.time())
    header = (field(1, 1, struct.pack("<Q", now - 86_400)) + field(2, 1, struct.pack("<Q", now))
              + field(3, 2, varint(3) + b"e2e") + field(4, 0, varint(1)) + field(5, 0, varint(1)))
    return b"EK Export v1    " + header + bytes(keys)


def cpu_seconds(pid: int, task: int | None = None) -> float:
    path = Path(f"/proc/{pid}/stat") if task is None else Path(f"/proc/{pid}/task/{task}/stat")
    fields = path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[int, float]:
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(t)] = cpu_seconds(pid, int(t))
        except OSError:
            pass
    return out


def test_large_key_file_beside_the_radio_then_sigterm_while_matching(radio, nodes, tmp_path):
    # Node n hears node a, so that its sightings span minutes and every key derives RPIs.
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"], extra=["--trial", "--time-scale", str(SCALE)])
    n = nodes("n", r.ready["devices"]["b"]["connect"], config=FAST_CONFIG.format(tx=TX_POWER, name="n"),
              extra=["--trial", "--time-scale", str(SCALE), "--log-level", "debug"])
    a.start()
    n.start()
    n.wait_scans(3, timeout=90)
    assert n.status()["sightingCount"] > 0
    big = tmp_path / "big.bin"
    big.write_bytes(export_bin(500_000, seed=1))

    before = n.status()
    log_offset = len(n.stderr)
    provide = subprocess.Popen([str(n.bin_dir / "gaenctl"), "--bus", n.bus.address, "keys", "provide", "--json", "--wait", "600", str(big)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # gaend's CPU time over the matching itself (from its "matching started" to its end).
    assert wait_for(lambda: "matching started" in n.stderr[log_offset:], 120, 0.02), n.stderr[log_offset:]
    cpu0, t0, threads0 = cpu_seconds(n.proc.pid), time.monotonic(), thread_cpu(n.proc.pid)
    # Threads come and go while matching: the last sample before the end counts for each.
    samples: dict[int, float] = {}

    def finished() -> bool:
        for t, c in thread_cpu(n.proc.pid).items():
            samples[t] = c
        return "matching finished" in n.stderr[log_offset:]
    assert wait_for(finished, 600, 0.02), n.stderr[log_offset:]
    wall, cpu = time.monotonic() - t0, cpu_seconds(n.proc.pid) - cpu0
    busy = sorted((c - threads0.get(t, 0) for t, c in samples.items()), reverse=True)
    out, err = provide.communicate(timeout=60)
    assert provide.returncode == 0, err
    result = json.loads(out)
    assert result["keys"] == 500_000 and result["matchedKeys"] == 0, result
    # On an idle machine one run may end between two schedule actions: provide the file again
    # (it replaces its copy, so every run matches 500,000 keys) until some fell in.
    for _ in range(12):
        if len(LATE.findall(n.stderr[log_offset:])) >= 2:
            break
        n.ctl("keys", "provide", "--json", "--wait", "600", big, check=True, timeout=700)
    log = n.stderr[log_offset:]
    delays = [float(x) for x in LATE.findall(log)]
    after = n.status()
    print(f"\n500k keys: {wall:.2f} s wall, {cpu:.2f} s gaend CPU ({cpu / wall:.2f} cores; {os.cpu_count()} on the machine); "
          f"{after['scanCount'] - before['scanCount']} scans, {after['advertisementCount'] - before['advertisementCount']} rotations meanwhile; "
          f"schedule actions: {len(delays)}, latest start {max(delays, default=0):.3f} s node time; "
          f"CPU of the busiest threads: {', '.join(f'{b:.2f} s' for b in busy[:4])}; load {os.getloadavg()[0]:.1f}")
    # Nothing the schedule did waited a second of node time for the matching.
    assert "ran late" not in log, log
    assert delays and max(delays) < 1.0, delays
    # Matching ran on every core: as many threads as cores did a real share of the work (a
    # share, not a speed: the machine may be busy with other work).
    cores = min(os.cpu_count() or 1, 4)
    if cores > 1:
        assert len(busy) >= cores and busy[cores - 1] >= 0.25 * busy[0], busy

    # SIGTERM while matching: gaend stops within TimeoutStopSec; the store opens with every scan.
    other = tmp_path / "other.bin"
    other.write_bytes(export_bin(500_000, seed=2))
    offset = len(n.stderr)
    provide = subprocess.Popen([str(n.bin_dir / "gaenctl"), "--bus", n.bus.address, "keys", "provide", str(other)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: "matching started" in n.stderr[offset:], 60, 0.05), n.stderr[offset:]
    scans = n.status()["scanCount"]
    t0 = time.monotonic()
    assert n.terminate() == 0, n.stderr
    stopped = time.monotonic() - t0
    provide.kill()  # it waits for ExposureStateUpdated, which a stopped gaend never sends
    provide.wait(10)
    print(f"SIGTERM while matching: stopped in {stopped:.2f} s")
    assert stopped < STOP_LIMIT
    assert "matching finished" not in n.stderr[offset:]
    n.start()
    rows = [line.split(",") for line in n.export("csv").splitlines()[1:]]
    assert len({(x[4], x[5]) for x in rows}) >= scans  # every scan recorded before the stop
