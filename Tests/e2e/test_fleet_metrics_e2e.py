"""A watched fleet: three gaend nodes on the virtual radio, each one's `gaenctl metrics -o`
written into the textfile directory of a real Debian prometheus-node-exporter, scraped by a real
Debian prometheus evaluating the shipped alert rules (with a short `for:`), all on 127.0.0.1
free ports in temporary directories. The Prometheus HTTP API shows every node's scan counter
growing; a node stopped mid-test fires GaendOffAir in /api/v1/alerts, which resolves once it
runs again. `promtool check metrics` accepts the exposition, its counters equal
`gaenctl status --json` of the same moment, and no label carries an address or an RPI.

Prometheus runs the configuration `gaenctl trial provision` writes (file_sd targets, the shipped
rules), and a real Debian prometheus-alertmanager runs the provisioned alertmanager.yml: its
webhook is a receiver of the test's own, which gets GaendOffAir firing and then resolved, and
the alerts of boards that never reported (a target that never answers: GaendBoardDown; a board
without the app half: GaendNoKeySync)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, wait_for
from test_node_e2e import TX_POWER, Bus, nodes  # noqa: F401  (nodes is a fixture)

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
PROMTOOL = shutil.which("promtool")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

pytestmark = pytest.mark.skipif(None in (PROMETHEUS, NODE_EXPORTER, PROMTOOL, ALERTMANAGER),
                                reason="prometheus, prometheus-node-exporter, promtool or prometheus-alertmanager not installed (scripts/setup.sh installs them)")


class Webhook:
    """Alertmanager's webhook receiver: a tiny HTTP server on loopback keeping every
    notification (Alertmanager's JSON: status, alerts with labels and status)."""

    def __init__(self) -> None:
        import http.server
        received = self.received = []
        lock = self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def alerts(self, status: str) -> list[dict]:
        """Every alert notified with this status (firing, resolved), with the labels it carried."""
        with self.lock:
            return [a for n in self.received for a in n["alerts"] if a["status"] == status]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def three_radios(radio):
    return radio([{"name": n, "transport": "tcp-server:127.0.0.1:0", "x": x, "tx_power": TX_POWER}
                  for n, x in (("a", 0.0), ("b", 1.5), ("c", 3.0))],
                 channel={"sigma": 0.0, "loss": 0.0})


class MetricsWriter:
    """What gaend-metrics@.timer does, every `period` seconds for each node."""

    def __init__(self, bin_dir: Path, bus: Bus, names: list[str], directory: Path, period: float = 1.0) -> None:
        self.bin_dir, self.bus, self.names, self.dir, self.period = bin_dir, bus, names, directory, period
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def write(self, name: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin_dir / "gaenctl"), "metrics", "--bus", self.bus.address, "--name", name, "--timeout", "5",
                               # No app half on these nodes (and nothing read outside the test's directory).
                               "--app-state", str(self.dir.parent / "no-app"),
                               "-o", str(self.dir / f"gaend-{name}.prom")], capture_output=True, text=True, timeout=30)

    def run(self) -> None:
        while not self.stop_event.is_set():
            for name in self.names:
                self.write(name)
            self.stop_event.wait(self.period)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(60)


class Server:
    """A background server started by the test, killed at the end."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(log, "w"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def http_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def parse_exposition(text: str) -> dict[tuple[str, frozenset], float]:
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples, name: str, **labels) -> float:
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    assert len(found) == 1, (name, labels, found)
    return found[0]


ADDRESS = re.compile(r"([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}|[0-9a-fA-F]{32}|tcp:|127\.0\.0\.1")


def test_fleet_metrics_alerts_and_recovery(radio, nodes, bin_dir, tmp_path):
    r = three_radios(radio)
    bus = Bus(tmp_path / "bus")
    servers: list[Server] = []
    try:
        names = ["hci0", "hci1", "hci2"]
        fleet = {name: nodes(name, r.ready["devices"][dev]["connect"], bus=bus, bus_name=f"org.gaend.{name}")
                 for name, dev in zip(names, "abc")}
        for n in fleet.values():
            n.start()
        for n in fleet.values():
            n.wait_scans(2)

        # The exposition of a stopped node (counters frozen) against its status of the same moment.
        n0 = fleet["hci0"]
        n0.ctl("stop", check=True)
        assert wait_for(lambda: n0.status()["advertisingOnAir"] is False, 20, 0.2)
        status = n0.status()
        out = n0.ctl("metrics", "--app-state", tmp_path / "no-app", check=True).stdout
        assert n0.status() == status, "the stopped node's status moved; the comparison would be meaningless"
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=out, capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        m = parse_exposition(out)
        ident = {"controller": "hci0", "node": "hci0", "site": "e2e"}
        for metric, key in (("gaend_scans_total", "scanCount"), ("gaend_sightings_total", "sightingCount"),
                            ("gaend_advertisements_total", "advertisementCount"), ("gaend_rotations_total", "rotationCount"),
                            ("gaend_rotations_failed_total", "failedRotations"), ("gaend_radio_failures_total", "radioFailures"),
                            ("gaend_advertising_on_air_seconds_total", "secondsOnAir"),
                            ("gaend_advertising_off_air_seconds_total", "secondsOffAir"),
                            ("gaend_reports_ignored_total", "reportsIgnored"), ("gaend_watchdog_feeds_total", "watchdogFeeds"),
                            ("gaend_quarantined_records", "quarantinedRecords"), ("gaend_store_size_bytes", "storeBytes"),
                            ("gaend_key_files", "keyFiles"), ("gaend_exposure_windows", "exposureWindows")):
            assert value(m, metric, **ident) == status[key], (metric, status)
        assert value(m, "gaend_scans_dropped_total", cause="disk_full", **ident) == status["droppedScans"]
        assert value(m, "gaend_reports_dropped_total", cause="buffer_full", **ident) == status["reportsDropped"]
        assert value(m, "gaend_last_scan_timestamp_seconds", **ident) == status["lastScanTime"] / 1000
        assert value(m, "gaend_matching_duration_seconds_count", **ident) == status["matchingRuns"]
        assert value(m, "gaend_up", **ident) == 1 and value(m, "gaend_enabled", **ident) == 0
        assert value(m, "gaend_advertising_on_air", **ident) == 0
        assert value(m, "gaend_status", status="inactive", **ident) == 1 and value(m, "gaend_status", status="active", **ident) == 0
        assert value(m, "gaend_build_info", version=status["version"], **ident) == 1
        assert status["secondsOnAir"] > 0 and status["rotationCount"] >= 1 and status["storeBytes"] > 0
        for (_, labels) in m:
            for k, v in labels:
                assert not ADDRESS.search(v), f"label {k}={v!r} carries an address"
        # The controller's address is in the status, never in the metrics.
        assert status["controller"]["address"] and status["controller"]["address"] not in out
        n0.ctl("start", check=True)

        # node_exporter reads the textfile directory; Prometheus scrapes it every second.
        textfile = tmp_path / "textfile"
        textfile.mkdir()
        ne_port, prom_port, am_port, silent_port = free_port(), free_port(), free_port(), free_port()
        servers.append(Server([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ne_port}", "--collector.disable-defaults",
                               "--collector.textfile", f"--collector.textfile.directory={textfile}", "--collector.filesystem"],
                              tmp_path / "node-exporter.log"))
        # The trial as provisioned: board "fleet" is this node_exporter (the three nodes, no app
        # half), board "silent" a target nobody answers on; alerts to the test's webhook.
        webhook = Webhook()
        inventory = tmp_path / "inventory.yml"
        inventory.write_text(f"""trial: e2e
time_zone: UTC
scrape_interval: 1s
server: {{name: localhost, url: "https://127.0.0.1"}}
alerting: {{webhook: "{webhook.url}", alertmanager: "127.0.0.1:{am_port}", group_wait: 1s, group_interval: 1s, repeat_interval: 1h}}
boards:
  - {{name: fleet, site: e2e, consent: no, host: 127.0.0.1, metrics_port: {ne_port}}}
  - {{name: silent, site: e2e, consent: no, host: 127.0.0.1, metrics_port: {silent_port}}}
""")
        provisioned = tmp_path / "trial-config"
        p = subprocess.run([str(bin_dir / "gaenctl"), "trial", "provision", str(inventory), "--out", str(provisioned),
                            "--deploy", str(REPO / "deploy")], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        prom_dir = provisioned / "server/prometheus"
        # The shipped rules with their holds shortened to seconds (the conditions unchanged).
        rules = (prom_dir / "gaend-alerts.yml").read_text()
        held = "expr: gaend_up == 0 or gaend_advertising_on_air == 0\n        for: 10m"
        assert held in rules and "for: 2h" in rules
        (prom_dir / "gaend-alerts.yml").write_text(re.sub(r"for: [0-9]+[mh]\n", "for: 4s\n", rules))
        servers.append(Server([ALERTMANAGER, f"--config.file={provisioned / 'server/alertmanager/alertmanager.yml'}",
                               f"--storage.path={tmp_path / 'alertmanager'}", f"--web.listen-address=127.0.0.1:{am_port}",
                               "--cluster.listen-address="], tmp_path / "alertmanager.log"))
        servers.append(Server([PROMETHEUS, f"--config.file={prom_dir / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{prom_port}"], tmp_path / "prometheus.log"))
        api = f"http://127.0.0.1:{prom_port}/api/v1"

        def notified(status: str, alertname: str) -> list[dict]:
            return [a["labels"] for a in webhook.alerts(status) if a["labels"]["alertname"] == alertname]

        def query(q: str) -> dict[str, float]:
            try:
                res = http_json(f"{api}/query?" + urllib.parse.urlencode({"query": q}))
            except OSError:
                return {}
            return {s["metric"].get("controller", ""): float(s["value"][1]) for s in res["data"]["result"]}

        def alerts() -> list[dict]:
            try:
                return http_json(f"{api}/alerts")["data"]["alerts"]
            except OSError:
                return []

        def off_air(state: str) -> set[str]:
            return {a["labels"].get("controller") for a in alerts() if a["labels"]["alertname"] == "GaendOffAir" and a["state"] == state}

        with MetricsWriter(bin_dir, bus, names, textfile):
            # Every node's scan counter, as Prometheus stored it, grows.
            assert wait_for(lambda: set(query("gaend_scans_total")) == set(names), 60, 0.5), \
                (query("gaend_scans_total"), (tmp_path / "prometheus.log").read_text()[-2000:])
            first = query("gaend_scans_total")
            assert wait_for(lambda: all(query("gaend_scans_total").get(n, 0) > first[n] for n in names), 60, 0.5), \
                (first, query("gaend_scans_total"))
            assert wait_for(lambda: set(query("increase(gaend_scans_total[1m]) > 0")) == set(names), 30, 0.5)
            # Nothing is off air while all run (hci0 started again).
            assert wait_for(lambda: set(query("gaend_advertising_on_air == 1")) == set(names), 30, 0.5)
            assert off_air("firing") == set()

            # hci1 stops (its daemon ends): gaend_up 0, the alert goes pending, then fires.
            stopped = fleet["hci1"]
            assert stopped.terminate() == 0, stopped.stderr
            assert wait_for(lambda: query("gaend_up == 0").keys() == {"hci1"}, 30, 0.5), query("gaend_up")
            assert wait_for(lambda: off_air("firing") == {"hci1"}, 30, 0.5), alerts()
            firing = [a for a in alerts() if a["labels"]["alertname"] == "GaendOffAir"]
            assert firing[0]["labels"]["node"] == "hci1" and firing[0]["labels"]["site"] == "e2e", firing
            # Through Alertmanager's route to the webhook, with the board and the trial named.
            def hci1_notified(status: str) -> list[dict]:
                return [a for a in notified(status, "GaendOffAir") if a.get("node") == "hci1"]
            assert wait_for(lambda: hci1_notified("firing"), 30, 0.5), \
                (webhook.received, (tmp_path / "alertmanager.log").read_text()[-2000:])
            sent = hci1_notified("firing")[0]
            assert (sent["board"], sent["trial"], sent["site"]) == ("fleet", "e2e", "e2e"), sent

            # It runs again: back on air, the alert resolves (no longer active).
            stopped.start()
            assert wait_for(lambda: query("gaend_advertising_on_air == 1").keys() == set(names), 60, 0.5), query("gaend_advertising_on_air")
            assert wait_for(lambda: off_air("firing") | off_air("pending") == set(), 30, 0.5), alerts()
            assert wait_for(lambda: hci1_notified("resolved"), 30, 0.5), webhook.received
            # Its restarted counter keeps growing in Prometheus (a counter reset, as rate() expects).
            assert wait_for(lambda: query('increase(gaend_scans_total{controller="hci1"}[30s])').get("hci1", 0) > 0, 60, 0.5)

            # Boards that never reported reach the webhook too: the target nobody answers on,
            # and the answering board that has no app half (its series never existed).
            assert wait_for(lambda: {a["board"] for a in notified("firing", "GaendBoardDown")} == {"silent"}, 30, 0.5), webhook.received
            assert wait_for(lambda: {a["board"] for a in notified("firing", "GaendNoKeySync")} == {"fleet"}, 30, 0.5), webhook.received
            assert all(a.get("reason") == "never-reported" for a in notified("firing", "GaendNoKeySync"))
            # The metrics files exist: no "never had a metrics file" alert for the answering board.
            assert not [a for a in notified("firing", "GaendMetricsStale") if a["board"] == "fleet"], webhook.received
    finally:
        for s in reversed(servers):
            s.stop()
        if "webhook" in locals():
            webhook.stop()
        bus.stop()
