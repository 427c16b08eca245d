"""`gaenctl trial calibrate` as an analyst meets it, through the binary:

- a simulated trial whose boards have drawn calibration errors (the simulator's
  `heterogeneity`, written to groundtruth/nodes.csv): the offsets it estimates from the
  report's attenuation.csv are those errors, relative to the mean board;
- DP-3T's layout (result rows with phone models, Google's calibration table): the table it
  proposes, given back to `trial import dp3t --calibration`, calibrates the phones so that a
  second estimate finds nothing left to correct (the loop a calibration campaign runs);
- a failed run writes nothing.
"""
import csv
import io
import math
import random
import subprocess
from pathlib import Path

import pytest


def gaenctl(bin_dir, *args, ok=True):
    r = subprocess.run([str(bin_dir / "gaenctl"), *map(str, args)], capture_output=True, text=True, timeout=600)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def rows(path: Path):
    return list(csv.DictReader(io.StringIO(path.read_text())))


def centred(values: dict) -> dict:
    mean = sum(values.values()) / len(values)
    return {k: v - mean for k, v in values.items()}


def test_simulated_boards_offsets_are_the_drawn_errors(bin_dir, tmp_path):
    nodes = [{"name": f"b{i}", "position": [(i % 3) * 2.0, (i // 3) * 2.0]} for i in range(6)]
    nodes[2]["rssiCorrection"] = 3
    nodes[4]["txPower"] = -25
    scenario = {"name": "cal", "site": "lab", "seed": 11, "start": "2026-11-02T00:00:00Z", "durationSeconds": 21600,
                "channel": {"attenuationAt1m": 50, "slopePerDecade": 20, "sigma": 4},
                "heterogeneity": {"txSigma": 4, "rxSigma": 4},
                # Nothing lost to sensitivity: censoring would pull the offsets towards 0.
                "maxAttenuationDb": 120, "scan": {"durationSeconds": 4, "periodSeconds": [120, 180]}, "nodes": nodes}
    (tmp_path / "s.json").write_text(__import__("json").dumps(scenario))
    gaenctl(bin_dir, "simulate", "--scenario", tmp_path / "s.json", "-o", tmp_path / "sim", "--report")
    out = tmp_path / "cal"
    r = gaenctl(bin_dir, "trial", "calibrate", tmp_path / "sim/report/attenuation.csv", "-o", out)
    assert "offsets relative to the mean device" in r.stdout
    truth = rows(tmp_path / "sim/groundtruth/nodes.csv")
    rx = centred({n["node"]: float(n["rx_offset_db"]) for n in truth})
    tx = centred({n["node"]: float(n["tx_offset_db"]) for n in truth})
    got = {d["device"]: d for d in rows(out / "offsets.csv")}
    assert sorted(got) == sorted(rx)
    for name, d in got.items():
        assert abs(float(d["receiver_offset_db"]) - rx[name]) < 0.5, (name, d, rx[name])
        assert abs(float(d["transmitter_offset_db"]) - tx[name]) < 0.5, (name, d, tx[name])
        # What the board carries now and what would remove its error.
        current_c = 3 if name == "b2" else 0
        current_t = -25 if name == "b4" else -20
        assert int(d["current_rssi_correction"]) == current_c and int(d["current_tx_power"]) == current_t
        assert int(d["proposed_rssi_correction"]) == current_c + round(float(d["receiver_offset_db"]))
        assert int(d["proposed_tx_power"]) == current_t - round(float(d["transmitter_offset_db"]))
        assert d["calibration_confidence"] == "3"
    table = rows(out / "calibration.csv")
    assert [t["device"] for t in table] == sorted(rx) and all(t["oem"] == "gaend-trial" for t in table)
    assert (out / "calibration.md").read_text() == r.stdout


def dp3t_experiment(path: Path, seed: int, rx_err: dict, tx_err: dict):
    """DP-3T's result layout: every phone of one model hears every other at 1-5 m; the RSSI a
    phone reports carries its model's reception error, the packets its model's transmission
    error; every phone advertises -20 dBm as Android reports it."""
    rnd = random.Random(seed)
    phones = [(f"p{i}", model) for i, model in enumerate(sorted(rx_err) * 2)]
    lines = ["receiver_id,receiver_model,transmitter_id,transmitter_model,timestamp,rssi,tx_power,ground_truth_distance"]
    t = 1591005600000
    for rid, rmodel in phones:
        for tid, tmodel in phones:
            if rid == tid:
                continue
            d = rnd.choice([1, 1.5, 2, 3, 5])
            for _ in range(25):
                t += 1000
                attenuation = 45 + 18 * math.log10(d) + rx_err[rmodel] + tx_err[tmodel] + rnd.gauss(0, 3)
                # What the phone reports: the table's TX for its model is -30 in the test's table.
                rssi = round(-30 - attenuation)
                lines.append(f"{rid},{rmodel},{tid},{tmodel},{t},{rssi},-20,{d}")
    path.write_text("\n".join(lines) + "\n")


def test_dp3t_models_calibrated_by_the_proposed_table_need_nothing_more(bin_dir, tmp_path):
    rx_err = {"SM-G960F": 4.0, "Pixel 3a": -3.0, "iPhone 8": 0.0, "SM-A405FN": 6.0}
    tx_err = {"SM-G960F": -2.0, "Pixel 3a": 5.0, "iPhone 8": 0.0, "SM-A405FN": -4.0}
    results = tmp_path / "01_office.csv"
    dp3t_experiment(results, 5, rx_err, tx_err)
    # A first table that knows the models but has not measured them: every correction 0.
    first = tmp_path / "en-calibration-2020-08-12.csv"
    first.write_text("oem,device, model,rssi correction,tx,calibration confidence\n"
                     + "".join(f"x,{m},{m},0,-30,1\n" for m in rx_err))
    gaenctl(bin_dir, "trial", "import", "dp3t", results, "--calibration", first, "-o", tmp_path / "a.csv")
    gaenctl(bin_dir, "trial", "calibrate", "--by", "model", "--reference", "iPhone 8", tmp_path / "a.csv", "-o", tmp_path / "cal1")
    got = {d["device"]: d for d in rows(tmp_path / "cal1/offsets.csv")}
    for m in rx_err:
        assert abs(float(got[m]["receiver_offset_db"]) - rx_err[m]) < 1, got[m]
        assert abs(float(got[m]["transmitter_offset_db"]) - tx_err[m]) < 1, got[m]
    assert got["iPhone 8"]["note"] == "reference"
    # The proposed table, as the importer reads a published one (the file name carries its date).
    second = tmp_path / "en-calibration-2020-09-01.csv"
    second.write_text((tmp_path / "cal1/calibration.csv").read_text())
    gaenctl(bin_dir, "trial", "import", "dp3t", results, "--calibration", second, "-o", tmp_path / "b.csv")
    gaenctl(bin_dir, "trial", "calibrate", "--by", "model", "--reference", "iPhone 8", tmp_path / "b.csv", "-o", tmp_path / "cal2")
    for d in rows(tmp_path / "cal2/offsets.csv"):
        # Whole-dB table values: at most half a dB left, plus the estimate's own noise.
        assert abs(float(d["receiver_offset_db"])) < 0.8 and abs(float(d["transmitter_offset_db"])) < 0.8, d


def test_a_failed_run_writes_nothing(bin_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("receiver,transmitter,distance,attenuation\na,b,1,50\nb,a,1,oops\n")
    out = tmp_path / "out"
    r = gaenctl(bin_dir, "trial", "calibrate", bad, "-o", out, ok=False)
    assert r.returncode == 1 and "bad.csv" in r.stderr and "attenuation" in r.stderr, r.stderr
    assert not out.exists()
    r = gaenctl(bin_dir, "trial", "calibrate", "--by", "phone", bad, "-o", out, ok=False)
    assert r.returncode == 64 and "--by" in r.stderr
