#!/bin/bash
# Issue 32's figures (docs/trial.md, "Sightings on every core"): the 50-board, 14-day hall
# simulated, then trial report over its sightings and the DuckDB recipe from the same
# sightings, one after another, each under /usr/bin/time. Release build first:
#   swift build -c release --product gaenctl
# Usage: scripts/trial-scale-bench.sh [WORKDIR]   (about 7 GB; default /tmp/trial-scale)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=$ROOT/.build/release/gaenctl
T=${1:-/tmp/trial-scale}
TIME='%e s wall, %U s user, %S s sys, %M KB maxrss'
rm -rf "$T/sim" "$T/report" "$T/duck-rows.csv"; mkdir -p "$T"
echo "uptime: $(uptime)"
echo "== gaenctl simulate"
/usr/bin/time -f "$TIME" "$G" simulate --scenario "$ROOT/examples/scenarios/hall-14d.json" -o "$T/sim" --split daily
echo "== gaenctl trial rpis"
/usr/bin/time -f "$TIME" "$G" trial rpis --keys "$T"/sim/keys/*.json -o "$T/rpis.csv"
echo "uptime: $(uptime)"
echo "== gaenctl trial report (sightings to attenuation rows, and the report)"
# shellcheck disable=SC2046 # one argument per file
/usr/bin/time -f "$TIME" "$G" trial report --sightings $(find "$T/sim/sightings" -name sightings.csv | sort) \
    --keys "$T"/sim/keys/*.json --markers "$T/sim/groundtruth/markers.csv" --split daily -o "$T/report"
echo "uptime: $(uptime)"
echo "== DuckDB recipe from sightings"
/usr/bin/time -f "$TIME" python3 "$ROOT/tools/duckdb/sightings_report.py" --sightings "$T/sim/sightings/*/*/sightings.csv" \
    --rpis "$T/rpis.csv" --markers "$T/sim/groundtruth/markers.csv" --rows "$T/duck-rows.csv"
echo "uptime: $(uptime)"
cat "$T/report/fit.csv"
