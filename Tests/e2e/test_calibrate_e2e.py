"""`gaenctl calibrate --live` end to end: gaend on a virtual controller, a reference Bumble
peer advertising from known keys 1 m away, a decoy GAEN advertiser beside it, and the
calibration measured through Research1, saved into gaend's YAML config and applied."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from conftest import PEER
from test_node_e2e import Node, nodes  # noqa: F401 (the fixture)

REF_TEK = "75c734c6dd1a782de7a965da5eb93125"
DECOY_TEK = "00112233445566778899aabbccddeeff"
TX = -20
A1M = 40.0          # the channel's attenuation at 1 m (slope 20 dB/decade: log10(1) = 0)
SIGMA = 2.0         # shadowing, dB, drawn per PDU
REFERENCE_ATTENUATION = 45.0  # what a calibrated receiver would measure for the reference at 1 m
# The board's readings at 1 m are TX - A1M = -60 dBm on average, a calibrated one would read
# TX - 45 = -65: the correction the model implies is A1M - REFERENCE_ATTENUATION = -5 dB.
EXPECTED = A1M - REFERENCE_ATTENUATION
MIN_SAMPLES = 30

CONFIG = """# board under test: keep this comment
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: continuous
  duration_seconds: 4
calibration:
  # earlier calibration, to be replaced
  tx_power: {tx}
  rssi_correction: 3   # a correction already in place: the live readings must not include it
  calibration_confidence: low
research:
  node: "board"
  site: calib-lab
"""


def research_property(node: Node, name: str) -> str:
    out = subprocess.run(["dbus-send", f"--bus={node.bus.address}", "--print-reply", "--dest=org.gaend", "/org/gaend",
                          "org.freedesktop.DBus.Properties.Get", "string:org.gaend.Research1", f"string:{name}"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()[-1]


def test_live_calibration_saves_the_config_and_applies(radio, nodes, spawn, tmp_path):
    r = radio([{"name": "board", "transport": "tcp-server:127.0.0.1:0"},
               {"name": "ref", "transport": "tcp-server:127.0.0.1:0", "x": 1.0, "tx_power": TX},
               # Another GAEN device 1 m away, 20 dB stronger: counted, it would move the median.
               {"name": "decoy", "transport": "tcp-server:127.0.0.1:0", "y": 1.0, "tx_power": 0}],
              channel={"a1m": A1M, "slope": 20.0, "sigma": SIGMA, "loss": 0.0})
    board = nodes("board", r.ready["devices"]["board"]["connect"], config=CONFIG.format(tx=TX))
    original = board.config.read_text()
    board.start()
    assert research_property(board, "RssiCorrection") == "3"

    # The reference holds one interval (no rotation during the test); its key list as gaenctl
    # keys create writes one.
    enin = int(time.time() // 600)
    keys = tmp_path / "reference.json"
    keys.write_text(json.dumps([{"keyData": REF_TEK, "rollingStartIntervalNumber": enin - enin % 144, "rollingPeriod": 144}]))
    for name, tek, tx in (("ref", REF_TEK, TX), ("decoy", DECOY_TEK, 0)):
        spawn([sys.executable, PEER, "advertise-gaen", "--transport", r.bumble(name), "--tek", tek, "--tx-power", tx,
               "--interval-ms", 20, "--enin", enin, "--time-scale", 0, "--duration", 300], name)
    board.wait_scans(2, timeout=60)

    # Interactive: a prompt per orientation, measured after Enter; --dry-run writes nothing.
    dry = subprocess.run([str(board.bin_dir / "gaenctl"), "--bus", board.bus.address, "calibrate", "--live",
                          "--reference-keys", str(keys), "--reference-attenuation", str(REFERENCE_ATTENUATION),
                          "--orientations", "front,back", "--seconds-per-orientation", "1", "--dry-run"],
                         input="\n\n", capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert "[1/2] Place the reference transmitter 1 m from the board, facing front; press Enter" in dry.stderr
    assert "[2/2]" in dry.stderr and "dry run: nothing written or applied" in dry.stdout, dry.stdout
    assert board.config.read_text() == original and research_property(board, "RssiCorrection") == "3"

    out = board.ctl("calibrate", "--live", "--non-interactive", "--reference-keys", keys,
                    "--reference-attenuation", REFERENCE_ATTENUATION, "--min-samples", MIN_SAMPLES,
                    "--seconds-per-orientation", 2, "--config", board.config, "--apply", timeout=180)
    assert out.returncode == 0, out.stderr + out.stdout
    print(out.stderr + out.stdout)  # shown with pytest -s
    assert "rssi_correction 3 dB, calibration_confidence low" in out.stderr  # the node's calibration before, reported
    assert len(re.findall(r"^(front|back|left|right): \d+ readings", out.stdout, re.M)) == 4, out.stdout
    fractional = float(re.search(r"correction (-?[\d.]+) dB$", out.stdout, re.M).group(1))
    correction = int(re.search(r"rssi_correction (-?\d+) dB \(rounded to whole dB", out.stdout).group(1))
    # Tolerance from the model: with n >= 4 x 30 readings of sigma 2 dB, the pooled median's
    # standard deviation is about 1.25 sigma / sqrt(n) = 0.23 dB; readings are whole dBm (the
    # median of rounded values can sit 0.5 dB off) and the correction is rounded to whole dB.
    # 1 dB covers both roundings and more than 2 standard deviations; the decoy (RSSI -40) or
    # the node's own correction (+3), if they leaked in, would be far outside it.
    assert abs(fractional - EXPECTED) <= 1.0, out.stdout
    assert abs(correction - EXPECTED) <= 1, out.stdout
    assert correction == round(fractional) or abs(fractional - correction) == 0.5

    # The YAML config: only the calibration values changed, comments and other lines kept.
    text = board.config.read_text()
    before, after = original.splitlines(), text.splitlines()
    assert len(before) == len(after)
    changed = [(b, a) for b, a in zip(before, after) if b != a]
    assert changed == [("  rssi_correction: 3   # a correction already in place: the live readings must not include it",
                        f"  rssi_correction: {correction}   # a correction already in place: the live readings must not include it"),
                       ("  calibration_confidence: low", "  calibration_confidence: high")], changed

    # Applied at once over D-Bus ...
    assert research_property(board, "RssiCorrection") == str(correction)
    assert research_property(board, "CalibrationConfidence") == "3"
    assert research_property(board, "TxPower") == str(TX)
    # ... and the config still loads in gaend and holds it after a restart.
    assert board.terminate() == 0, board.stderr
    board.start()
    assert research_property(board, "RssiCorrection") == str(correction)
    assert research_property(board, "CalibrationConfidence") == "3"


def test_live_calibration_refuses_an_unusual_config_and_leaves_it(radio, nodes, tmp_path):
    """A flow-style calibration block is refused before anything is measured or written."""
    r = radio([{"name": "board", "transport": "tcp-server:127.0.0.1:0"}])
    board = nodes("board", r.ready["devices"]["board"]["connect"],
                  config="calibration: {tx_power: -20, rssi_correction: 1}  # flow style\n")
    board.start()
    before = board.config.read_bytes()
    out = board.ctl("calibrate", "--live", "--non-interactive", "--any-device", "--expected-rssi", -60,
                    "--orientations", "front", "--min-samples", 1, "--seconds-per-orientation", 1,
                    "--config", board.config, timeout=120)
    assert out.returncode == 1
    assert "not a block mapping" in out.stderr, out.stderr
    assert board.config.read_bytes() == before


def test_markers_export_carries_node_and_site(radio, nodes, tmp_path):
    """Markers recorded with gaenctl mark come back as the markers CSV trial report reads, with
    the node and site labels gaend publishes (its config's), like the sightings export."""
    r = radio([{"name": "board", "transport": "tcp-server:127.0.0.1:0"}])
    board = nodes("board", r.ready["devices"]["board"]["connect"], config=CONFIG.format(tx=TX))
    board.start()
    board.ctl("mark", "--label", "seated, row 3", "--distance", "1.5", "--time", 1_800_000_000, check=True)
    board.ctl("mark", "--label", "break", "--time", 1_800_000_600, "--note", "all out", check=True)
    out = tmp_path / "markers.csv"
    board.ctl("markers", "export", "-o", out, check=True)
    assert out.read_text().splitlines() == [
        "time,label,distance,note,node,site,receiver,transmitter",
        '1800000000,"seated, row 3",1.5,,board,calib-lab,,',
        "1800000600,break,,all out,board,calib-lab,,",
    ]
    # The labels come from gaend (Research1 Node and Site); --site/--node replace them.
    relabelled = board.ctl("markers", "export", "--from", 1_800_000_500, "--site", "bus 7", check=True).stdout.splitlines()
    assert relabelled == ["time,label,distance,note,node,site,receiver,transmitter", "1800000600,break,,all out,board,bus 7,,"]
