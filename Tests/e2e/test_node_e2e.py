"""gaend end to end: two nodes on the virtual radio, the D-Bus API through real
clients (gaenctl, busctl, gdbus, dbus-send), the bus policy, restarts, kill -9, a wrong store
key, a corrupt key file, and the store file holding no known secret in clear."""

from __future__ import annotations

import csv
import json
import re
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO, wait_for

TX_POWER = -20
SCALE = 20
# A 4 s scan every 60 s of node time: at x20, 0.2 s of scanning every 3 s of real time, with
# the advertising interval scaled down (20-27 ms) so that a scan still hears several.
FAST_CONFIG = """
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: fixed
  duration_seconds: 4
  fixed_period_seconds: 60
calibration:
  tx_power: {tx}
research:
  node: "{name}"
  site: e2e
"""

SYSTEM_LIKE_POLICY = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>{policy}</include>
  <!-- The test's daemon runs as root, so root may own the name here as well. -->
  <policy user="root"><allow own="org.gaend"/></policy>
</busconfig>
"""


class Bus:
    """A private dbus-daemon (session-like, or system-like with the repository's policy)."""

    def __init__(self, directory: Path, policy: bool = False) -> None:
        self.owned_dir = None
        if policy:
            # Other uids must reach the socket: pytest's own directories are private (0700).
            directory = self.owned_dir = Path(tempfile.mkdtemp(prefix="gaend-sysbus-"))
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o755)
        self.socket = directory / "bus"
        args = ["dbus-daemon", "--nofork", "--nopidfile"]
        if policy:
            conf = directory / "bus.conf"
            conf.write_text(SYSTEM_LIKE_POLICY.format(socket=self.socket, policy=REPO / "dbus" / "org.gaend.conf"))
            args.append(f"--config-file={conf}")
        else:
            args += ["--session", f"--address=unix:path={self.socket}"]
        self.proc = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        assert wait_for(self.socket.exists, 10), "dbus-daemon did not start"
        self.address = f"unix:path={self.socket}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.owned_dir:
            shutil.rmtree(self.owned_dir, ignore_errors=True)


class Node:
    """One gaend with its own bus, state directory and store key file."""

    def __init__(self, bin_dir: Path, tmp: Path, name: str, controller: str, extra: list[str] | None = None,
                 bus: Bus | None = None, config: str | None = None, bus_name: str | None = None) -> None:
        self.bin_dir, self.name, self.controller = bin_dir, name, controller
        # None: gaend's default name and gaenctl's discovery; else --bus-name and --name.
        self.bus_name = bus_name
        self.dir = tmp / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state = self.dir / "state"
        self.key = self.dir / "store.key"
        fd = os.open(self.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
        os.close(fd)
        self.config = self.dir / "gaend.conf"
        self.config.write_text(config if config is not None else FAST_CONFIG.format(tx=TX_POWER, name=name))
        self.own_bus = bus is None
        self.bus = bus or Bus(self.dir / "bus")
        self.extra = extra if extra is not None else ["--trial", "--time-scale", str(SCALE)]
        self.proc: subprocess.Popen | None = None
        self.runs = 0

    @property
    def store(self) -> Path:
        return self.state / "store.sqlite"

    def start(self, wait: bool = True, key: Path | None = None, env: dict | None = None,
              wrapper: list[str] | None = None) -> None:
        self.runs += 1
        self.err = self.dir / f"gaend-{self.runs}.err"
        self.proc = subprocess.Popen(
            [*(wrapper or []), self.bin_dir / "gaend", "--config", self.config, "--controller", self.controller, "--state-dir", self.state,
             "--store-key-file", key or self.key, "--bus", self.bus.address,
             *(["--bus-name", self.bus_name] if self.bus_name else []), *self.extra],
            stdout=subprocess.DEVNULL, stderr=open(self.err, "w"), env=env)
        if wait:
            assert wait_for(lambda: self.ctl("status").returncode == 0 or self.proc.poll() is not None, 20, 0.2)
            assert self.proc.poll() is None, self.stderr

    @property
    def stderr(self) -> str:
        return self.err.read_text()

    def ctl(self, *args, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:
        name = ["--name", self.bus_name] if self.bus_name else []
        out = subprocess.run([str(self.bin_dir / "gaenctl"), "--bus", self.bus.address, *name, *map(str, args)],
                             capture_output=True, text=True, timeout=timeout)
        if check:
            assert out.returncode == 0, f"gaenctl {' '.join(map(str, args))}: {out.stderr}"
        return out

    def status(self) -> dict:
        return json.loads(self.ctl("status", "--json", check=True).stdout)

    def wait_scans(self, n: int, timeout: float = 60) -> None:
        assert wait_for(lambda: self.status()["scanCount"] >= n, timeout, 0.5), self.status()

    def keys(self) -> list[dict]:
        return json.loads(self.ctl("keys", "history", "--json", check=True).stdout)

    def export(self, fmt: str = "csv") -> str:
        out = self.dir / f"sightings.{fmt}"
        self.ctl("sightings", "export", "--format", fmt, "-o", out, check=True)
        return out.read_text()

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.own_bus:
            self.bus.stop()


@pytest.fixture
def nodes(bin_dir, tmp_path):
    made: list[Node] = []

    def make(name, controller, **kw) -> Node:
        n = Node(bin_dir, tmp_path, name, controller, **kw)
        made.append(n)
        return n

    yield make
    for n in made:
        n.close()


def two_radios(radio, distance=1.5):
    return radio([{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER},
                  {"name": "b", "transport": "tcp-server:127.0.0.1:0", "x": distance, "tx_power": TX_POWER}],
                 channel={"sigma": 0.0, "loss": 0.0})


def signing_key(tmp: Path) -> tuple[Path, Path]:
    private, public = tmp / "ha.pem", tmp / "ha.pub.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", private], check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", private, "-pubout", "-out", public], check=True, capture_output=True)
    return private, public


def store_bytes(node: Node) -> bytes:
    return b"".join(p.read_bytes() for p in node.state.glob("store.sqlite*"))


def test_two_nodes_exposure_windows(radio, nodes, tmp_path):
    """The demo's flow with assertions: B's windows come from A's keys at 1.5 m."""
    r = two_radios(radio)
    private, public = signing_key(tmp_path)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"],
              extra=["--trial", "--time-scale", str(SCALE), "--trust", f"e2e-ha:1={public}"])
    a.start()
    b.start()
    b.wait_scans(8, timeout=60)
    a_status, b_status = a.status(), b.status()
    assert "active" in a_status["status"] and a_status["advertisementCount"] >= 1, a_status
    assert b_status["sightingCount"] > 0, b_status

    keys = a.keys()
    assert len(keys) == 1 and keys[0]["rollingPeriod"] == 144  # trial: today's key
    zip_path = tmp_path / "a.zip"
    a.ctl("keys", "history", "-o", zip_path, "--signing-key", private, "--key-id", "e2e-ha", "--key-version", "1", check=True)

    # B stops scanning, so that its export holds exactly the sightings the daemon matches.
    b.ctl("stop", check=True)
    provided = json.loads(b.ctl("keys", "provide", "--json", zip_path, check=True).stdout)
    assert provided["keys"] == 1 and provided["matchedKeys"] == 1 and provided["windows"] >= 1, provided
    windows = json.loads(b.ctl("windows", "--json", check=True).stdout)
    assert len(windows) == provided["windows"]
    # One exposure computation: `gaenctl windows` on B's export and the same key file gives
    # exactly the daemon's windows (the daemon's JSON leaves out transmissionRiskLevel).
    export = tmp_path / "b-sightings.csv"
    b.ctl("sightings", "export", "-o", export, check=True)
    # Every sighting carries its advertiser's address (A's current random address), written as btmon prints it.
    rows = [r for r in csv.DictReader(export.open()) if r["rpi"]]
    assert rows and all(re.fullmatch(r"[0-9A-F]{2}(:[0-9A-F]{2}){5}", r["address"]) for r in rows), rows[:3]
    # The daily layout (docs/trial.md "Many boards"): the same rows, one file per board per UTC
    # day of the row's time, board=<node>/day=<YYYY-MM-DD>/sightings.<csv|jsonl>.
    all_rows = export.read_text().splitlines()[1:]
    for fmt in ("csv", "jsonl"):
        daily = tmp_path / f"daily-{fmt}"
        b.ctl("sightings", "export", "--format", fmt, "--split", "daily", "--dir", daily, check=True)
        files = sorted(p for p in daily.rglob("*") if p.is_file())
        assert files and all(re.fullmatch(rf"board=[^/]+/day=\d{{4}}-\d{{2}}-\d{{2}}/sightings\.{fmt}", str(p.relative_to(daily)))
                              for p in files), files
        split_rows = []
        for p in files:
            lines = p.read_text().splitlines()
            if fmt == "csv":
                assert lines[0] == export.read_text().splitlines()[0]
                lines = lines[1:]
                times = [float(l.split(",")[0]) for l in lines]
            else:
                times = [json.loads(l)["time"] for l in lines]
            day = p.parent.name.removeprefix("day=")
            assert all(time.strftime("%Y-%m-%d", time.gmtime(t)) == day for t in times), p
            split_rows += lines
        if fmt == "csv":
            assert sorted(split_rows) == sorted(all_rows)
        else:
            assert len(split_rows) == len(all_rows)
    offline = b.ctl("windows", "--sightings", export, "--keys", zip_path, "--trust", f"e2e-ha:1={public}", check=True)
    assert [{k: v for k, v in w.items() if k != "transmissionRiskLevel"} for w in json.loads(offline.stdout)] == windows
    # Providing the same file twice in one call counts it once: the call's own figures.
    again = json.loads(b.ctl("keys", "provide", "--json", zip_path, zip_path, check=True).stdout)
    assert again["matchedKeys"] == 1 and again["windows"] == provided["windows"], again
    assert json.loads(b.ctl("windows", "--json", check=True).stdout) == windows
    # JSON key lists (as keys history --json and keys create write them): gaenctl passes them as
    # an unsigned export. B trusts a signing key, so it refuses them as it refuses any unsigned
    # export, and nothing changes...
    a_list = tmp_path / "a-keys.json"
    a_list.write_text(json.dumps(keys))
    refused = b.ctl("keys", "provide", a_list)
    assert refused.returncode == 1 and "UntrustedKeyFile" in refused.stderr, refused.stderr
    assert "JSON key list carries no signature" in refused.stderr, refused.stderr
    assert json.loads(b.ctl("windows", "--json", check=True).stdout) == windows
    # ...while A, which trusts no signing key, takes B's key list and matches it against what it heard.
    b_list = tmp_path / "b-keys.json"
    b_keys = b.keys()
    b_list.write_text(json.dumps(b_keys))
    assert a.status()["sightingCount"] > 0
    taken = a.ctl("keys", "provide", "--json", b_list, check=True)
    got = json.loads(taken.stdout)
    assert got["keys"] == len(b_keys) and got["matchedKeys"] == 1 and got["windows"] >= 1, got
    assert "a JSON key list, passed as an unsigned export" in taken.stderr
    expected = 40 + 20 * math.log10(1.5)  # free-space model, TX power in the AEM = controller's
    for w in windows:
        assert set(w) >= {"dateMillisSinceEpoch", "reportType", "infectiousness", "calibrationConfidence", "scanInstances"}
        assert w["dateMillisSinceEpoch"] % 86_400_000 == 0
        assert w["reportType"] == 1 and w["infectiousness"] == 1  # default data mapping
        for s in w["scanInstances"]:
            assert abs(s["typicalAttenuationDb"] - expected) <= 2, w
            assert s["minAttenuationDb"] <= s["typicalAttenuationDb"]
            assert 0 < s["secondsSinceLastScan"] <= 300
    text = b.ctl("windows", check=True).stdout
    assert "typical attenuation" in text

    # A corrupt key file over D-Bus: a named error, and the earlier windows stay.
    corrupt = tmp_path / "corrupt.zip"
    data = bytearray(zip_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    bad = b.ctl("keys", "provide", corrupt)
    assert bad.returncode == 1
    assert "org.gaend.Error.InvalidKeyFile" in bad.stderr or "org.gaend.Error.UntrustedKeyFile" in bad.stderr, bad.stderr
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip at all")
    bad = b.ctl("keys", "provide", garbage)
    assert bad.returncode == 1 and "org.gaend.Error.InvalidKeyFile" in bad.stderr, bad.stderr
    assert json.loads(b.ctl("windows", "--json", check=True).stdout) == windows

    # A file signed by an untrusted key is refused by a node that has trusted keys.
    unsigned = tmp_path / "unsigned.zip"
    (tmp_path / "other").mkdir()
    other_private, _ = signing_key(tmp_path / "other")
    a.ctl("keys", "history", "-o", unsigned, "--signing-key", other_private, "--key-id", "e2e-ha", check=True)
    bad = b.ctl("keys", "provide", unsigned)
    assert bad.returncode == 1 and "org.gaend.Error.UntrustedKeyFile" in bad.stderr, bad.stderr

    # The stores, read as bytes, hold none of the TEKs or RPIs in clear.
    rows = [l.split(",") for l in b.export("csv").splitlines()[1:]]
    rpis = {bytes.fromhex(x[1]) for x in rows if x[1]}
    assert rpis
    teks = {bytes.fromhex(k["keyData"]) for k in keys}
    for node in (a, b):
        blob = store_bytes(node)
        for secret in teks | rpis:
            assert secret not in blob and secret.hex().encode() not in blob


def test_dbus_api_through_real_clients(radio, nodes):
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"])
    n.start()
    dest = ["org.gaend", "/org/gaend"]

    busctl = shutil.which("busctl")
    if busctl:
        out = subprocess.run([busctl, f"--address={n.bus.address}", "get-property", *dest,
                              "org.gaend.ExposureNotification1", "Enabled"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "b true"
    out = subprocess.run(["dbus-send", f"--bus={n.bus.address}", "--print-reply", "--dest=org.gaend", "/org/gaend",
                          "org.gaend.ExposureNotification1.Stop"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert n.status()["enabled"] is False and "inactive" in n.status()["status"]
    gdbus = shutil.which("gdbus")
    if gdbus:
        out = subprocess.run([gdbus, "call", "--address", n.bus.address, "--dest", "org.gaend", "--object-path", "/org/gaend",
                              "--method", "org.gaend.ExposureNotification1.Start"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    else:
        n.ctl("start", check=True)
    assert n.status()["enabled"] is True

    # Named errors for bad arguments, through dbus-send.
    out = subprocess.run(["dbus-send", f"--bus={n.bus.address}", "--print-reply", "--dest=org.gaend", "/org/gaend",
                          "org.gaend.Research1.ExportSightings", "int64:0"], capture_output=True, text=True)
    assert out.returncode != 0 and "org.freedesktop.DBus.Error.InvalidArgs" in out.stderr, out.stderr
    summaries_config = n.dir / "summaries.json"
    summaries_config.write_text(json.dumps({"attenuationBucketThresholdDb": [30, 50, 70], "attenuationBucketWeights": [1, 1, 0.5, 0],
                                            "reportTypeWeights": [0, 1, 1, 1, 1, 0], "infectiousnessWeights": [0, 1, 1]}))
    out = n.ctl("summaries", "--config", summaries_config, "--json", check=True)
    assert json.loads(out.stdout) == []

    # Markers and the research export.
    n.wait_scans(2, timeout=30)
    assert "recorded" in n.ctl("mark", "--label", "seated", "--distance", "1.5", check=True).stdout
    csv = n.export("csv").splitlines()
    assert csv[0] == "time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site,address"
    assert len(csv) >= 3  # empty scans are rows too
    lines = [json.loads(l) for l in n.export("jsonl").splitlines()]
    assert lines and all("scanStart" in x for x in lines)
    watched = n.ctl("sightings", "watch", "--json", "--count", "1", timeout=30)
    assert watched.returncode == 0 and "start" in json.loads(watched.stdout.splitlines()[0])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another uid")
def test_policy_denies_another_uid(radio, nodes, tmp_path):
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    bus = Bus(tmp_path / "sysbus", policy=True)
    try:
        n = nodes("n", r.ready["devices"]["n"]["connect"], bus=bus)
        n.start()
        get = ["dbus-send", f"--bus={bus.address}", "--print-reply", "--dest=org.gaend", "/org/gaend",
               "org.freedesktop.DBus.Properties.Get", "string:org.gaend.ExposureNotification1", "string:Enabled"]
        root = subprocess.run(get, capture_output=True, text=True)
        assert root.returncode == 0 and "boolean true" in root.stdout, root.stderr
        assert n.ctl("keys", "history", "--json").returncode == 0
        for call in (get, get[:5] + ["org.gaend.ExposureNotification1.GetTemporaryExposureKeyHistory"]):
            nobody = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *call],
                                    capture_output=True, text=True)
            assert nobody.returncode != 0 and "org.freedesktop.DBus.Error.AccessDenied" in nobody.stderr, nobody.stderr
    finally:
        bus.stop()


def test_restart_keeps_tek_and_sightings(radio, nodes):
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"])
    a.start()
    b.start()
    b.wait_scans(4)
    keys_before = a.keys()
    rows_before = b.export("csv").splitlines()[1:]
    assert any(row.split(",")[1] for row in rows_before), "B saw nothing"
    assert a.terminate() == 0 and b.terminate() == 0, a.stderr + b.stderr
    a.start()
    b.start()
    b.wait_scans(2)
    assert a.keys() == keys_before  # same day, same key
    rows_after = b.export("csv").splitlines()[1:]
    assert set(rows_before) <= set(rows_after)
    assert len(rows_after) > len(rows_before)


def test_kill9_during_writes_then_restart(radio, nodes):
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"],
              config="advertising:\n  interval_min_ms: 20\n  interval_max_ms: 27\nscanning:\n  mode: continuous\n  duration_seconds: 4\n"
                     "calibration:\n  tx_power: -20\n")
    a.start()
    b.start()
    b.wait_scans(3)
    for _ in range(2):
        time.sleep(0.7)
        b.kill9()
        b.start()
    b.wait_scans(2)
    rows = b.export("csv").splitlines()[1:]
    assert rows and any(row.split(",")[1] for row in rows)


def test_wrong_store_key_is_refused_and_leaves_the_store(radio, nodes, tmp_path):
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"])
    n.start()
    n.wait_scans(1, timeout=30)
    assert n.terminate() == 0
    # The database and its WAL hold the data; -shm is SQLite's shared-memory index, rebuilt
    # by any reader, so it is left out of the comparison.
    def data_files():
        return {p.name: p.read_bytes() for p in n.state.glob("store.sqlite*") if not p.name.endswith("-shm")}
    before = data_files()
    assert "store.sqlite" in before
    wrong = tmp_path / "wrong.key"
    fd = os.open(wrong, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32).hex().encode())
    os.close(fd)
    n.start(wait=False, key=wrong)
    assert n.proc.wait(20) == 1
    assert "wrong key" in n.stderr, n.stderr
    assert data_files() == before


def test_missing_controller_is_a_status_and_retried(radio, nodes, tmp_path):
    """A controller that is not there at start: gaend serves D-Bus, says controller-missing,
    and picks the controller up once it appears."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    host, port = r.tcp("n")
    r.ok(cmd="drop", device="n", refuse_seconds=4)
    n = nodes("n", f"tcp:{host}:{port}")
    n.start()
    assert "controller-missing" in n.status()["status"]
    # Status says why, as the journal does: the bring-up's own error, not a placeholder.
    text = n.ctl("status", check=True).stdout
    line = next(l for l in text.splitlines() if l.startswith("controller:"))
    assert f"tcp:{host}:{port}" in line and "not answering: " in line and "no answer yet" not in line, text
    assert "refused" in line.lower(), line
    assert wait_for(lambda: "active" in n.status()["status"], 20, 0.5), n.status()
    n.wait_scans(1, timeout=30)
    line = next(l for l in n.ctl("status", check=True).stdout.splitlines() if l.startswith("controller:"))
    assert "address" in line and "not answering" not in line, line


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_disk_full_is_reported_and_storing_resumes(radio, nodes, tmp_path):
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"])
    b.state.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(b.state)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        a.start()
        b.start()
        b.wait_scans(2)
        filler = b.state / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)  # fills the tmpfs
        assert wait_for(lambda: "storage-full" in b.status()["status"] or "storage-error" in b.status()["status"], 30, 0.5), b.status()
        adverts = b.status()["advertisementCount"]
        assert b.proc.poll() is None
        filler.unlink()
        assert wait_for(lambda: not ({"storage-full", "storage-error"} & set(b.status()["status"])), 30, 0.5), b.status()
        assert b.status()["advertisementCount"] >= adverts
        rows = b.export("csv").splitlines()[1:]
        scans = {row.split(",")[4] for row in rows}
        assert len(scans) >= b.status()["scanCount"] - 1  # at most the scan in progress is missing
    finally:
        for n in (a, b):
            n.close()
        subprocess.run(["umount", "-l", str(b.state)], capture_output=True)


def test_systemd_notify_ready_and_watchdog(radio, nodes):
    """Type=notify: READY=1 once D-Bus is served, WATCHDOG=1 at half of WATCHDOG_USEC,
    STOPPING=1 on SIGTERM (the notify socket protocol, a datagram per message)."""
    import socket
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"])
    directory = Path(tempfile.mkdtemp(prefix="gaend-notify-"))  # short path: sun_path is 108 bytes
    path = directory / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.2)
    env = dict(os.environ, NOTIFY_SOCKET=str(path), WATCHDOG_USEC="1000000")
    messages: list[str] = []

    def drain():
        try:
            while True:
                messages.append(sock.recv(4096).decode())
        except socket.timeout:
            pass
    try:
        n.start(env=env)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            drain()
        assert n.terminate() == 0
        drain()
    finally:
        sock.close()
        shutil.rmtree(directory, ignore_errors=True)
    assert any("READY=1" in m for m in messages), messages
    assert sum("WATCHDOG=1" in m for m in messages) >= 5, messages  # every 0.5 s
    assert any("STOPPING=1" in m for m in messages), messages


def test_a_service_manager_that_stops_reading_never_stalls_gaend(radio, nodes):
    """The notify socket's receiver stops reading (a stalled or busy service manager: its queue
    holds 10 datagrams): gaend's watchdog feeds fail at once instead of blocking its threads,
    so it still answers callers and stops on SIGTERM within the unit's TimeoutStopSec (15 s).
    With blocking sends its threads hung in sendto and SIGTERM left it running."""
    import socket
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}])
    n = nodes("n", r.ready["devices"]["n"]["connect"])
    directory = Path(tempfile.mkdtemp(prefix="gaend-stall-"))  # short path: sun_path is 108 bytes
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(directory / "notify"))
    try:
        # Fed every 0.1 s, read never: the queue is full within a second.
        n.start(env=dict(os.environ, NOTIFY_SOCKET=str(directory / "notify"), WATCHDOG_USEC="200000"))
        time.sleep(3)
        for _ in range(3):
            assert n.ctl("status", "--json", timeout=10).returncode == 0
        n.proc.send_signal(signal.SIGTERM)
        assert n.proc.wait(15) == 0
    finally:
        sock.close()
        shutil.rmtree(directory, ignore_errors=True)


def test_ready_only_once_the_controller_is_held_or_found_missing(radio, nodes):
    """READY=1 reaches systemd only after the controller's first bring-up has ended (gaend@ is
    ordered before bluetooth.service, which must not take the controller first): when it
    arrives, gaend has already logged the controller up, or, when the controller leaves its
    Reset unanswered (the 2 s command timeout), logged it missing; the status then says which."""
    import socket
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0"}, {"name": "m", "transport": "tcp-server:127.0.0.1:0"}])
    # m answers no HCI Reset at all: every bring-up fails after its command timeout.
    r.ok(cmd="no_reply", device="m", opcode="0x0c03", count=1000)
    directory = Path(tempfile.mkdtemp(prefix="gaend-ready-"))  # short path: sun_path is 108 bytes
    try:
        for device, logged, status in (("n", "controller up", "serving on D-Bus; controller held"),
                                       ("m", "controller not available", "serving on D-Bus; controller missing, retrying")):
            node = nodes(device, r.ready["devices"][device]["connect"])
            path = directory / device
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(path))
            sock.settimeout(60)
            try:
                node.start(wait=False, env=dict(os.environ, NOTIFY_SOCKET=str(path)))
                message = ""
                while "READY=1" not in message:
                    message = sock.recv(4096).decode()
                # Read at once: the log line must be written before READY was sent (with READY
                # sent at the bus's export it came 2 s before the m's timeout was logged).
                log = node.stderr
            finally:
                sock.close()
            assert logged in log, f"READY=1 before '{logged}' was logged: {log}"
            assert f"STATUS={status}" in message, message
            held = "controller-missing" not in node.status()["status"]
            assert held == (device == "n"), node.status()
            assert node.terminate() == 0
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_controller_lost_and_back(radio, nodes):
    """The controller's link drops (and refuses connections for a while): status says so, the
    session reconnects, advertising is restored and scans go on."""
    r = two_radios(radio)
    a = nodes("a", r.ready["devices"]["a"]["connect"])
    b = nodes("b", r.ready["devices"]["b"]["connect"])
    a.start()
    b.start()
    b.wait_scans(2)
    r.ok(cmd="drop", device="a", refuse_seconds=3)
    assert wait_for(lambda: {"controller-error", "controller-missing"} & set(a.status()["status"]), 5, 0.2), a.status()
    assert wait_for(lambda: "active" in a.status()["status"], 30, 0.5), a.status()
    assert r.state("a")["advertising"], r.state("a")  # restored on the new connection
    seen = b.status()["sightingCount"]
    assert wait_for(lambda: b.status()["sightingCount"] > seen, 20, 0.5)
    scans = a.status()["scanCount"]
    a.wait_scans(scans + 2, timeout=20)
