#!/usr/bin/env python3
"""The DuckDB recipe from sightings (docs/trial.md) in one command, with Python's duckdb:
tools/duckdb/sightings_attenuation.sql over the sightings, the RPI table of `gaenctl trial
rpis` and the markers, the rows kept in a table (and written with --rows), then
tools/duckdb/trial_report.sql's fit and detection table over them. Prints each phase's time.

    tools/duckdb/sightings_report.py --sightings 'DIR/sightings/*/*/sightings.csv' --rpis rpis.csv \\
        --markers DIR/groundtruth/markers.csv [--rows OUT.csv] [--close 2] [--thresholds 55,63,73]
"""
import argparse
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
SIGHTINGS_COLUMNS = ("{'time': 'DOUBLE', 'rpi': 'VARCHAR', 'aem': 'VARCHAR', 'rssi': 'INTEGER', 'scan_start': 'DOUBLE', "
                     "'scan_end': 'DOUBLE', 'rssi_correction': 'INTEGER', 'node': 'VARCHAR', 'site': 'VARCHAR', 'address': 'VARCHAR'}")
RPIS_COLUMNS = ("{'rpi': 'VARCHAR', 'transmitter': 'VARCHAR', 'interval': 'BIGINT', 'match_from': 'BIGINT', 'match_to': 'BIGINT', "
                "'tx_power_mask': 'INTEGER', 'key_rolling_start': 'BIGINT', 'key_rolling_period': 'INTEGER'}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sightings", required=True, help="glob of the daily sightings CSVs (board=<node>/day=<day>/sightings.csv)")
    p.add_argument("--rpis", required=True, help="gaenctl trial rpis output")
    p.add_argument("--markers", required=True, nargs="+", help="markers CSVs (time,label,distance,...,receiver,transmitter)")
    p.add_argument("--rows", help="write the attenuation rows here (CSV)")
    p.add_argument("--close", default="2")
    p.add_argument("--thresholds", default="55,63,73")
    a = p.parse_args()
    markers = ", ".join(f"'{m}'" for m in a.markers)
    sql = ((HERE / "sightings_attenuation.sql").read_text()
           .replace("{sightings}", f"read_csv('{a.sightings}', header = true, hive_partitioning = true, columns = {SIGHTINGS_COLUMNS})")
           .replace("{rpis}", f"read_csv('{a.rpis}', header = true, columns = {RPIS_COLUMNS})")
           .replace("{markers}", f"read_csv([{markers}], header = true, all_varchar = true, union_by_name = true)"))
    con = duckdb.connect()
    t0 = time.monotonic()
    con.execute(sql)
    # Kept once: the fit and the detection table both read the rows.
    con.execute("CREATE TEMP TABLE rows AS SELECT * FROM attenuation")
    t1 = time.monotonic()
    print(f"sightings to attenuation: {con.execute('SELECT count(*) FROM rows').fetchone()[0]} rows, {t1 - t0:.1f} s")
    if a.rows:
        con.execute(f"COPY rows TO '{a.rows}' (HEADER)")
        print(f"rows written to {a.rows}: {time.monotonic() - t1:.1f} s")
    t2 = time.monotonic()
    con.execute((HERE / "trial_report.sql").read_text().replace("{source}", "rows").replace("{close}", a.close)
                .replace("{thresholds}", "[" + a.thresholds + "]"))
    cur = con.execute("SELECT * FROM fit")
    print("fit:", dict(zip([d[0] for d in cur.description], cur.fetchone())))
    for r in con.execute("SELECT * FROM detection").fetchall():
        print("detection:", r)
    print(f"fit and detection: {time.monotonic() - t2:.1f} s")


if __name__ == "__main__":
    main()
