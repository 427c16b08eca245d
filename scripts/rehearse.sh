#!/usr/bin/env bash
# A trial's whole loop rehearsed in compressed time on this machine (loopback, no hardware, no
# libfaketime): one inventory of three boards, `gaenctl trial provision`, the server (nginx from
# the provisioned site with TLS from a private CA, the publisher every 2 s), three gaend nodes on
# the virtual radio (A and B 1 m apart, C 100 m away), each board's app run every trial hour as
# gaend-app@.timer does (A alone consents to upload: it is the positive board), node_exporter,
# Prometheus and Alertmanager from the provisioned configuration with a webhook of the script's
# own, collection of the closed days and `gaenctl trial report`. Every process reads one trial
# clock (docs/runbook.md, "Rehearsal"): x240, a trial day in 6 real minutes, from day 1 20:00
# to day 2 04:30 UTC in about 2 1/2 minutes after the build. It prints what happened with the
# trial's day and time, and exits 1 at the first step not as expected: GaendOffAir fires for C
# (stopped a while, then restarted on the same clock) and resolves; A's key of day 1 is published
# in the hour 02:00-03:00 of day 2, not before; B turns high, C does not; day 1 of every board is
# collected and complete. It writes only into its own work folder (mktemp, under $TMPDIR),
# removed at the end unless --keep; every process it started is stopped on exit or interrupt.
# Usage: scripts/rehearse.sh [--keep] [--no-build]
#   --no-build: the binaries of an earlier build (GAEND_BIN_DIR, else .build/debug)
#   REHEARSAL_SCALE: the trial clock's scale (240; 60...1000)
set -euo pipefail
cd "$(dirname "$0")/.."
KEEP=0
BUILD=1
for arg in "$@"; do
    case $arg in
        --keep) KEEP=1 ;;
        --no-build) BUILD=0 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "rehearse: unknown argument '$arg' (usage: scripts/rehearse.sh [--keep] [--no-build])" >&2; exit 64 ;;
    esac
done
ROOT=$(pwd)
SCALE=${REHEARSAL_SCALE:-240}
case $SCALE in ''|*[!0-9]*) echo "rehearse: REHEARSAL_SCALE must be a whole number (60...1000), got '$SCALE'" >&2; exit 64 ;; esac
if [ "$SCALE" -lt 60 ] || [ "$SCALE" -gt 1000 ]; then echo "rehearse: REHEARSAL_SCALE must be 60...1000, got $SCALE" >&2; exit 64; fi
TX_POWER=-20
# Free space, 40 dB at 1 m: A and B hear each other at -60 dBm, C (100 m) is 80 dB away, below
# every receiver's sensitivity: out of range, as a board in another ward.
SENSITIVITY=-95

if [ $BUILD = 1 ]; then
    ./scripts/setup.sh
    echo "== building gaend and gaenctl" >&2
    swift build --product gaend >&2
    swift build --product gaenctl >&2
    BIN=$(swift build --show-bin-path)
else
    BIN=${GAEND_BIN_DIR:-$ROOT/.build/debug}
fi
for p in nginx prometheus prometheus-node-exporter; do
    command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || { echo "rehearse: $p is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
ALERTMANAGER=$(command -v prometheus-alertmanager || command -v alertmanager) \
    || { echo "rehearse: prometheus-alertmanager is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

WORK=$(mktemp -d -t gaend-rehearse.XXXXXX)
PIDS=()
NODE_PIDS=()
STATUS=1
cleanup() {
    trap - EXIT INT TERM
    # The loops first (and the command each is running: their children), then the servers.
    for pid in "${PIDS[@]}" "${NODE_PIDS[@]}"; do
        [ -n "$pid" ] || continue
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}" "${NODE_PIDS[@]}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
    if [ $KEEP = 1 ]; then
        echo "== kept: $WORK (inventory, trial-config, logs, nodes' state, collected days, report)"
    else
        rm -rf "$WORK"
        echo "== removed $WORK (scripts/rehearse.sh --keep keeps it)"
    fi
    exit $STATUS
}
trap cleanup EXIT
trap 'echo "rehearse: interrupted" >&2; STATUS=130; exit 130' INT TERM
trap 'echo "rehearse: FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
echo "== work folder: $WORK"
START_WALL=$SECONDS

fail() {
    echo "$( [ -n "${R0:-}" ] && stamp) FAILED: $*" >&2
    exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- the server's secrets: a private CA and its server certificate, the publisher's key ----
mkdir -p "$WORK/ca" "$WORK/server"
(
    cd "$WORK/ca"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=gaend rehearsal CA"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
    echo "subjectAltName=IP:127.0.0.1" > ext.cnf
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf
    openssl ecparam -name prime256v1 -genkey -noout -out "$WORK/server/signing-key.pem"
    openssl ec -in "$WORK/server/signing-key.pem" -pubout -out trial-key.pem
) >"$WORK/ca/openssl.log" 2>&1 || { cat "$WORK/ca/openssl.log" >&2; fail "openssl could not make the CA and keys"; }
chmod 600 "$WORK/server/signing-key.pem"
cp examples/trial/app-config.json "$WORK/server/app-config.json"

NGINX_PORT=$(free_port); AM_PORT=$(free_port); PROM_PORT=$(free_port); HOOK_PORT=$(free_port)
declare -A NE_PORT SITE CONSENT
BOARDS=(A B C)
for b in "${BOARDS[@]}"; do NE_PORT[$b]=$(free_port); done
SITE=([A]="ward 1" [B]="ward 1" [C]="ward 2")
CONSENT=([A]=yes [B]=no [C]=no)

# ---- the inventory and its provisioning ----
cat > "$WORK/inventory.yml" <<EOF
# The rehearsal's trial (scripts/rehearse.sh): three boards on this machine's loopback.
trial: rehearsal
time_zone: UTC
scrape_interval: 1s
server:
  name: 127.0.0.1
  url: https://127.0.0.1:$NGINX_PORT
  ca: ca/ca.pem
  trust_key: ca/trial-key.pem
  tls_certificate: $WORK/ca/server.pem
  tls_key: $WORK/ca/server.key
  country: DE
  key_id: TRIAL
  key_version: 1
  min_keys: 1
  app_config: $WORK/server/app-config.json
alerting:
  webhook: http://127.0.0.1:$HOOK_PORT/hook
  alertmanager: 127.0.0.1:$AM_PORT
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
# Every participant agreed to give their keys and app outcomes at the end: the report then judges
# each board's notification against the placement plan (x, y in metres).
defaults:
  outcomes_consent: yes
boards:
  - {name: A, site: "${SITE[A]}", position: "bed 1, 0 m", x: 0, y: 0, consent: ${CONSENT[A]}, host: 127.0.0.1, metrics_port: ${NE_PORT[A]}}
  - {name: B, site: "${SITE[B]}", position: "bed 2, 1 m from A", x: 1, y: 0, consent: ${CONSENT[B]}, host: 127.0.0.1, metrics_port: ${NE_PORT[B]}}
  - {name: C, site: "${SITE[C]}", position: "100 m from A", x: 100, y: 0, consent: ${CONSENT[C]}, host: 127.0.0.1, metrics_port: ${NE_PORT[C]}}
EOF
"$BIN/gaenctl" trial provision "$WORK/inventory.yml" --out "$WORK/trial-config" --deploy "$ROOT/deploy" > "$WORK/provision.log" 2>&1 \
    || { cat "$WORK/provision.log" >&2; fail "gaenctl trial provision"; }
CONFIG=$WORK/trial-config
echo "== provisioned: $(tail -1 "$WORK/provision.log")"

# ---- the server: nginx from the provisioned site, under a prefix of the work folder ----
SRV=$WORK/server/srv
NGX=$WORK/server/nginx
mkdir -p "$NGX/logs" "$NGX/tmp" "$SRV/inbox" "$SRV/www/keys" "$SRV/upload-tmp" "$SRV/collect"
cp -r "$CONFIG/server/nginx" "$NGX/gaend-trial"
moved() { sed -e "s#/var/lib/gaend-trial#$SRV#g" -e "s#/etc/nginx/gaend-trial#$NGX/gaend-trial#g" "$@"; }
moved "$CONFIG/server/nginx/gaend-trial.conf" | awk -v port="$NGINX_PORT" '
    /^[ \t]*listen / { if ($0 ~ /\[::\]/) next; print "    listen 127.0.0.1:" port " ssl;"; next } { print }' > "$NGX/gaend-trial/gaend-trial.conf"
for f in "$CONFIG"/server/nginx/locations/*.conf; do moved "$f" > "$NGX/gaend-trial/locations/$(basename "$f")"; done
{
    [ "$(id -u)" = 0 ] && echo "user root;"
    cat <<EOF
worker_processes 1;
pid $NGX/nginx.pid;
error_log $NGX/logs/error.log info;
events { worker_connections 64; }
http {
    access_log $NGX/logs/access.log;
    client_body_temp_path $NGX/tmp/body;
    proxy_temp_path $NGX/tmp/proxy;
    fastcgi_temp_path $NGX/tmp/fastcgi;
    uwsgi_temp_path $NGX/tmp/uwsgi;
    scgi_temp_path $NGX/tmp/scgi;
    include $NGX/gaend-trial/gaend-trial.conf;
}
EOF
} > "$NGX/nginx.conf"
"$NGINX" -p "$NGX" -c "$NGX/nginx.conf" -t > "$NGX/logs/check.log" 2>&1 || { cat "$NGX/logs/check.log" >&2; fail "nginx -t refused the provisioned site"; }
"$NGINX" -p "$NGX" -c "$NGX/nginx.conf" -g "daemon off;" >/dev/null 2>"$NGX/logs/stderr.log" &
PIDS+=($!)
SERVER=https://127.0.0.1:$NGINX_PORT
nginx_up() { curl -s -o /dev/null --cacert "$WORK/ca/ca.pem" "$SERVER/keys/"; }
for _ in $(seq 100); do nginx_up && break; sleep 0.1; done
nginx_up || fail "nginx did not answer on $SERVER: $(tail -3 "$NGX/logs/error.log")"

echo "== server: nginx on $SERVER (TLS from the trial's CA)"

# ---- alerting: a webhook of our own, three node_exporters, Prometheus and Alertmanager ----
cat > "$WORK/webhook.py" <<'EOF'
import http.server, json, sys
out = open(sys.argv[2], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        for a in body.get("alerts", []):
            out.write(json.dumps({"status": a["status"], **a["labels"]}) + "\n")
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$WORK/webhook.py" "$HOOK_PORT" "$WORK/webhook.jsonl" 2>"$WORK/webhook.log" &
PIDS+=($!)
NE=$(command -v prometheus-node-exporter || echo /usr/bin/prometheus-node-exporter)
for b in "${BOARDS[@]}"; do
    mkdir -p "$WORK/$b/textfile"
    "$NE" --web.listen-address="127.0.0.1:${NE_PORT[$b]}" --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$WORK/$b/textfile" >/dev/null 2>"$WORK/$b/node-exporter.log" &
    PIDS+=($!)
done
PROM=$WORK/server/prometheus
cp -r "$CONFIG/server/prometheus" "$PROM"
# The one change to the provisioned configuration: Prometheus and Alertmanager run in real
# time, so the rules' holds (10 minutes off air before GaendOffAir) are shortened to 5 s.
sed -E -i 's/^( +)for: [0-9]+[smh]$/\1for: 5s/' "$PROM/gaend-alerts.yml"
"$ALERTMANAGER" --config.file="$CONFIG/server/alertmanager/alertmanager.yml" --storage.path="$WORK/server/alertmanager" \
    --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >/dev/null 2>"$WORK/server/alertmanager.log" &
PIDS+=($!)
"$(command -v prometheus)" --config.file="$PROM/prometheus.yml" --storage.tsdb.path="$WORK/server/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >/dev/null 2>"$WORK/server/prometheus.log" &
PIDS+=($!)
# The number of series a PromQL query returns.
series() { curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" \
    | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null || echo 0; }
# How many notifications of alert $2 for board $3 with status $1 (firing, resolved) the webhook got.
notified() {
    python3 -c 'import json,sys
n = 0
for line in open(sys.argv[1]):
    a = json.loads(line)
    n += (a["status"], a.get("alertname"), a.get("board")) == tuple(sys.argv[2:5])
print(n)' "$WORK/webhook.jsonl" "$@" 2>/dev/null || echo 0
}
echo "== alerting: Prometheus (the provisioned targets and rules, holds 5 s), Alertmanager -> webhook 127.0.0.1:$HOOK_PORT"

# ---- the radio and the boards ----

python3 tools/virtual-radio/vradio.py \
    --device "name=A,transport=tcp-server:127.0.0.1:0,x=0,tx_power=$TX_POWER,sensitivity=$SENSITIVITY" \
    --device "name=B,transport=tcp-server:127.0.0.1:0,x=1,tx_power=$TX_POWER,sensitivity=$SENSITIVITY" \
    --device "name=C,transport=tcp-server:127.0.0.1:0,x=100,tx_power=$TX_POWER,sensitivity=$SENSITIVITY" \
    --control "unix:$WORK/vradio.sock" --ready-file "$WORK/vradio.json" 2>"$WORK/vradio.log" >/dev/null &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/vradio.json" ] && break; sleep 0.1; done
[ -s "$WORK/vradio.json" ] || { cat "$WORK/vradio.log" >&2; fail "the virtual radio did not start"; }
connect() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][sys.argv[2]]["connect"])' "$WORK/vradio.json" "$1"; }
BUS="unix:path=$WORK/bus"
dbus-daemon --session --address="$BUS" --nofork --nopidfile 2>"$WORK/dbus.log" &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$WORK/bus" ] && break; sleep 0.1; done
[ -S "$WORK/bus" ] || fail "dbus-daemon did not start"

# ---- the trial clock: R0 is now (whole seconds), T0 is day 1 20:00 UTC (tomorrow's date) ----
R0=$(date -u +%s)
DAY1=$(( (R0 / 86400 + 1) * 86400 ))
T0=$(( DAY1 + 20 * 3600 ))
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
cat > "$WORK/clock" <<EOF
# gaend trial clock (docs/runbook.md, "Rehearsal"): every process of the trial reads this
# file, so they all agree: trial time = trial_epoch + (real time - real_epoch) x scale.
scale: $SCALE
real_epoch: $(iso "$R0")
trial_epoch: $(iso "$T0")
EOF
# Trial time now (whole seconds), the same formula as TrialClock.trialTime.
trial_now() { local ns; ns=$(date +%s%N); echo $(( T0 + (ns - R0 * 1000000000) * SCALE / 1000000000 )); }
# "day 2 03:12" of a trial time.
label() { local t=$1; printf 'day %d %s' $(( (t - DAY1) / 86400 + 1 )) "$(date -u -d "@$t" +%H:%M)"; }
stamp() { printf '[%s]' "$(label "$(trial_now)")"; }
say() { echo "$(stamp) $*"; }
# Trial time of "day N HH:MM".
at() { echo $(( DAY1 + ($1 - 1) * 86400 + $2 * 3600 + $3 * 60 )); }
# Sleeps until the trial reaches time $1.
wait_trial() {
    local target_ns=$(( R0 * 1000000000 + ($1 - T0) * 1000000000 / SCALE )) now_ns
    now_ns=$(date +%s%N)
    if [ "$target_ns" -gt "$now_ns" ]; then sleep "$(printf '%d.%09d' $(( (target_ns - now_ns) / 1000000000 )) $(( (target_ns - now_ns) % 1000000000 )))"; fi
}
# Polls `$@` every 0.5 s until it succeeds or the trial reaches $1 (then returns 1).
until_trial() {
    local deadline=$1; shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$(trial_now)" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}
echo "== trial clock x$SCALE: real $(iso "$R0") is trial $(iso "$T0") (day 1 20:00 UTC); a trial day lasts $(( 86400 / SCALE )) s"

declare -A NODE_PID CONNECT
for b in "${BOARDS[@]}"; do
    mkdir -p "$WORK/$b/state" "$WORK/$b/app" "$WORK/$b/spool"
    (umask 077; openssl rand -hex 32 > "$WORK/$b/store.key")
    CONNECT[$b]=$(connect "$b")
    # The provisioned gaend.conf (research on, the board's name and site) and the rehearsal's
    # additions: the trial clock, and a radio schedule for compressed time: a 4 s scan every
    # minute lasts 17 ms of real time at x240, so the controller's shortest advertising interval
    # (20 ms: about one advertisement a scan); the calibrated TX power of the radio model. (The
    # watchdog and the HCI timeouts run on real time whatever the node's clock.)
    cat "$CONFIG/boards/$b/gaend.conf" - > "$WORK/$b/gaend.conf" <<EOF
# The rehearsal (scripts/rehearse.sh):
trial_clock: $WORK/clock
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: fixed
  duration_seconds: 4
  fixed_period_seconds: 60
calibration:
  tx_power: $TX_POWER
EOF
done
start_node() {
    local b=$1
    "$BIN/gaend" --config "$WORK/$b/gaend.conf" --controller "${CONNECT[$b]}" --state-dir "$WORK/$b/state" \
        --store-key-file "$WORK/$b/store.key" --bus "$BUS" --bus-name "org.gaend.$b" \
        --trust "TRIAL:1=$CONFIG/boards/$b/trial-key.pem" 2>>"$WORK/$b/gaend.log" &
    NODE_PID[$b]=$!
    NODE_PIDS+=($!)
}
ctl() { local b=$1; shift; "$BIN/gaenctl" --bus "$BUS" --name "org.gaend.$b" "$@"; }
node_status() { ctl "$1" status --json; }
for b in "${BOARDS[@]}"; do start_node "$b"; done
for b in "${BOARDS[@]}"; do
    for _ in $(seq 100); do node_status "$b" >/dev/null 2>&1 && break; sleep 0.2; done
    node_status "$b" >/dev/null 2>&1 || { tail -20 "$WORK/$b/gaend.log" >&2; fail "node $b did not start"; }
done
# Ground truth for the report: each board's distance to its nearest other board, from now.
# Each board marks the true distance to each other board as a pair marker (pair:RECEIVER/TRANSMITTER):
# a marker without a pair holds for every pair of the trial (docs/trial.md).
ctl A mark --label "pair:A/B" --distance 1 >/dev/null && ctl A mark --label "pair:A/C" --distance 100 >/dev/null \
    && ctl B mark --label "pair:B/A" --distance 1 >/dev/null && ctl B mark --label "pair:B/C" --distance 99 >/dev/null \
    && ctl C mark --label "pair:C/A" --distance 100 >/dev/null && ctl C mark --label "pair:C/B" --distance 99 >/dev/null \
    || fail "gaenctl mark"
say "boards A, B (1 m from A) and C (100 m away: out of range) on air, on the trial clock; A is the board that will test positive"

# The publisher, as gaend-publish.timer runs it (every hour on the server), here every 2 s
# (8 trial minutes at x240), with the provisioned publish.env.
# A systemd EnvironmentFile's value (not shell syntax: read, not sourced).
env_value() { sed -n "s/^$2=//p" "$1"; }
PUBLISH_OPTIONS=$(env_value "$CONFIG/server/publish.env" PUBLISH_OPTIONS)
publisher() {
    while true; do
        # shellcheck disable=SC2086
        out=$("$BIN/gaenctl" keys publish --inbox "$SRV/inbox" -o "$SRV/www/keys" --signing-key "$WORK/server/signing-key.pem" \
            --key-id TRIAL --key-version 1 $PUBLISH_OPTIONS --trial-clock "$WORK/clock" 2>&1) || true
        echo "$(trial_now) $out" >> "$WORK/server/publish.log"
        sleep 2
    done
}
publisher 2>/dev/null &
PIDS+=($!)
# gaend-metrics@.timer: each board's metrics into its node_exporter's textfile directory.
metrics_writer() {
    while true; do
        for b in "${BOARDS[@]}"; do
            ctl "$b" metrics --timeout 5 --app-state "$WORK/$b/app" -o "$WORK/$b/textfile/gaend-$b.prom" 2>/dev/null || true
        done
        sleep 1
    done
}
metrics_writer 2>/dev/null &
PIDS+=($!)

# gaend-app@.timer on each board: every trial hour at the board's own minute (its fixed random
# delay), `app submit` (uploads only with consent) then `app sync`, with the provisioned app.env.
declare -A MINUTE=([A]=10 [B]=20 [C]=40)
app_timer() {
    local b=$1 t next
    local SERVER_URL; SERVER_URL=$(env_value "$CONFIG/boards/$b/app.env" SERVER)
    while true; do
        t=$(trial_now)
        next=$(( t / 3600 * 3600 + MINUTE[$b] * 60 ))
        [ "$next" -gt "$t" ] || next=$(( next + 3600 ))
        wait_trial "$next"
        {
            echo "$(stamp) submit: $(ctl "$b" app submit --server "$SERVER_URL" --user "$b" --password-file "$CONFIG/boards/$b/app-password" \
                --consent "${CONSENT[$b]}" --state-dir "$WORK/$b/app" --cacert "$CONFIG/boards/$b/trial-ca.pem" --trial-clock "$WORK/clock" 2>&1 | tr '\n' ' ')"
            echo "$(stamp) sync: $(ctl "$b" app sync --server "$SERVER_URL/keys" --country DE --trust "TRIAL:1=$CONFIG/boards/$b/trial-key.pem" \
                --state-dir "$WORK/$b/app" --cacert "$CONFIG/boards/$b/trial-ca.pem" --trial-clock "$WORK/clock" \
                --journal-socket "$WORK/$b/no-journal" --match-wait 30 \
                --hook "echo \"\$GAEN_NODE \$GAEN_RISK_LEVEL \$GAEN_RISK_SINCE\" >> '$WORK/$b/hook.log'" 2>&1 | tr '\n' ' ')"
        } >> "$WORK/$b/app.log"
    done
}
for b in "${BOARDS[@]}"; do app_timer "$b" 2>/dev/null & PIDS+=($!); done

# ---- Prometheus sees the three boards ----
prometheus_sees_all() { [ "$(series 'gaend_up{job="gaend-boards"} == 1')" = 3 ]; }
until_trial "$(at 1 21 30)" prometheus_sees_all \
    || fail "Prometheus does not see gaend on the three boards: $(tail -3 "$WORK/server/prometheus.log")"
say "Prometheus scrapes the three boards (gaend_up 1 each); no alert firing"

# ---- an alert: C off air for a while, then back on the same clock ----
wait_trial "$(at 1 20 30)"
kill -TERM "${NODE_PID[C]}"; wait "${NODE_PID[C]}" 2>/dev/null || true
say "board C stopped (gaend ended)"
firing() { [ "$(notified firing GaendOffAir C)" -ge 1 ]; }
until_trial "$(at 1 23 30)" firing || fail "GaendOffAir for board C never reached the webhook: $(tail -3 "$WORK/server/alertmanager.log")"
say "alert GaendOffAir firing for board C, received by the webhook"
start_node C
until_trial "$(at 2 0 30)" node_status C || fail "node C did not start again"
resolved() { [ "$(notified resolved GaendOffAir C)" -ge 1 ]; }
until_trial "$(at 2 1 30)" resolved || fail "GaendOffAir for board C never resolved"
scan_time() { node_status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lastScanTime"] // 1000)'; }
sleep 1
now=$(trial_now); tc=$(scan_time C); tb=$(scan_time B)
say "board C started again: its last scan at $(label "$tc"), B's at $(label "$tb") (the same trial clock); GaendOffAir resolved"
[ $(( now - tc < 0 ? tc - now : now - tc )) -lt 3600 ] && [ $(( tb - tc < 0 ? tc - tb : tb - tc )) -lt 3600 ] \
    || fail "board C's clock after its restart ($(label "$tc")) is not the trial's ($(label "$now"))"

# ---- the key loop: A uploads after midnight, the publisher publishes at 03:00, B turns high ----
uploaded() { grep -q "keys uploaded to" "$WORK/A/app.log"; }
until_trial "$(at 2 1 30)" uploaded || fail "board A uploaded no keys: $(tail -2 "$WORK/A/app.log")"
say "board A (consent yes) $(grep -m1 -o 'submit: [0-9]* keys uploaded to [^ ]*' "$WORK/A/app.log" | sed "s#$SERVER#SERVER#")"
published() { awk '$2 > 0 && /keys published/ { found = 1 } END { exit !found }' "$WORK/server/publish.log"; }
until_trial "$(at 2 4 30)" published || fail "the publisher published no key: $(tail -2 "$WORK/server/publish.log")"
line=$(awk '$2 > 0 && /keys published/ { print; exit }' "$WORK/server/publish.log")
echo "[$(label "${line%% *}")] publisher: $(grep -o '[0-9]* keys published' <<<"$line"), $(grep -o '[0-9]* CWA packages, [0-9]* Google files' <<<"$line") (hour 02:00-03:00 of day 2)"
# Day 1's key expired at midnight; with the 2 h embargo the hour 02:00-03:00 holds it, published once complete.
[ "${line%% *}" -ge "$(at 2 3 0)" ] || fail "a key of day 1 was published before day 2 03:00"
risk() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/status.json")); r=s.get("risk") or {}; print(r.get("level","none"))' "$WORK/$1/app" 2>/dev/null || echo none; }
high() { [ "$(risk B)" = high ]; }
until_trial "$(at 2 8 0)" high || fail "board B did not turn high by day 2 08:00: $(tail -3 "$WORK/B/app.log")"
# The app run that turned B high, in its own words (its status is written during the run, its
# log line when the run has ended).
high_logged() { grep -q 'high risk:' "$WORK/B/app.log"; }
until_trial "$(at 2 9 0)" high_logged || fail "board B is high but its app run never logged it: $(tail -3 "$WORK/B/app.log")"
line=$(grep -m1 'high risk:' "$WORK/B/app.log")
echo "${line%% sync:*} board B's app: $(grep -o '[0-9]* new packages, [0-9]* provided, [0-9]* refused' <<<"$line"); $(grep -o 'provided [0-9]* packages: [^g]*windows' <<<"$line")"
echo "${line%% sync:*} board B: $(grep -o 'high risk: [^(]*' <<<"$line")-> HIGH"
[ "$(wc -l < "$WORK/B/hook.log")" = 1 ] || fail "B's hook ran $(wc -l < "$WORK/B/hook.log") times, not once"
read -r _ level since < "$WORK/B/hook.log"
say "B's --hook ran once: level $level since $(label "$since")"
# C must have synced after the publication, and stay low.
c_synced() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/status.json")); sys.exit(0 if s.get("packagesProvided",0) >= 1 else 1)' "$WORK/C/app" ; }
until_trial "$(at 2 8 0)" c_synced || fail "board C fetched no key package: $(tail -2 "$WORK/C/app.log")"
[ "$(risk C)" != high ] || fail "board C turned high though it was 100 m away"
[ ! -s "$WORK/C/hook.log" ] || fail "C's hook ran"
say "board C synced the same packages and stays $(risk C): it never heard A"

# ---- collection: the closed days of every board, then the report ----
wait_trial "$(at 2 4 30)"
for b in "${BOARDS[@]}"; do
    # The last collection of the trial: the closed days, then (with consent) the board's keys and app outcomes.
    ctl "$b" collect --server "$SERVER/collect/" --user "$b" --password-file "$CONFIG/boards/$b/app-password" --spool "$WORK/$b/spool" \
        --cacert "$CONFIG/boards/$b/trial-ca.pem" --trial-clock "$WORK/clock" \
        --outcomes --consent yes --app-state "$WORK/$b/app" > "$WORK/$b/collect.log" 2>&1 \
        || { cat "$WORK/$b/collect.log" >&2; fail "gaenctl collect on board $b"; }
    say "board $b: $(grep -o 'board=[^ ]*' "$WORK/$b/collect.log" | tr '\n' ' ')"
done
"$BIN/gaenctl" trial verify --strict "$SRV/collect" > "$WORK/verify.log" 2>&1 || { cat "$WORK/verify.log" >&2; fail "trial verify"; }
# trial verify lists each board's days and, once shipped, its outcomes/.
days=$(grep -c '/day=.*: complete$' "$WORK/verify.log" || true)
outcomes=$(grep -c '/outcomes: complete$' "$WORK/verify.log" || true)
[ "$days" = 3 ] || { cat "$WORK/verify.log" >&2; fail "$days board days complete on the server, expected 3 (day 1 of A, B and C)"; }
[ "$outcomes" = 3 ] || { cat "$WORK/verify.log" >&2; fail "$outcomes boards' outcomes complete on the server, expected 3 (A, B and C)"; }
say "server: $days board days collected and complete, and $outcomes boards' outcomes (trial verify --strict)"
mkdir -p "$WORK/keys"
for b in "${BOARDS[@]}"; do ctl "$b" keys history --json > "$WORK/keys/$b.json" || fail "keys history of $b"; done
# shellcheck disable=SC2086
"$BIN/gaenctl" trial report --sightings "$SRV"/collect/board=*/day=*/sightings.csv --markers "$SRV"/collect/board=*/day=*/markers.csv \
    --keys "$WORK"/keys/*.json --split daily -o "$WORK/report" > "$WORK/report.log" 2>&1 || { cat "$WORK/report.log" >&2; fail "trial report"; }
say "trial report written ($(ls "$WORK/report" | wc -l) files):"
sed 's/^/    /' "$WORK/report.log" | head -20
# The trial's question: was each board's notification right? From the placement plan and the
# keys and outcomes the loop itself collected: A (positive) TN, B (1 m from A) TP, C TN.
"$BIN/gaenctl" trial report --collected "$SRV/collect" --placement "$CONFIG/placement.csv" -o "$WORK/verdicts" > "$WORK/verdicts.log" 2>&1 \
    || { cat "$WORK/verdicts.log" >&2; fail "trial report --collected --placement"; }
verdicts=$(python3 -c 'import csv,sys; print(" ".join(r["board"]+"="+r["verdict"] for r in csv.DictReader(open(sys.argv[1]))))' "$WORK/verdicts/notifications.csv")
say "$(head -1 "$WORK/verdicts.log" | sed "s#$WORK#WORK#")"
say "each board's notification against the placement plan: $verdicts"
[ "$verdicts" = "A=TN B=TP C=TN" ] || { sed 's/^/    /' "$WORK/verdicts/notifications.csv" >&2; fail "verdicts $verdicts, expected A=TN B=TP C=TN"; }

STATUS=0
echo "== rehearsal passed in $(( SECONDS - START_WALL )) s of real time (x$SCALE: $(label "$(trial_now)") on the trial clock)"
