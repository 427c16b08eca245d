"""The daily layout read by Spark with the schemas of docs/trial.md ("Many boards"): sightings
(CSV and JSON lines) and attenuation rows, board and day from the directories, and the fit of
trial report reproduced by Spark's regression aggregates to the printed precision. pyspark comes
from tools/requirements.txt and Java from Debian (scripts/setup.sh installs both): the test fails,
not skips, without them, so the Spark reading of the layout is proven by every run."""
import csv
import os
import shutil
import subprocess
from pathlib import Path

import pytest

assert shutil.which("java"), "no Java runtime for Spark: scripts/setup.sh installs default-jre-headless"
from pyspark.sql import SparkSession, functions as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SIGHTINGS = ("time DOUBLE, rpi STRING, aem STRING, rssi INT, scan_start DOUBLE, scan_end DOUBLE, rssi_correction INT, "
             "node STRING, site STRING, address STRING")
SIGHTINGS_JSON = ("time DOUBLE, rpi STRING, aem STRING, rssi INT, scanStart DOUBLE, scanEnd DOUBLE, rssiCorrection INT, "
                  "node STRING, site STRING, address STRING")
ATTENUATION = ("time DOUBLE, receiver STRING, transmitter STRING, distance DOUBLE, attenuation DOUBLE, site STRING, rpi STRING, "
               "tx_power INT, rssi INT, rssi_correction INT")


def test_spark_reads_the_daily_layout_with_the_documented_schemas(tmp_path):
    gaenctl = Path(os.environ["GAEND_BIN_DIR"]) / "gaenctl"
    sims = {}
    for fmt in ("csv", "jsonl"):
        sims[fmt] = tmp_path / fmt
        subprocess.run([gaenctl, "simulate", "--scenario", ROOT / "examples/scenarios/boards.json", "-o", sims[fmt],
                        "--split", "daily", "--format", fmt], check=True, capture_output=True)
    csvs = sorted(str(p) for p in (sims["csv"] / "sightings").glob("board=*/day=*/sightings.csv"))
    report = tmp_path / "report"
    subprocess.run([gaenctl, "trial", "report", "--sightings", *csvs, "--keys", *sorted(map(str, (sims["csv"] / "keys").glob("*.json"))),
                    "--markers", sims["csv"] / "groundtruth/markers.csv", "--split", "daily", "-o", report], check=True, capture_output=True)

    # The JVM writes into the test's folder only: its temporary files there, no hsperfdata_USER in
    # /tmp (the JVM puts that in /tmp whatever TMPDIR says), Spark's scratch space there.
    os.environ["JAVA_TOOL_OPTIONS"] = f"-XX:-UsePerfData -Djava.io.tmpdir={tmp_path}"
    spark = (SparkSession.builder.master("local[2]").appName("gaend-layout").config("spark.ui.enabled", "false")
             .config("spark.local.dir", str(tmp_path / "spark"))
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        s = spark.read.option("header", True).schema(SIGHTINGS).csv(str(sims["csv"] / "sightings"))
        assert s.columns[-2:] == ["board", "day"] and dict(s.dtypes)["day"] == "date"
        per_day = {(r["board"], str(r["day"])): r["count"] for r in s.groupBy("board", "day").count().collect()}
        assert len(per_day) == 16
        # Every row in its board's and day's file.
        assert s.filter((F.col("node") != F.col("board")) | (F.to_date(F.from_unixtime(F.col("time"))) != F.col("day"))).count() == 0
        j = spark.read.schema(SIGHTINGS_JSON).json(str(sims["jsonl"] / "sightings"))
        assert {(r["board"], str(r["day"])): r["count"] for r in j.groupBy("board", "day").count().collect()} == per_day

        a = spark.read.option("header", True).schema(ATTENUATION).csv(str(report / "attenuation"))
        x = a.withColumn("x", F.log10(F.greatest(F.col("distance"), F.lit(0.1))))
        got = x.agg(F.regr_intercept("attenuation", "x").alias("a"), F.regr_slope("attenuation", "x").alias("b"),
                    F.regr_r2("attenuation", "x").alias("r2"), F.count("*").alias("n")).collect()[0]
        want = {r["parameter"]: r["value"] for r in csv.DictReader(open(report / "fit.csv"))}
        assert f"{got['a']:.3f}" == want["attenuation_at_1m_db"] and f"{got['b']:.3f}" == want["slope_db_per_decade"]
        assert f"{got['r2']:.4f}" == want["r_squared"] and str(got["n"]) == want["count"]
    finally:
        spark.stop()
