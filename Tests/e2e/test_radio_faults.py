"""The HCI host under controller faults, end to end: advertising goes on (or resumes within
5 s) with a valid rotation, and the program neither crashes nor stops silently."""

from __future__ import annotations

import sys
import time

import pytest

from conftest import PEER, peer_scan, wait_for
from test_radio_e2e import PREFIX, TEK, check_pairing, two_nodes

FAULTS = {
    "connection-dropped": dict(cmd="drop", device="node"),
    "connection-refused-2s": dict(cmd="drop", device="node", refuse_seconds=2),
    "hardware-error": dict(cmd="hardware_error", device="node", code=1),
    "command-never-answered": dict(cmd="no_reply", device="node", opcode="0x2008", count=1),
    "command-disallowed": dict(cmd="disallow", device="node", opcode="0x200a", count=2),
    "truncated-event": dict(cmd="inject", device="node", kind="truncated"),
    "truncated-command-complete": dict(cmd="inject", device="node", kind="truncated_command_complete"),
    "garbled-event": dict(cmd="inject", device="node", kind="garbled"),
    "bad-packet-type": dict(cmd="inject", device="node", kind="bad_packet_type"),
    "short-frame": dict(cmd="inject", device="node", kind="short_frame"),
}


# Counters of the harness that prove the fault really hit the host (a test of recovery from a
# fault that never fired would pass vacuously).
FIRED = {
    "connection-dropped": ("host_connections", 2),
    "connection-refused-2s": ("host_connections", 2),
    "hardware-error": ("host_connections", 2),
    "command-never-answered": ("fault_no_reply", 1),
    "command-disallowed": ("fault_disallow", 2),
    "truncated-event": ("injected_bytes", 1),
    "truncated-command-complete": ("injected_bytes", 1),
    "garbled-event": ("injected_bytes", 1),
    "bad-packet-type": ("injected_bytes", 1),
    "short-frame": ("injected_bytes", 1),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_advertising_survives(fault, radio, spawn, bin_dir):
    r = two_nodes(radio)
    scan = peer_scan(spawn, r, "peer", 11.0)
    time.sleep(0.8)
    adv = spawn([bin_dir / "gaenctl", "radio", "advertise", "--controller", r.ready["devices"]["node"]["connect"],
                 "--tek", TEK, "--time-scale", "600", "--duration", "9"], "advertise")
    assert wait_for(lambda: r.state("node").get("advertising"), 5), "never started advertising"
    time.sleep(1.5)
    fault_time = time.time()
    r.ok(**FAULTS[fault])
    assert adv.wait(40) == 0, adv.stderr
    counter, minimum = FIRED[fault]
    assert r.stats("node")[counter] >= minimum, (fault, r.stats("node"))
    assert scan.wait(40) == 0, scan.stderr
    rotations = adv.lines()
    reports = [x for x in scan.lines() if x["data"].startswith(PREFIX)]
    check_pairing(reports, rotations)
    after = [rep["time"] for rep in reports if rep["time"] > fault_time]
    assert after, f"nothing on air after {fault}: {adv.stderr[-2000:]}"
    # Resumes within 5 s: no gap longer than that after the fault (rotations themselves
    # interrupt for milliseconds only).
    times = [fault_time] + after
    worst = max(b - a for a, b in zip(times, times[1:]))
    assert worst <= 5.0, f"advertising stopped for {worst:.1f} s after {fault}"
    assert "Fatal error" not in adv.stderr


def test_hung_controller_is_restarted_by_the_watchdog(radio, spawn, bin_dir):
    r = two_nodes(radio)
    scan = peer_scan(spawn, r, "peer", 13.0)
    time.sleep(0.8)
    adv = spawn([bin_dir / "gaenctl", "radio", "advertise", "--controller", r.ready["devices"]["node"]["connect"],
                 "--tek", TEK, "--time-scale", "600", "--duration", "11", "--watchdog-interval", "1"], "advertise")
    assert wait_for(lambda: r.state("node").get("advertising"), 5)
    time.sleep(1.0)
    r.ok(cmd="hang", device="node")
    assert adv.wait(40) == 0, adv.stderr
    assert scan.wait(40) == 0
    stats = r.stats("node")
    assert stats["commands_swallowed"] >= 1 and stats["host_connections"] >= 2, stats
    assert "restarting" in adv.stderr or "did not answer" in adv.stderr
    rotations = adv.lines()
    reports = [x for x in scan.lines() if x["data"].startswith(PREFIX)]
    check_pairing(reports, rotations)
    # Rotations go on after the restart (the hang would otherwise have frozen them).
    assert rotations[-1]["time"] - rotations[0]["time"] > 3000, rotations


def test_silent_scanning_is_noticed_and_resumed(radio, spawn, bin_dir):
    r = two_nodes(radio)
    peer = spawn([sys.executable, PEER, "advertise-gaen", "--transport", r.bumble("peer"), "--tek", TEK,
                  "--tx-power", "-20", "--enin", "2642976", "--duration", "25"], "peer-adv")
    assert wait_for(lambda: r.state("peer").get("advertising"), 10)
    sc = spawn([bin_dir / "gaenctl", "radio", "scan", "--controller", r.ready["devices"]["node"]["connect"],
                "--duration", "15"], "scan")
    time.sleep(4.0)
    stall_time = time.time()
    r.ok(cmd="stall_scan", device="node")
    assert sc.wait(40) == 0, sc.stderr
    peer.proc.terminate()
    assert r.stats("node")["pdus_scan_stalled"] >= 1
    times = [s["time"] for s in sc.lines()]
    before = [t for t in times if t < stall_time]
    after = [t for t in times if t > stall_time]
    assert len(before) >= 8, "the detector needs a rhythm to miss"
    assert after, sc.stderr
    gap = after[0] - stall_time
    assert 4.0 <= gap <= 8.0, f"scanning resumed {gap:.1f} s after the stall"
    assert "silent" in sc.stderr
