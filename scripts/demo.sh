#!/usr/bin/env bash
# The main job on a fresh machine with no Bluetooth hardware: two gaend nodes on the virtual
# radio, 1.5 m apart, see each other for about a minute (20 node minutes with
# --time-scale 20); node A's keys (today's included: --trial) are exported, signed, and
# provided to node B over D-Bus; B's exposure windows and attenuations are printed.
# Everything lives in a temporary directory that is removed at the end, unless --keep is
# given: then the key file, windows, logs and both nodes' stores stay there.
# Usage: scripts/demo.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
KEEP=0
for arg in "$@"; do
    case $arg in
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo: unknown argument '$arg' (usage: scripts/demo.sh [--keep])" >&2; exit 64 ;;
    esac
done
./scripts/setup.sh
ROOT=$(pwd)

SECONDS_TOGETHER=${DEMO_SECONDS:-60}
SCALE=${DEMO_TIME_SCALE:-20}
DISTANCE=1.5
TX_POWER=-20   # both controllers transmit at -20 dBm; the AEM carries the same calibrated power

echo "== building gaend and gaenctl" >&2
swift build --product gaend >&2
swift build --product gaenctl >&2
BIN=$(swift build --show-bin-path)

WORK=$(mktemp -d -t gaend-demo.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ $KEEP = 1 ]; then
        echo "== kept: $WORK (key file, windows, logs, both nodes' state)"
    else
        rm -rf "$WORK"
        echo "== removed $WORK (scripts/demo.sh --keep keeps it)"
    fi
}
trap cleanup EXIT INT TERM

echo "== virtual radio: node A at 0 m, node B at $DISTANCE m, both $TX_POWER dBm (free-space channel)"
python3 tools/virtual-radio/vradio.py \
    --device "name=a,transport=tcp-server:127.0.0.1:0,x=0,tx_power=$TX_POWER" \
    --device "name=b,transport=tcp-server:127.0.0.1:0,x=$DISTANCE,tx_power=$TX_POWER" \
    --control "unix:$WORK/vradio.sock" --ready-file "$WORK/vradio.json" 2>"$WORK/vradio.log" >/dev/null &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/vradio.json" ] && break; sleep 0.1; done
[ -s "$WORK/vradio.json" ] || { echo "demo: the virtual radio did not start:" >&2; cat "$WORK/vradio.log" >&2; exit 1; }
connect() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][sys.argv[2]]["connect"])' "$WORK/vradio.json" "$1"; }

# One private bus for both nodes, as on a board with two controllers: each node owns its own
# name there (org.gaend.a, org.gaend.b) and gaenctl picks one with --name.
BUS="unix:path=$WORK/demo.bus"
start_bus() {
    dbus-daemon --session --address="$BUS" --nofork --nopidfile 2>"$WORK/dbus.log" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -S "$WORK/demo.bus" ] && return; sleep 0.1; done
    echo "demo: dbus-daemon did not start" >&2; exit 1
}

start_node() {
    local n=$1
    mkdir -p "$WORK/$n"
    (umask 077; openssl rand -hex 32 > "$WORK/$n.key")
    cat > "$WORK/$n.conf" <<EOF
# Demo: a 4 s scan every 60 s of node time, so a minute of real time at --time-scale 20
# holds 20 scans. A 4 s scan lasts 0.2 s of real time, so the advertising interval is
# scaled down too (the controller's minimum, 20 ms: about 8 advertisements per scan, as
# many as a phone's 200-270 ms interval gives in 2 s). The AEM carries the real TX power.
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: fixed
  duration_seconds: 4
  fixed_period_seconds: 60
calibration:
  tx_power: $TX_POWER
research:
  node: "$n"
  site: demo
EOF
    "$BIN/gaend" --config "$WORK/$n.conf" --controller "$(connect "$n")" --state-dir "$WORK/$n" \
        --store-key-file "$WORK/$n.key" --bus "$BUS" --bus-name "org.gaend.$n" --trial --time-scale "$SCALE" \
        "${@:2}" 2>"$WORK/$n.log" &
    PIDS+=($!)
}

echo "== signing key of the demo health authority"
openssl ecparam -name prime256v1 -genkey -noout -out "$WORK/ha.pem" 2>/dev/null
openssl ec -in "$WORK/ha.pem" -pubout -out "$WORK/ha.pub.pem" 2>/dev/null

start_bus
start_node a
start_node b --trust "demo-ha:1=$WORK/ha.pub.pem"
A=(--bus "$BUS" --name org.gaend.a)
B=(--bus "$BUS" --name org.gaend.b)
for n in a b; do
    up=0
    for _ in $(seq 100); do "$BIN/gaenctl" --bus "$BUS" --name "org.gaend.$n" status >/dev/null 2>&1 && { up=1; break; }; sleep 0.2; done
    [ $up = 1 ] || { echo "demo: node $n did not start:" >&2; tail -20 "$WORK/$n.log" >&2; exit 1; }
done

STARTED=$(date +%s)
echo "== the nodes see each other for $SECONDS_TOGETHER s (x$SCALE: $((SECONDS_TOGETHER * SCALE / 60)) simulated minutes)"
echo "   node time runs $SCALE times faster from each node's start, so the times the nodes print are ahead of this machine's clock"
sleep "$SECONDS_TOGETHER"
echo "-- node A"; "$BIN/gaenctl" "${A[@]}" status
echo "-- node B"; "$BIN/gaenctl" "${B[@]}" status

echo "== node A's keys (trial mode: today's key too), signed as demo-ha:1"
"$BIN/gaenctl" "${A[@]}" keys history
"$BIN/gaenctl" "${A[@]}" keys history -o "$WORK/a-keys.zip" --signing-key "$WORK/ha.pem" --key-id demo-ha --key-version 1

echo "   (the file above stays only with --keep)"
echo "== provided to node B"
"$BIN/gaenctl" "${B[@]}" keys provide "$WORK/a-keys.zip"

echo "== node B's exposure windows (free-space model: attenuation at $DISTANCE m is about $(python3 -c "import math; print(round(40 + 20*math.log10($DISTANCE), 1))") dB)"
"$BIN/gaenctl" "${B[@]}" windows
"$BIN/gaenctl" "${B[@]}" windows --json > "$WORK/windows.json"
TOGETHER=$(( ($(date +%s) - STARTED) * SCALE / 60 ))
python3 - "$WORK/windows.json" "$TOGETHER" "$SECONDS_TOGETHER" <<'EOF'
import json, sys
ws = json.load(open(sys.argv[1]))
together, planned = int(sys.argv[2]), int(sys.argv[3])
scans = [s for w in ws for s in w["scanInstances"]]
if not scans:
    sys.exit("demo: node B found no exposure windows")
typ = [s["typicalAttenuationDb"] for s in scans]
minutes = sum(s['secondsSinceLastScan'] for s in scans) / 60
print(f"{len(ws)} window(s), {len(scans)} scan instances, typical attenuation {min(typ)}..{max(typ)} dB, "
      f"{minutes:.0f} minutes of exposure")
# More exposure than the planned wait: the nodes were also together while they started and
# while the keys were exported and matched, and the framework credits each scan with the time
# since the previous one.
print(f"(the nodes were together about {together} node minutes, start-up and key export included, "
      f"not only the {planned} s wait; each scan counts the time since the one before it)")
EOF
