"""`gaenctl trial provision` on a 20-board inventory: what it writes is accepted by the real
programs that will read it (nginx -t and a running nginx with TLS from a private CA, promtool
check config, amtool check-config), and running it again changes nothing."""

from __future__ import annotations

import base64
import os
import re
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, wait_for
from trialserver import NGINX, TrialServer, free_port

PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")


def make_ca(d: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1 signed by it."""
    ca_key, ca, key, csr, cert = d / "ca.key", d / "ca.pem", d / "server.key", d / "server.csr", d / "server.pem"
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(ca_key),
        "-out", str(ca), "-days", "2", "-subj", "/CN=gaend test trial CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(csr),
        "-subj", "/CN=127.0.0.1")
    ext = d / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
        "-days", "2", "-extfile", str(ext))
    return ca, cert, key


def inventory(d: Path, boards: int, cert: Path, key: Path, webhook: str = "http://127.0.0.1:9/hook") -> Path:
    lines = [
        "trial: e2e-trial",
        "time_zone: Europe/Berlin",
        "server:",
        "  name: trial.example.org",
        "  url: https://127.0.0.1",
        "  ca: ca.pem",
        f"  tls_certificate: {cert}",
        f"  tls_key: {key}",
        "alerting:",
        f"  webhook: {webhook}",
        "defaults:",
        "  consent: yes",
        "boards:",
    ]
    for i in range(1, boards + 1):
        lines += [f"  - name: board{i:02d}", f"    site: bus {i % 5}", f"    position: seat {i}", f"    host: 10.0.0.{i}"]
    p = d / "inventory.yml"
    p.write_text("\n".join(lines) + "\n")
    return p


def provision(bin_dir: Path, inv: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "gaenctl"), "trial", "provision", str(inv), "--out", str(out), "--deploy", str(REPO / "deploy")],
                          capture_output=True, text=True, timeout=120)


def snapshot(out: Path) -> dict[str, tuple[int, bytes, int]]:
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def provisioned(tmp_path, bin_dir):
    ca, cert, key = make_ca(tmp_path)
    inv = inventory(tmp_path, 20, cert, key)
    out = tmp_path / "out"
    first = provision(bin_dir, inv, out)
    assert first.returncode == 0, first.stderr
    return tmp_path, inv, out, first


def test_twenty_boards_written_once(provisioned, bin_dir):
    tmp, inv, out, first = provisioned
    assert first.stdout.strip().splitlines()[-1].startswith("20 boards: ")
    for i in range(1, 21):
        b = out / "boards" / f"board{i:02d}"
        assert (b / "app-password").stat().st_mode & 0o777 == 0o600
        assert f'node: "board{i:02d}"' in (b / "gaend.conf").read_text()
        env = (b / "app.env").read_text()
        assert f"BOARD=board{i:02d}\n" in env and "HTTP_OPTIONS=--cacert /etc/gaend/trial-ca.pem\n" in env
        assert (b / "trial-ca.pem").read_text() == (tmp / "ca.pem").read_text()
    assert out.stat().st_mode & 0o777 == 0o700
    assert len((out / "server/nginx/boards.htpasswd").read_text().splitlines()) == 20
    before = snapshot(out)

    # Again, unchanged inventory: nothing written, every byte and time kept.
    again = provision(bin_dir, inv, out)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"20 boards: 0 files written, {len(before)} unchanged"
    assert snapshot(out) == before

    # One board's site changes: that board's gaend.conf and the placement plan, nothing else.
    inv.write_text(inv.read_text().replace("    site: bus 3\n    position: seat 3\n", "    site: depot\n    position: seat 3\n", 1))
    changed = provision(bin_dir, inv, out)
    assert changed.returncode == 0, changed.stderr
    assert sorted(line.split(" ", 1)[1] for line in changed.stdout.splitlines() if line.startswith("wrote ")) \
        == ["boards/board03/gaend.conf", "placement.csv"]
    after = snapshot(out)
    assert after["boards/board03/app-password"] == before["boards/board03/app-password"]
    assert after[ "server/nginx/boards.htpasswd"] == before["server/nginx/boards.htpasswd"]


def exec_starts(unit: Path) -> list[str]:
    """The unit's ExecStart= commands, continuation lines joined."""
    text = unit.read_text().replace("\\\n", " ")
    return [line.split("=", 1)[1].lstrip("-") for line in text.splitlines() if line.startswith("ExecStart=")]


def test_units_take_trial_options_where_gaenctl_takes_the_trial_clock(provisioned, bin_dir):
    """Every shipped unit running a gaenctl command that accepts --trial-clock (asked of the
    built gaenctl's --help) passes $TRIAL_OPTIONS, and no other does; every variable a unit
    expands from app.env or publish.env is one the provisioned file sets (systemd would expand
    a missing one to nothing, silently)."""
    _, _, out, _ = provisioned
    env_files = {"/etc/gaend/app.env": out / "boards/board01/app.env", "/etc/gaend-trial/publish.env": out / "server/publish.env"}
    takers = []
    for unit in sorted([*(REPO / "systemd").glob("*.service"), *(REPO / "deploy/server/systemd").glob("*.service")]):
        text = unit.read_text()
        env = next((env_files[f] for f in env_files if f"EnvironmentFile={f}\n" in text), None)
        for command in exec_starts(unit):
            words = command.split()
            if not words[0].endswith("/gaenctl"):
                continue
            sub = [w for w in words[1:3] if not w.startswith("-")]
            help_text = subprocess.run([str(bin_dir / "gaenctl"), *sub, "--help"], capture_output=True, text=True, timeout=30).stdout
            assert "USAGE" in help_text.upper(), (unit.name, sub, help_text)
            takes = "--trial-clock" in help_text
            assert ("$TRIAL_OPTIONS" in words) == takes, (unit.name, " ".join(sub), takes)
            if takes:
                takers.append(f"{unit.name}: {' '.join(sub)}")
                assert env is not None, f"{unit.name}: no provisioned environment file for $TRIAL_OPTIONS"
            if env is not None:
                names = {line.split("=", 1)[0] for line in env.read_text().splitlines() if "=" in line and not line.startswith("#")}
                used = set(re.findall(r"\$\{?([A-Z_]+)\}?", command)) - {"CREDENTIALS_DIRECTORY"}
                assert used <= names, (unit.name, sorted(used - names))
    # The units this is about, so that a renamed command cannot make the check vacuous.
    assert sorted(takers) == ["gaend-app@.service: app submit", "gaend-app@.service: app sync", "gaend-collect@.service: collect",
                      "gaend-outcomes@.service: collect", "gaend-publish.service: keys publish"], takers
    for env in env_files.values():
        assert "\nTRIAL_OPTIONS=\n" in env.read_text()
    assert "\nTRIAL_OPTIONS=\n" in (REPO / "deploy/server/publish.env").read_text()


def test_a_bad_inventory_writes_nothing(tmp_path, bin_dir):
    inv = tmp_path / "inventory.yml"
    inv.write_text("trial: t\ntime_zone: UTC\nserver: {name: s, url: https://s}\nalerting: {webhook: http://h/}\n"
                   "boards:\n  - {name: board.1, site: a, consent: yes}\n")
    r = provision(bin_dir, inv, tmp_path / "out")
    assert r.returncode == 1 and "line 6" in r.stderr and "board name" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def nginx_prefix(tmp: Path, out: Path, port: int) -> tuple[Path, Path]:
    """The provisioned site under a temporary prefix, as Tests/e2e/trialserver.py runs the
    shipped one: the two install paths moved, the listen lines on loopback with TLS kept."""
    prefix, srv = tmp / "nginx", tmp / "srv"
    for d in (prefix / "logs", prefix / "tmp", srv / "inbox", srv / "www" / "keys", srv / "upload-tmp", srv / "collect"):
        d.mkdir(parents=True, exist_ok=True)
    conf = prefix / "gaend-trial"
    shutil.copytree(out / "server" / "nginx", conf)

    def moved(text: str) -> str:
        return text.replace("/var/lib/gaend-trial", str(srv)).replace("/etc/nginx/gaend-trial", str(conf))

    site = []
    for line in moved((conf / "gaend-trial.conf").read_text()).splitlines():
        if line.strip().startswith("listen "):
            if "[::]" in line:
                continue
            line = f"    listen 127.0.0.1:{port} ssl;"
        site.append(line)
    (conf / "gaend-trial.conf").write_text("\n".join(site) + "\n")
    for f in (conf / "locations").glob("*.conf"):
        f.write_text(moved(f.read_text()))
    user = "user root;\n" if os.geteuid() == 0 else ""
    (prefix / "nginx.conf").write_text(f"""{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {prefix}/logs/access.log;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    include {conf}/gaend-trial.conf;
}}
""")
    return prefix, srv


def test_nginx_accepts_and_serves_the_provisioned_site(provisioned):
    tmp, _, out, _ = provisioned
    port = free_port()
    prefix, srv = nginx_prefix(tmp, out, port)
    args = [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
    check = subprocess.run(args + ["-t"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert "test is successful" in check.stderr
    proc = subprocess.Popen(args + ["-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The boards' TLS: the server's certificate checked against the inventory's private CA only.
        ctx = ssl.create_default_context(cafile=str(out / "boards" / "board07" / "trial-ca.pem"))

        def put(path: str, user: str | None, password: str | None) -> tuple[int, str]:
            headers = {}
            if user is not None:
                headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", data=b"PK", method="PUT", headers=headers)
            try:
                r = urllib.request.urlopen(req, timeout=5, context=ctx)
                return r.status, ""
            except urllib.error.HTTPError as e:
                return e.code, e.headers.get("WWW-Authenticate", "")

        def up() -> bool:
            try:
                return put("/inbox/board07/x.zip", None, None)[0] > 0
            except OSError:
                return False

        assert wait_for(up, 15, 0.1), (prefix / "logs" / "error.log").read_text()
        pw = (out / "boards" / "board07" / "app-password").read_text().strip()
        other = (out / "boards" / "board08" / "app-password").read_text().strip()
        assert put("/inbox/board07/keys-1.zip", "board07", pw)[0] == 201
        assert (srv / "inbox" / "board07" / "keys-1.zip").read_bytes() == b"PK"
        assert put("/inbox/board07/keys-2.zip", "board08", other)[0] == 403
        assert put("/inbox/board07/keys-2.zip", "board07", other)[0] == 401
        # No credentials: auth's challenge (401 with WWW-Authenticate), not a 403 from the board check.
        status, challenge = put("/inbox/board07/keys-2.zip", None, None)
        assert status == 401 and challenge.startswith("Basic"), (status, challenge)
        status, challenge = put("/collect/board=board07/day=2026-11-20/sightings.csv", None, None)
        assert status == 401 and challenge.startswith("Basic"), (status, challenge)
        assert put("/collect/board=board07/day=2026-11-20/sightings.csv", "board07", pw)[0] == 201
        assert put("/collect/board=board08/day=2026-11-20/sightings.csv", "board07", pw)[0] == 403
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package prometheus; scripts/setup.sh)")
def test_promtool_accepts_the_prometheus_config(provisioned):
    _, _, out, _ = provisioned
    r = subprocess.run([PROMTOOL, "check", "config", str(out / "server/prometheus/prometheus.yml")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 1 rule files found" in r.stdout + r.stderr


def test_promtool_refuses_a_broken_target_file(provisioned):
    """The check reads the file_sd targets: it fails when they are broken."""
    if PROMTOOL is None:
        pytest.skip("promtool not installed")
    _, _, out, _ = provisioned
    (out / "server/prometheus/gaend-boards.json").write_text('[{"targets": "not a list"}]\n')
    r = subprocess.run([PROMTOOL, "check", "config", str(out / "server/prometheus/prometheus.yml")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0


@pytest.mark.skipif(AMTOOL is None, reason="amtool not installed (Debian package prometheus-alertmanager; scripts/setup.sh)")
def test_amtool_accepts_the_alertmanager_config(provisioned):
    _, _, out, _ = provisioned
    path = out / "server/alertmanager/alertmanager.yml"
    r = subprocess.run([AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout and "1 receivers" in r.stdout, r.stdout
    # amtool can fail: a route to a receiver that does not exist.
    path.write_text(path.read_text().replace("receiver: trial-e2e-trial", "receiver: nobody", 1))
    assert subprocess.run([AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=60).returncode != 0


def test_plain_server_challenges_an_unauthenticated_put(tmp_path):
    """The shipped configuration as the other tests run it (plain HTTP): no credentials get 401
    with a challenge, another board's folder 403, a wrong password 401."""
    server = TrialServer(tmp_path, {"board-a": "pa", "board-b": "pb"})
    try:
        assert server.put("/inbox/board-a/x.zip", b"PK", "board-a", "pa") == 201
        req = urllib.request.Request(server.url + "/inbox/board-a/y.zip", data=b"PK", method="PUT")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 401 and e.value.headers.get("WWW-Authenticate", "").startswith("Basic")
        assert server.put("/inbox/board-b/y.zip", b"PK", "board-a", "pa") == 403
        assert server.put("/inbox/board-a/y.zip", b"PK", "board-a", "wrong") == 401
    finally:
        server.stop()
