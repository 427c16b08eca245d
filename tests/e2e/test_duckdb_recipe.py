"""The DuckDB recipe of docs/trial.md (tools/duckdb/trial_report.sql) against `gaenctl trial report`
on a simulated multi-board trial: the same fit and detection table to the printed precision."""
import csv
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb", reason="the pip package duckdb (tools/requirements.txt) is not installed")

ROOT = Path(__file__).resolve().parents[2]


def test_duckdb_recipe_reproduces_fit_and_detection(tmp_path):
    gaenctl = Path(os.environ["GAEND_BIN_DIR"]) / "gaenctl"
    sim = tmp_path / "office"
    subprocess.run([gaenctl, "simulate", "--scenario", ROOT / "examples/scenarios/office.json", "-o", sim], check=True,
                   capture_output=True)
    sightings = sorted(str(p) for p in (sim / "sightings").glob("*.csv"))
    keys = sorted(str(p) for p in (sim / "keys").glob("*.json"))
    assert len(sightings) > 3  # several boards
    report = tmp_path / "report"
    t0 = time.monotonic()
    subprocess.run([gaenctl, "trial", "report", "--sightings", *sightings, "--keys", *keys,
                    "--markers", sim / "groundtruth/markers.csv", "--close-contact", "2", "-o", report], check=True, capture_output=True)
    report_seconds = time.monotonic() - t0
    report_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    sql = (ROOT / "tools/duckdb/trial_report.sql").read_text()
    sql = sql.replace("{files}", "'" + str(report / "attenuation.csv") + "'").replace("{close}", "2").replace("{thresholds}", "[55, 63, 73]")
    t0 = time.monotonic()
    con = duckdb.connect()
    con.execute(sql)
    fit = dict(zip([d[0] for d in con.execute("SELECT * FROM fit").description], con.execute("SELECT * FROM fit").fetchone()))
    detection = con.execute("SELECT * FROM detection").fetchall()
    duckdb_seconds = time.monotonic() - t0

    want = {r["parameter"]: r["value"] for r in csv.DictReader(open(report / "fit.csv"))}
    for name, decimals in [("attenuation_at_1m_db", 3), ("slope_db_per_decade", 3), ("sigma_db", 3), ("r_squared", 4)]:
        assert f"{fit[name]:.{decimals}f}" == want[name], name
    assert str(fit["count"]) == want["count"]
    rows = list(csv.DictReader(open(report / "detection.csv")))
    assert len(rows) == len(detection) == 3
    for got, r in zip(detection, rows):
        assert float(r["threshold_db"]) == got[0]
        assert (int(r["close"]), int(r["far"]), int(r["true_positives"]), int(r["false_positives"])) == got[1:5]
        for value, column in zip(got[5:8], ["true_positive_rate", "false_positive_rate", "precision"]):
            assert (f"{value:.4f}" if value is not None else "") == r[column], column
    print(f"\ntrial report {report_seconds:.2f} s (max RSS of children {report_rss_kb} KB); duckdb recipe {duckdb_seconds:.2f} s "
          f"on {fit['count']} rows")
