"""The independent GAEN peer: its crypto against the published vectors, and the two
subcommands end to end on the virtual radio, run as other test suites will run them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import peer
from helpers import FIXTURES, PEER

VECTORS = json.loads((FIXTURES / "gaen-crypto-vectors.json").read_text())


def test_key_derivation_matches_vectors():
    tek = bytes.fromhex(VECTORS["tek"])
    assert peer.rpik(tek).hex() == VECTORS["rpik"]
    assert peer.aemk(tek).hex() == VECTORS["aemk"]


def test_all_rpis_and_aems_match_vectors():
    tek = bytes.fromhex(VECTORS["tek"])
    rpi_key, aem_key = peer.rpik(tek), peer.aemk(tek)
    metadata = bytes.fromhex(VECTORS["ble_metadata"])
    assert len(VECTORS["advertised"]) == 144
    for entry in VECTORS["advertised"]:
        rpi = peer.rpi(rpi_key, entry["en_interval_number"])
        assert rpi.hex() == entry["rpi"], entry["interval_index"]
        assert peer.aem(aem_key, rpi, metadata).hex() == entry["aem"]


def test_payload_layout_and_metadata():
    payload = peer.gaen_payload(bytes(range(16)), bytes([0xA0, 0xA1, 0xA2, 0xA3]))
    assert payload.hex() == ("02011a" "03036ffd" "17166ffd" + bytes(range(16)).hex()
                             + "a0a1a2a3")
    assert peer.metadata_v1(-20) == bytes([0x40, 0xEC, 0, 0])
    with pytest.raises(ValueError):
        peer.metadata_v1(200)
    assert peer.enin_at(1585785600) == VECTORS["en_interval_number_of_key"]


def test_non_resolvable_address_bits():
    address = peer.non_resolvable_address(bytes.fromhex("ffeeddccbbaa"))
    assert address.hex() == "3feeddccbbaa"
    with pytest.raises(ValueError):
        peer.non_resolvable_address(bytes(6))
    with pytest.raises(ValueError):
        peer.non_resolvable_address(bytes.fromhex("ffffffffffff"))


def test_advertise_gaen_is_seen_by_scan_on_the_virtual_radio(radio):
    r = radio()
    entry = VECTORS["advertised"][5]
    adv = subprocess.Popen(
        [sys.executable, str(PEER), "advertise-gaen", "--transport", r.bumble("a"),
         "--tek", VECTORS["tek"], "--metadata", VECTORS["ble_metadata"],
         "--enin", str(entry["en_interval_number"]), "--interval-ms", "100",
         "--duration", "60"],  # stopped once the scan is done: a loaded machine can take seconds to start the scanner
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rotation = json.loads(adv.stdout.readline())
        scan = subprocess.run(
            [sys.executable, str(PEER), "scan", "--transport", r.bumble("b"),
             "--duration", "1"],
            capture_output=True, text=True, timeout=30)
    finally:
        adv.terminate()
        adv.communicate(timeout=10)
    assert scan.returncode == 0, scan.stderr
    assert rotation["rpi"] == entry["rpi"] and rotation["aem"] == entry["aem"]
    lines = [json.loads(line) for line in scan.stdout.splitlines()]
    assert len(lines) >= 5
    expected = peer.gaen_payload(bytes.fromhex(entry["rpi"]), bytes.fromhex(entry["aem"]))
    for line in lines:
        assert line["pdu"] == "ADV_NONCONN_IND" and line["report"] == "legacy"
        assert line["address_type"] == "random"
        assert line["address"] == rotation["address"]
        assert int(line["address"][:2], 16) >> 6 == 0  # non-resolvable private address
        assert line["data"] == expected.hex()
        assert line["rssi"] == round(-(40 + 20 * 0.47712125472))  # 3 m, free space
        assert set(line) == {"time", "address", "address_type", "pdu", "report", "rssi",
                             "data"}


def test_peer_rejects_bad_tek():
    result = subprocess.run(
        [sys.executable, str(PEER), "advertise-gaen", "--transport", "tcp-client:127.0.0.1:1",
         "--tek", "0011"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "16 bytes" in result.stderr


def test_accelerated_schedule_rotates_address_rpi_and_aem_together(radio):
    r = radio()
    by_enin = {e["en_interval_number"]: e for e in VECTORS["advertised"]}
    start = VECTORS["en_interval_number_of_key"]
    adv = subprocess.Popen(
        [sys.executable, str(PEER), "advertise-gaen", "--transport", r.bumble("a"),
         "--tek", VECTORS["tek"], "--metadata", VECTORS["ble_metadata"],
         "--enin", str(start), "--time-scale", "600", "--interval-ms", "50",
         "--duration", "60"],  # stopped once the scan is done (the vectors cover 144 s at 600x)
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        json.loads(adv.stdout.readline())  # advertising has started
        scan = subprocess.run(
            [sys.executable, str(PEER), "scan", "--transport", r.bumble("b"),
             "--duration", "3.5"], capture_output=True, text=True, timeout=30)
        adv.terminate()
        out, _ = adv.communicate(timeout=10)
    finally:
        adv.kill()
    rotations = [json.loads(line) for line in out.splitlines()]
    assert len(rotations) >= 3
    for rotation in rotations:
        assert rotation["rpi"] == by_enin[rotation["enin"]]["rpi"]
        assert rotation["aem"] == by_enin[rotation["enin"]]["aem"]
    rpi_of_address: dict[str, set[str]] = {}
    address_of_rpi: dict[str, set[str]] = {}
    for line in map(json.loads, scan.stdout.splitlines()):
        rpi = line["data"][22:54]
        rpi_of_address.setdefault(line["address"], set()).add(rpi)
        address_of_rpi.setdefault(rpi, set()).add(line["address"])
    assert len(rpi_of_address) >= 3  # several rotations seen on air
    assert all(len(v) == 1 for v in rpi_of_address.values())
    assert all(len(v) == 1 for v in address_of_rpi.values())
