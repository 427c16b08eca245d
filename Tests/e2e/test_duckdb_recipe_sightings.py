"""The DuckDB recipe from sightings (docs/trial.md): `gaenctl trial rpis` writes the keys' RPI
table, tools/duckdb/sightings_attenuation.sql joins the daily sightings with it and with the
markers, and its attenuation rows are trial report's attenuation rows, row for row; the fit and
detection table over them (tools/duckdb/trial_report.sql) are the report's."""
import csv
import os
import subprocess
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb", reason="the pip package duckdb (tools/requirements.txt) is not installed")

from test_duckdb_recipe import SIGHTINGS_COLUMNS, assert_matches_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RPIS_COLUMNS = ("{'rpi': 'VARCHAR', 'transmitter': 'VARCHAR', 'interval': 'BIGINT', 'match_from': 'BIGINT', 'match_to': 'BIGINT', "
                "'tx_power_mask': 'INTEGER', 'key_rolling_start': 'BIGINT', 'key_rolling_period': 'INTEGER'}")


def sightings_recipe(sightings, rpis, markers):
    """The documented recipe: the attenuation view, then the fit and detection table over it."""
    con = duckdb.connect()
    sql = (ROOT / "tools/duckdb/sightings_attenuation.sql").read_text()
    con.execute(sql.replace("{sightings}", f"read_csv('{sightings}', header = true, hive_partitioning = true, columns = {SIGHTINGS_COLUMNS})")
                .replace("{rpis}", f"read_csv('{rpis}', header = true, columns = {RPIS_COLUMNS})")
                .replace("{markers}", f"read_csv({[str(m) for m in markers]}, header = true, all_varchar = true, union_by_name = true)"))
    con.execute((ROOT / "tools/duckdb/trial_report.sql").read_text().replace("{source}", "attenuation")
                .replace("{close}", "2").replace("{thresholds}", "[55, 63, 73]"))
    cur = con.execute("SELECT * FROM fit")
    fit = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    return con, fit, con.execute("SELECT * FROM detection").fetchall()


def row_key(time, receiver, transmitter, distance, attenuation, rpi, tx_power, rssi, correction):
    return (round(float(time), 3), receiver, transmitter, float(distance), float(attenuation), rpi, int(tx_power), int(rssi), int(correction))


def test_recipe_from_sightings_gives_the_reports_rows(tmp_path):
    gaenctl = Path(os.environ["GAEND_BIN_DIR"]) / "gaenctl"
    sim = tmp_path / "boards"
    subprocess.run([gaenctl, "simulate", "--scenario", ROOT / "examples/scenarios/boards.json", "-o", sim, "--split", "daily"],
                   check=True, capture_output=True)
    keys = sorted(str(p) for p in (sim / "keys").glob("*.json"))
    rpis = tmp_path / "rpis.csv"
    subprocess.run([gaenctl, "trial", "rpis", "--keys", *keys, "-o", rpis], check=True, capture_output=True)
    table = {r["rpi"]: r for r in csv.DictReader(open(rpis))}
    assert len(table) == sum(1 for _ in open(rpis)) - 1 > 1000

    # Rows made from a board's sightings, as a board "extra" without a node column value: 12
    # intervals late (matched), 13 late (not), a TX power made implausible (127, left out), and
    # as they are; markers of every pair give "extra"'s pairs a distance (1.5 m, then unknown).
    source = sorted((sim / "sightings").glob("board=board-a/day=*/sightings.csv"))[1]
    rows = [r for r in csv.DictReader(open(source)) if r["rpi"]][:1200]
    extra_rows = []
    for i, r in enumerate(rows):
        r = dict(r, node="")
        kind = i % 4
        if kind == 0:
            r["time"] = f"{float(r['time']) + 12 * 600:.3f}"
        elif kind == 1:
            r["time"] = f"{float(r['time']) + 13 * 600:.3f}"
        elif kind == 2:
            b = int(table[r["rpi"]]["tx_power_mask"]) ^ 0x7F
            r["aem"] = r["aem"][:2] + f"{b:02x}" + r["aem"][4:]
        extra_rows.append(r)
    extra = sim / "sightings" / "board=extra" / source.parent.name / "sightings.csv"
    extra.parent.mkdir(parents=True)
    with open(extra, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(extra_rows)
    everyone = tmp_path / "everyone.csv"
    last = max(float(r["time"]) for r in extra_rows)
    everyone.write_text(f"time,label,distance,note,receiver,transmitter\n0,start,1.5,,,\n{last - 3600},away,,,,\n")
    markers = [sim / "groundtruth/markers.csv", everyone]

    sightings = sorted(str(p) for p in (sim / "sightings").glob("board=*/day=*/sightings.csv"))
    report = tmp_path / "report"
    subprocess.run([gaenctl, "trial", "report", "--sightings", *sightings, "--keys", *keys, "--split", "daily",
                    "--markers", *map(str, markers), "--close-contact", "2", "-o", report], check=True, capture_output=True)
    want = []
    for f in sorted((report / "attenuation").glob("board=*/day=*/attenuation.csv")):
        for r in csv.DictReader(open(f)):
            want.append(row_key(r["time"], r["receiver"], r["transmitter"], r["distance"], r["attenuation"], r["rpi"],
                                r["tx_power"], r["rssi"], r["rssi_correction"]))

    con, fit, detection = sightings_recipe(f"{sim}/sightings/*/*/sightings.csv", rpis, markers)
    got = [row_key(*r) for r in con.execute("SELECT * FROM attenuation").fetchall()]
    assert sorted(got) == sorted(want)
    # The fixture exercises what it claims: extra's rows 12 intervals late are in, 13 late and
    # the implausible ones are not, and the markers of every pair end its ground truth.
    extra_got = [r for r in got if r[1] == "extra"]
    assert 0 < len(extra_got) < len(extra_rows) / 2
    late = {round(float(r["time"]), 3) for i, r in enumerate(extra_rows) if i % 4 == 0}
    too_late = {round(float(r["time"]), 3) for i, r in enumerate(extra_rows) if i % 4 == 1}
    implausible = {(round(float(r["time"]), 3), r["rpi"]) for i, r in enumerate(extra_rows) if i % 4 == 2}
    assert any(r[0] in late for r in extra_got) and not any(r[0] in too_late for r in extra_got)
    assert not any((r[0], r[5]) in implausible for r in extra_got)
    assert all(r[0] < last - 3600 and r[3] == 1.5 for r in extra_got)
    assert_matches_report(report, fit, detection)
