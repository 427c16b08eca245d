"""Many boards (docs/trial.md): a simulated multi-board, multi-day trial in the daily layout
(one file per board per UTC day), `trial report` over those files, and the DuckDB recipe
(tools/duckdb/trial_report.sql) over the report's daily attenuation files and over their
Parquet copy: the same fit and detection table to the printed precision."""
import csv
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb", reason="the pip package duckdb (tools/requirements.txt) is not installed")

ROOT = Path(__file__).resolve().parents[2]

# The documented column types (docs/trial.md "Many boards").
SIGHTINGS_COLUMNS = ("{'time': 'DOUBLE', 'rpi': 'VARCHAR', 'aem': 'VARCHAR', 'rssi': 'INTEGER', 'scan_start': 'DOUBLE', "
                     "'scan_end': 'DOUBLE', 'rssi_correction': 'INTEGER', 'node': 'VARCHAR', 'site': 'VARCHAR', 'address': 'VARCHAR'}")
SIGHTINGS_JSON_COLUMNS = ("{'time': 'DOUBLE', 'rpi': 'VARCHAR', 'aem': 'VARCHAR', 'rssi': 'INTEGER', 'scanStart': 'DOUBLE', "
                          "'scanEnd': 'DOUBLE', 'rssiCorrection': 'INTEGER', 'node': 'VARCHAR', 'site': 'VARCHAR', 'address': 'VARCHAR'}")
ATTENUATION_COLUMNS = ("{'time': 'DOUBLE', 'receiver': 'VARCHAR', 'transmitter': 'VARCHAR', 'distance': 'DOUBLE', "
                       "'attenuation': 'DOUBLE', 'site': 'VARCHAR', 'rpi': 'VARCHAR', 'tx_power': 'INTEGER', 'rssi': 'INTEGER', "
                       "'rssi_correction': 'INTEGER'}")


def recipe(source, close="2", thresholds="[55, 63, 73]"):
    sql = (ROOT / "tools/duckdb/trial_report.sql").read_text()
    con = duckdb.connect()
    con.execute(sql.replace("{source}", source).replace("{close}", close).replace("{thresholds}", thresholds))
    cur = con.execute("SELECT * FROM fit")
    fit = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    return fit, con.execute("SELECT * FROM detection").fetchall()


def assert_matches_report(report, fit, detection):
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


def test_daily_layout_report_and_duckdb_recipe_agree(tmp_path):
    gaenctl = Path(os.environ["GAEND_BIN_DIR"]) / "gaenctl"
    sim = tmp_path / "boards"
    subprocess.run([gaenctl, "simulate", "--scenario", ROOT / "examples/scenarios/boards.json", "-o", sim, "--split", "daily"],
                   check=True, capture_output=True)
    # 6 boards over 2 days from noon: 3 UTC days each, board-f present on the middle day only.
    sightings = sorted(str(p) for p in (sim / "sightings").glob("board=*/day=*/sightings.csv"))
    assert len(sightings) == 5 * 3 + 1, sightings
    assert not list((sim / "sightings").glob("*.csv"))

    # DuckDB reads the sightings layout directly, board and day from the directories, every row
    # in its day's file.
    con = duckdb.connect()
    per_file = con.execute(
        f"SELECT board, day, node, count(*), min(time), max(time) FROM read_csv('{sim}/sightings/*/*/sightings.csv', "
        f"header = true, hive_partitioning = true, columns = {SIGHTINGS_COLUMNS}) GROUP BY ALL ORDER BY ALL").fetchall()
    assert len(per_file) == 16
    for board, day, node, _, first, last in per_file:
        assert board == node
        assert time.strftime("%Y-%m-%d", time.gmtime(first)) == time.strftime("%Y-%m-%d", time.gmtime(last)) == str(day)

    keys = sorted(str(p) for p in (sim / "keys").glob("*.json"))
    report = tmp_path / "report"
    t0 = time.monotonic()
    subprocess.run([gaenctl, "trial", "report", "--sightings", *sightings, "--keys", *keys, "--split", "daily",
                    "--markers", sim / "groundtruth/markers.csv", "--close-contact", "2", "-o", report], check=True, capture_output=True)
    report_seconds = time.monotonic() - t0
    report_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    attenuation = sorted((report / "attenuation").glob("board=*/day=*/attenuation.csv"))
    assert len(attenuation) == 16 and not (report / "attenuation.csv").exists()

    t0 = time.monotonic()
    fit, detection = recipe(f"read_csv('{report}/attenuation/*/*/attenuation.csv', header = true, union_by_name = true, all_varchar = true)")
    duckdb_seconds = time.monotonic() - t0
    assert_matches_report(report, fit, detection)

    # The documented Parquet copy (one file per board per day again), and the recipe over it.
    parquet = tmp_path / "parquet"
    duckdb.connect().execute(
        f"COPY (SELECT * FROM read_csv('{report}/attenuation/*/*/attenuation.csv', header = true, hive_partitioning = true, "
        f"columns = {ATTENUATION_COLUMNS})) TO '{parquet}' (FORMAT parquet, PARTITION_BY (board, day))")
    assert len(list(parquet.glob("board=*/day=*/*.parquet"))) == 16
    fit_p, detection_p = recipe(f"read_parquet('{parquet}/*/*/*.parquet', hive_partitioning = true)")
    assert_matches_report(report, fit_p, detection_p)

    # The daily attenuation files read back by trial report give the same report.
    again = tmp_path / "again"
    subprocess.run([gaenctl, "trial", "report", "--attenuations", *map(str, attenuation), "--close-contact", "2", "-o", again],
                   check=True, capture_output=True)
    assert (again / "fit.csv").read_text() == (report / "fit.csv").read_text()
    assert (again / "detection.csv").read_text() == (report / "detection.csv").read_text()
    # The same trial as JSON lines (the same seed gives the same rows): DuckDB reads that layout
    # too, and trial report over it gives the same fit and detection table.
    simj = tmp_path / "boards-jsonl"
    subprocess.run([gaenctl, "simulate", "--scenario", ROOT / "examples/scenarios/boards.json", "-o", simj, "--split", "daily",
                    "--format", "jsonl"], check=True, capture_output=True)
    jsonl = sorted(str(p) for p in (simj / "sightings").glob("board=*/day=*/sightings.jsonl"))
    assert len(jsonl) == 16
    per_file_json = duckdb.connect().execute(
        f"SELECT board, day, node, count(*), min(time), max(time) FROM read_json('{simj}/sightings/*/*/sightings.jsonl', "
        f"format = 'newline_delimited', hive_partitioning = true, columns = {SIGHTINGS_JSON_COLUMNS}) GROUP BY ALL ORDER BY ALL").fetchall()
    assert per_file_json == per_file
    reportj = tmp_path / "report-jsonl"
    subprocess.run([gaenctl, "trial", "report", "--sightings", *jsonl, "--keys", *keys, "--markers", simj / "groundtruth/markers.csv",
                    "--close-contact", "2", "-o", reportj], check=True, capture_output=True)
    for f in ("fit.csv", "detection.csv", "distances.csv", "detection_probability.csv"):
        assert (reportj / f).read_text() == (report / f).read_text(), f
    # Attenuation rows as daily JSON lines: the recipe over them agrees too, and they read back.
    reportjj = tmp_path / "report-jsonl-rows"
    subprocess.run([gaenctl, "trial", "report", "--sightings", *jsonl, "--keys", *keys, "--markers", simj / "groundtruth/markers.csv",
                    "--close-contact", "2", "--split", "daily", "--attenuation-format", "jsonl", "-o", reportjj], check=True, capture_output=True)
    rows_jsonl = sorted((reportjj / "attenuation").glob("board=*/day=*/attenuation.jsonl"))
    assert len(rows_jsonl) == 16
    fit_j, detection_j = recipe(f"read_json('{reportjj}/attenuation/*/*/attenuation.jsonl', format = 'newline_delimited')")
    assert_matches_report(report, fit_j, detection_j)
    back = tmp_path / "back-jsonl"
    subprocess.run([gaenctl, "trial", "report", "--attenuations", *map(str, rows_jsonl), "--close-contact", "2", "-o", back],
                   check=True, capture_output=True)
    assert (back / "fit.csv").read_text() == (report / "fit.csv").read_text()
    print(f"\ntrial report {report_seconds:.2f} s (max RSS of children {report_rss_kb} KB); duckdb recipe {duckdb_seconds:.2f} s "
          f"on {fit['count']} rows")
