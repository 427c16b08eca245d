"""Field checks as a technician makes them: `gaenctl status` names the controller and
the address on air, an independent Bumble scanner hears exactly that address (and, in trial
mode, the RPI status shows), and the controller facts are the ones the controller reports."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time

from conftest import peer_scan, wait_for
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (fixture)

PREFIX = "02011a03036ffd17166ffd"  # flags, 16-bit UUID list 0xFD6F, service data 0xFD6F


def gaen_reports(scan) -> list[dict]:
    return [x for x in scan.lines() if x["data"].startswith(PREFIX)]


def on_air(node) -> dict:
    """A status taken while a beacon is confirmed on air."""
    assert wait_for(lambda: node.status().get("advertisingAddress") is not None, 30, 0.3), node.status()
    return node.status()


def test_status_shows_the_controller_and_what_a_scanner_hears(radio, nodes, spawn):
    # A controller that is not Bumble's default (0xFFFF, 5.0): the facts must come from it.
    r = radio([{"name": "board", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER,
                "company_identifier": 0x000F, "hci_version": 11, "lmp_version": 10},
               {"name": "other", "transport": "tcp-server:127.0.0.1:0", "x": 2.0,
                "public_address": "00:1A:7D:DA:71:13"},
               {"name": "phone", "transport": "tcp-server:127.0.0.1:0", "x": 1.0}],
              channel={"sigma": 0.0, "loss": 0.0})
    # Real time (no --time-scale): the address holds for 10-20 minutes, as on a board.
    trial = nodes("board", r.ready["devices"]["board"]["connect"], extra=["--trial", "--ignore-clock-sync"])
    plain = nodes("other", r.ready["devices"]["other"]["connect"], extra=["--ignore-clock-sync"])
    trial.start()
    plain.start()

    for _ in range(3):  # a rotation between the status and the scan (1 in ~600 s) retries
        before = on_air(trial)
        scan = peer_scan(spawn, r, "phone", 3.0)
        assert scan.wait(30) == 0, scan.stderr
        after = on_air(trial)
        if before["advertisingAddress"] == after["advertisingAddress"]:
            break
    assert before["advertisingAddress"] == after["advertisingAddress"], (before, after)
    address, rpi = before["advertisingAddress"], before["currentRpi"]
    heard = {x["address"]: x for x in gaen_reports(scan)}
    assert address in heard, (address, sorted(heard))
    assert heard[address]["address_type"] == "random"
    # In trial mode status shows the RPI on air: the one in the beacon heard from that address.
    assert rpi is not None and len(rpi) == 32
    assert heard[address]["data"][len(PREFIX):len(PREFIX) + 32] == rpi
    # The other node (not in trial mode) is heard too; its status shows its address, never its RPI.
    other = on_air(plain)
    assert other["advertisingAddress"] in heard and other["currentRpi"] is None, other

    # The controller facts equal what the controller reports about itself.
    for node, device in ((trial, "board"), (plain, "other")):
        state = r.state(device)
        c = node.status()["controller"]
        assert c == {
            "name": r.ready["devices"][device]["connect"], "address": state["public_address"],
            "manufacturer": state["company_identifier"],
            "manufacturerName": "Broadcom Corporation" if device == "board" else "Not assigned (testing/virtual)",
            "hciVersion": state["hci_version"], "hciVersionName": {11: "5.2", 9: "5.0"}[state["hci_version"]],
            "hciSubversion": state["hci_subversion"],
            "lmpVersion": state["lmp_version"], "lmpVersionName": {10: "5.1", 9: "5.0"}[state["lmp_version"]],
            "lmpSubversion": state["lmp_subversion"],
        }, (c, state)
    assert plain.status()["controller"]["address"] == "00:1A:7D:DA:71:13"
    # Calibration and labels as configured.
    s = trial.status()
    assert (s["txPower"], s["rssiCorrection"], s["node"], s["site"]) == (TX_POWER, 0, "board", "e2e"), s

    # The text a technician reads, and the same facts over D-Bus for any client.
    text = trial.ctl("status", check=True).stdout
    assert f"controller:     {r.ready['devices']['board']['connect']}, address {r.state('board')['public_address']}, " \
           "Broadcom Corporation (company 0x000F), HCI 5.2, LMP 5.1\n" in text, text
    assert "advertising:    from " in text and "calibration:    TX power -20 dBm, RSSI correction 0 dB" in text, text
    assert "labels:         node board, site e2e" in text, text
    busctl = shutil.which("busctl")
    if busctl:
        out = subprocess.run([busctl, f"--address={trial.bus.address}", "--json=short", "get-property", "org.gaend", "/org/gaend",
                              "org.gaend.ExposureNotification1", "Controller", "AdvertisingAddress"],
                             capture_output=True, text=True, check=True)
        values = [json.loads(l) for l in out.stdout.splitlines()]
        assert values[0]["data"]["manufacturer"]["data"] == 0x000F, values
        assert values[1]["data"] == trial.status()["advertisingAddress"]

    # A controller that goes away: status keeps its name, drops the facts and the address.
    r.ok(cmd="drop", device="board", refuse_seconds=5.0)
    assert wait_for(lambda: "address" not in trial.status()["controller"], 10, 0.2), trial.status()
    gone = trial.status()
    assert gone["controller"] == {"name": r.ready["devices"]["board"]["connect"]}
    assert gone["advertisingAddress"] is None and gone["currentRpi"] is None, gone
    # ... and has them again once it is back, with a new address on air.
    back = on_air(trial)
    assert back["controller"]["manufacturer"] == 0x000F and back["currentRpi"] is not None, back


TEK = "75c734c6dd1a782de7a965da5eb93125"


def test_sightings_watch_shows_addresses_and_a_per_device_summary(radio, nodes, spawn, bin_dir):
    """`sightings watch` carries each sighting's advertiser address, and --summary's per-device
    rows (address and RPI) equal what the node's own export gives for the same scans."""
    from conftest import PEER, derive

    r = radio([{"name": "board", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER},
               {"name": "peer", "transport": "tcp-server:127.0.0.1:0", "x": 1.5, "tx_power": -20}],
              channel={"sigma": 2.0, "loss": 0.0})
    n = nodes("board", r.ready["devices"]["board"]["connect"])  # trial, time scale 20: a scan every 3 s
    n.start()
    enin = 2642976
    adv = spawn([sys.executable, PEER, "advertise-gaen", "--transport", r.bumble("peer"), "--tek", TEK, "--tx-power", "-20",
                 "--enin", enin, "--interval-ms", "20", "--duration", "120"], "peer-adv")
    assert wait_for(lambda: adv.proc.poll() is not None or adv.out_path.read_text().strip(), 20, 0.2), adv.stderr
    peer_address = json.loads(adv.out_path.read_text().splitlines()[0])["address"]
    want_rpi = derive(bin_dir, TEK, enin, "40ec0000")["rpi"]

    scans = [json.loads(l) for l in n.ctl("sightings", "watch", "--json", "--count", "2", check=True).stdout.splitlines()]
    heard = [s for scan in scans for s in scan["sightings"]]
    assert heard and all((s["address"], s["rpi"]) == (peer_address, want_rpi) for s in heard), (peer_address, heard[:3])
    text = n.ctl("sightings", "watch", "--count", "3", check=True).stdout
    assert f"  {peer_address}  rpi {want_rpi}  aem " in text, text

    rows = [json.loads(l) for l in n.ctl("sightings", "watch", "--summary", "--json", "--count", "4", check=True).stdout.splitlines()]
    assert len(rows) == 4 and sum(x["sightings"] for x in rows) > 0, rows
    last = rows[-1]
    # The same scans from the store, summarised here: attenuation = TX power - (RSSI + correction).
    status = n.status()
    tx, corr = status["txPower"], status["rssiCorrection"]
    exported = list(csv.DictReader(io.StringIO(n.export("csv"))))
    start, end = rows[0]["start"] / 1000, last["end"] / 1000
    picked = [e for e in exported if e["rpi"] and start <= float(e["time"]) <= end]
    assert picked and all((e["address"], e["rpi"]) == (peer_address, want_rpi) for e in picked), picked[:3]
    att = sorted(tx - (int(e["rssi"]) + corr) for e in picked)
    median = att[len(att) // 2] if len(att) % 2 else (att[len(att) // 2 - 1] + att[len(att) // 2]) / 2
    latest = max(picked, key=lambda e: float(e["time"]))
    assert last["devices"] == [{
        "address": peer_address, "rpi": want_rpi, "reports": len(picked), "lastRssi": int(latest["rssi"]),
        "minAttenuation": att[0], "medianAttenuation": median,
        "firstSeen": round(min(float(e["time"]) for e in picked) * 1000),
        "lastSeen": round(float(latest["time"]) * 1000),
    }], (last, len(picked))
    # The text view: a header and one row for the peer.
    table = n.ctl("sightings", "watch", "--summary", "--count", "2", "--tx-power", "-10", check=True).stdout
    assert "attenuation = -10 dBm - (RSSI + 0 dB)" in table and f"\n{peer_address}  {want_rpi}" in table, table
    bad = n.ctl("sightings", "watch", "--tx-power", "-10")
    assert bad.returncode != 0 and "--tx-power goes with --summary" in bad.stderr, bad.stderr


def test_journal_native_protocol_carries_structured_fields(radio, nodes, tmp_path):
    """Under journald (JOURNAL_STREAM names stderr) gaend sends each entry to the native socket
    (here a stand-in bound by the test) with PRIORITY and its metadata as GAEND_* fields; with
    nothing listening there it falls back to `<N>` lines on the stream."""
    import os
    import socket as so

    def parse(datagram: bytes) -> dict:
        fields, i = {}, 0
        while i < len(datagram):
            nl, eq = datagram.find(b"\n", i), datagram.find(b"=", i)
            if eq != -1 and eq < nl:
                fields[datagram[i:eq].decode()] = datagram[eq + 1:nl].decode()
                i = nl + 1
            else:
                size = int.from_bytes(datagram[nl + 1:nl + 9], "little")
                fields[datagram[i:nl].decode()] = datagram[nl + 9:nl + 9 + size].decode()
                i = nl + 9 + size + 1
        return fields

    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    path = str(tmp_path / "journal.socket")
    sock = so.socket(so.AF_UNIX, so.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.5)
    n = nodes("n", r.ready["devices"]["n"]["connect"])
    err = n.dir / "gaend-1.err"  # the file Node.start opens for the first run's stderr
    err.touch()
    st = os.stat(err)
    env = {**os.environ, "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}", "GAEND_JOURNAL_SOCKET": path}
    n.start(env=env)
    entries = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(e.get("GAEND_CONTROLLER") for e in entries):
        try:
            entries.append(parse(sock.recv(65536)))
        except so.timeout:
            pass
    up = [e for e in entries if e.get("GAEND_CONTROLLER")]
    assert up, entries[:5]
    assert all(e["SYSLOG_IDENTIFIER"] == "gaend" and e["PRIORITY"].isdigit() and e["MESSAGE"] for e in entries), entries[:3]
    assert up[0]["GAEND_CONTROLLER"] == r.ready["devices"]["n"]["connect"] and up[0]["PRIORITY"] == "6", up[0]
    # Each entry once: to the socket, or (its queue full for a moment: 10 datagrams by default)
    # as a <N> line on the stream, never both.
    streamed = err.read_text().splitlines()
    assert all(l.startswith("<") for l in streamed), streamed
    sent = {e["MESSAGE"] for e in entries}
    assert not [l for l in streamed if l[l.index(">") + 1:] in sent], (streamed, sent)
    assert len(streamed) < len(entries), (streamed, entries)
    n.terminate()

    # journald gone (nothing bound at the path): the same entries come as <N> lines on stderr.
    sock.close()
    os.unlink(path)
    err2 = n.dir / "gaend-2.err"
    err2.touch()
    st = os.stat(err2)
    n.start(env={**env, "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
    assert wait_for(lambda: "controller=" in err2.read_text(), 20, 0.2), err2.read_text()
    assert all(l.startswith("<") for l in err2.read_text().splitlines()), err2.read_text()
    n.terminate()
