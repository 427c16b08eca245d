#!/usr/bin/env bash
# Idle cost of one node on the nominal schedule (random 210-300 s scans of 4 s, rotation every
# 10-20 min): runs gaend against a virtual controller with --time-scale SCALE for one nominal
# hour and prints the daemon's CPU seconds for that hour and its resident memory.
#   scripts/measure-idle.sh [SCALE]      (default 30: one nominal hour in two real minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-30}
./scripts/setup.sh
swift build -c release --product gaend >&2
BIN=$(swift build -c release --show-bin-path)
WORK=$(mktemp -d -t gaend-idle.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
python3 tools/virtual-radio/vradio.py --device "name=a,transport=tcp-server:127.0.0.1:0" \
    --ready-file "$WORK/vradio.json" >/dev/null 2>"$WORK/vradio.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/vradio.json" ] && break; sleep 0.1; done
CONTROLLER=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"]["a"]["connect"])' "$WORK/vradio.json")
dbus-daemon --session --address="unix:path=$WORK/bus" --nofork --nopidfile 2>/dev/null &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$WORK/bus" ] && break; sleep 0.1; done
(umask 077; openssl rand -hex 32 > "$WORK/store.key")
mkdir -p "$WORK/state"
"$BIN/gaend" --controller "$CONTROLLER" --state-dir "$WORK/state" --store-key-file "$WORK/store.key" \
    --bus "unix:path=$WORK/bus" --time-scale "$SCALE" 2>"$WORK/gaend.log" &
GAEND=$!
PIDS+=($GAEND)
sleep 5   # start-up is not idle cost
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$GAEND/stat"; }
c0=$(cpu)
seconds=$(python3 -c "print(3600 / $SCALE)")
sleep "$seconds"
c1=$(cpu)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$GAEND/status")
# Where the resident memory is: private vs shared, and the largest mappings by file (what a
# smaller daemon has to shed: Foundation, ICU, the Swift runtime...).
awk '/^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):/ {printf "%s %.1f MiB  ", $1, $2 / 1024} END {print ""}' "/proc/$GAEND/smaps_rollup"
awk '/^[0-9a-f]+-[0-9a-f]+ / {name = (NF >= 6 ? $6 : "[anon]")} /^Rss:/ {rss[name] += $2} END {for (n in rss) printf "%8.1f MiB  %s\n", rss[n] / 1024, n}' \
    "/proc/$GAEND/smaps" | sort -rn | head -12
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$GAEND/status")
python3 - "$c0" "$c1" "$ticks" "$rss" "$hwm" "$SCALE" <<'PY'
import sys
c0, c1, ticks, rss, hwm, scale = map(float, sys.argv[1:])
print(f"one nominal hour at --time-scale {scale:g}: gaend used {(c1 - c0) / ticks:.2f} CPU seconds; "
      f"resident {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB)")
PY
