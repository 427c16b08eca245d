#!/usr/bin/env bash
# Idle cost of one node on the nominal schedule (random 210-300 s scans of 4 s, rotation every
# 10-20 min): runs gaend against a virtual controller with --time-scale SCALE for one nominal
# hour and prints the daemon's CPU seconds for that hour and its resident memory.
#   scripts/measure-idle.sh [SCALE]      (default 30: one nominal hour in two real minutes)
# It measures the binary users install: `make build`'s (static Swift runtime, the Makefile's
# link flags). GAEND_BIN=PATH measures another binary instead (no build); GAEND_WRAP runs it
# under a tool (scripts/gen-link-order.sh: callgrind). SCRATCH=DIR builds in that build folder
# (the Makefile's; default .build), e.g. .build-release beside a debug build in use.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-30}
./scripts/setup.sh
if [ -z "${GAEND_BIN:-}" ]; then
    make --no-print-directory build >&2
    GAEND_BIN=$PWD/${SCRATCH:-.build}/release/gaend
fi
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
${GAEND_WRAP:-} "$GAEND_BIN" --controller "$CONTROLLER" --state-dir "$WORK/state" --store-key-file "$WORK/store.key" \
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
# The binary's own resident pages by ELF section (code, read-only data, relocations...): what
# link options and the link order change. Needs /proc/PID/pagemap (root).
python3 - "$GAEND" "$GAEND_BIN" <<'PY' || true
import collections, os, re, struct, subprocess, sys
pid, path = sys.argv[1], os.path.realpath(sys.argv[2])
sections = []
for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m and m.group(2) != "NOBITS" and int(m.group(3), 16):
        sections.append((int(m.group(3), 16), int(m.group(4), 16), m.group(1)))
sections.sort()
maps = []
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[5] == path:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, int(f[2], 16)))
bias = min(lo - off for lo, hi, off in maps)
pages = collections.Counter()
with open(f"/proc/{pid}/pagemap", "rb") as pm:
    for lo, hi, off in maps:
        for v in range(lo, hi, 4096):
            pm.seek(v // 4096 * 8)
            if struct.unpack("Q", pm.read(8))[0] >> 63:
                a = v - bias
                name = next((n for s, z, n in sections if s <= a < s + z), "other")
                pages[name] += 1
top = ", ".join(f"{n} {c * 4 / 1024:.1f}" for n, c in pages.most_common(8))
print(f"gaend binary resident by section (MiB): {top}")
PY
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$GAEND/status")
python3 - "$c0" "$c1" "$ticks" "$rss" "$hwm" "$SCALE" <<'PY'
import sys
c0, c1, ticks, rss, hwm, scale = map(float, sys.argv[1:])
print(f"one nominal hour at --time-scale {scale:g}: gaend used {(c1 - c0) / ticks:.2f} CPU seconds; "
      f"resident {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB)")
PY
