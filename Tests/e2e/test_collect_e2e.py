"""Collection through a real nginx (WebDAV PUT, per-board basic authentication, the shipped
deploy/server/nginx/locations/collect.conf) on 127.0.0.1: three gaend nodes on the virtual
radio, `gaenctl collect` (two days ahead under libfaketime, so that the nodes' days are
closed) ships each node's days; one upload is cut in the middle (the process killed) and the next run completes it; a
day is sent again. The collected tree's rows per board and day equal each node's own
`sightings export --split daily`, `gaenctl trial verify` finds every day complete, and
`trial report` over the tree agrees with the DuckDB recipe (tools/duckdb/trial_report.sql)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, wait_for
from test_clock_steps_e2e import FAKETIME
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (nodes is a fixture)

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
POSITIONS = {"a": 0.0, "b": 1.5, "c": 3.0}

pytestmark = [
    pytest.mark.skipif(NGINX is None, reason="nginx not installed (scripts/setup.sh installs nginx)"),
    pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx with a minimal http block that includes the shipped collect.conf (its paths, the
    trial's data directory and the boards' password file, moved into the test's directory)."""

    def __init__(self, tmp: Path, users: dict[str, str]) -> None:
        self.dir = tmp / "nginx"
        self.root = self.dir / "srv"
        for d in ("locations", "srv/upload-tmp", "body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.dir / d).mkdir(parents=True, exist_ok=True)
        shipped = (REPO / "deploy/server/nginx/locations/collect.conf").read_text()
        assert "/var/lib/gaend-trial" in shipped and "/etc/nginx/gaend-trial/boards.htpasswd" in shipped
        (self.dir / "locations/collect.conf").write_text(
            shipped.replace("/var/lib/gaend-trial", str(self.root))
                   .replace("/etc/nginx/gaend-trial/boards.htpasswd", str(self.dir / "htpasswd")))
        lines = []
        for user, password in users.items():
            hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=password, capture_output=True, text=True, check=True)
            lines.append(f"{user}:{hashed.stdout.strip()}")
        (self.dir / "htpasswd").write_text("\n".join(lines) + "\n")
        self.port = free_port()
        user = "user root;\n" if os.geteuid() == 0 else ""
        (self.dir / "nginx.conf").write_text(f"""{user}worker_processes 1;
daemon off;
pid {self.dir / 'nginx.pid'};
error_log {self.dir / 'error.log'} info;
events {{}}
http {{
    access_log {self.dir / 'access.log'};
    client_body_temp_path {self.dir / 'body'};
    proxy_temp_path {self.dir / 'proxy'};
    fastcgi_temp_path {self.dir / 'fastcgi'};
    uwsgi_temp_path {self.dir / 'uwsgi'};
    scgi_temp_path {self.dir / 'scgi'};
    server {{
        listen 127.0.0.1:{self.port};
        include {self.dir / 'locations'}/*.conf;
    }}
}}
""")
        self.proc = subprocess.Popen([NGINX, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-e", str(self.dir / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=open(self.dir / "stderr", "w"))

        def up() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except OSError:
                return False
        assert wait_for(up, 20, 0.1), (self.dir / "stderr").read_text()
        self.url = f"http://127.0.0.1:{self.port}/collect/"

    @property
    def collected(self) -> Path:
        return self.root / "collect"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


class Later:
    """`gaenctl collect` two days ahead (libfaketime on gaenctl alone, which only reads the
    time): every day the nodes recorded, today's included, is closed for it. gaend itself runs
    on the real clock."""

    def __init__(self, directory: Path) -> None:
        self.file = directory / "faketime-collect"
        self.file.write_text(f"{2 * 86400:+d}\n")

    def env(self) -> dict:
        return {**os.environ, "LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def rows_per_day(tree: Path, board: str) -> dict[str, int]:
    out = {}
    for f in sorted(tree.glob(f"board={board}/day=*/sightings.csv")):
        with open(f) as fh:
            out[f.parent.name.removeprefix("day=")] = sum(1 for _ in fh) - 1
    return out


def test_collect_three_boards_through_nginx(radio, nodes, bin_dir, tmp_path):
    r = radio([{"name": n, "transport": "tcp-server:127.0.0.1:0", "x": x, "tx_power": TX_POWER} for n, x in POSITIONS.items()],
              # Some shadowing noise: a noiseless channel fits exactly, and the recipe's sigma of
              # zero residuals is NaN where the report prints 0.000.
              channel={"sigma": 3.0, "loss": 0.0})
    later = Later(tmp_path)
    passwords = {name: os.urandom(12).hex() for name in POSITIONS}
    server = Nginx(tmp_path, passwords)
    try:
        fleet = {name: nodes(name, r.ready["devices"][name]["connect"]) for name in POSITIONS}
        for n in fleet.values():
            n.start()
        # Ground truth: each receiver's distance to each transmitter.
        for name, n in fleet.items():
            for other, x in POSITIONS.items():
                if other != name:
                    n.ctl("mark", "--label", f"pair:{name}/{other}", "--distance", abs(x - POSITIONS[name]), check=True)
        for n in fleet.values():
            n.wait_scans(8)
        for n in fleet.values():
            n.ctl("stop", check=True)
        keys = tmp_path / "keys"
        keys.mkdir()
        own = {}
        for name, n in fleet.items():
            (keys / f"{name}.json").write_text(json.dumps(n.keys()))
            n.ctl("sightings", "export", "--split", "daily", "--dir", tmp_path / f"own-{name}", check=True)
            own[name] = rows_per_day(tmp_path / f"own-{name}", name)
            assert own[name] and all(v > 0 for v in own[name].values()), own
        days = sorted(own["a"])

        def collect(name: str, *extra, wait: bool = True):
            n = fleet[name]
            pw = tmp_path / f"{name}.password"
            pw.write_text(passwords[name] + "\n")
            # One exec before gaenctl: libfaketime hides a Swift program's arguments otherwise.
            args = ["nice", "-n", "0", str(bin_dir / "gaenctl"), "collect", "--bus", n.bus.address, "--server", server.url,
                    "--password-file", str(pw), "--spool", str(tmp_path / f"spool-{name}"), *map(str, extra)]
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=later.env())
            if not wait:
                return p
            out, err = p.communicate(timeout=120)
            return p.returncode, out, err

        # Board a's first upload is cut in the middle: at 200 bytes/s its first day's sightings
        # take many seconds; the process is killed meanwhile.
        cut = collect("a", "--limit-rate", 200, wait=False)
        spool_a = tmp_path / "spool-a" / "pending"
        assert wait_for(lambda: len(list(spool_a.glob("board=a/day=*/MANIFEST.sha256"))) == len(days), 60, 0.2), \
            cut.communicate() if cut.poll() is not None else "still running"
        time.sleep(2)
        assert cut.poll() is None, cut.communicate()
        cut.send_signal(signal.SIGKILL)
        cut.wait(10)
        # Nothing partial on the server: a file there is a whole file sent, and no day has its
        # manifest, so no day counts as complete.
        for p in server.collected.glob("board=a/day=*/*"):
            assert p.name != "MANIFEST.sha256", p
            assert p.read_bytes() == (spool_a / p.parent.parent.name / p.parent.name / p.name).read_bytes(), f"partial {p}"
        assert sorted(p.name for p in spool_a.glob("board=a/day=*")) == [f"day={d}" for d in days]

        # Every board ships; a's run resumes where the cut one stopped.
        for name in POSITIONS:
            code, out, err = collect(name)
            assert code == 0, err
            assert out.splitlines() == [f"shipped board={name}/day={d} (5 files)" for d in sorted(own[name])], out + err
            assert not list((tmp_path / f"spool-{name}" / "pending").glob("board=*/day=*")), "shipped days stay in the spool"
        # A second run has nothing to send.
        code, out, err = collect("b")
        assert code == 0 and out == "", out + err

        # A day sent again replaces its files: no duplicate rows.
        before = rows_per_day(server.collected, "b")
        code, out, err = collect("b", "--resend", days[0])
        assert code == 0 and out.splitlines() == [f"shipped board=b/day={days[0]} (5 files)"], out + err
        assert rows_per_day(server.collected, "b") == before

        # The server's check: every day complete, against its manifest.
        verify = subprocess.run([str(bin_dir / "gaenctl"), "trial", "verify", "--strict", "--json", str(server.collected)],
                                capture_output=True, text=True, timeout=60)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        v = json.loads(verify.stdout)
        assert len(v["complete"]) == sum(len(d) for d in own.values()) and v["incomplete"] == [] and v["corrupt"] == {}, v
        assert subprocess.run(["sha256sum", "-c", "--quiet", "MANIFEST.sha256"],
                              cwd=server.collected / f"board=c/day={days[-1]}").returncode == 0

        # Row counts per board and day equal each node's own export in the same layout.
        for name in fleet:
            assert rows_per_day(server.collected, name) == own[name]
            status = json.loads((server.collected / f"board={name}/day={days[0]}/status.json").read_text())
            assert status["node"] == name and status.get("currentRpi") is None and status["scanCount"] > 0
            calibration = json.loads((server.collected / f"board={name}/day={days[0]}/calibration.json").read_text())
            assert calibration["txPower"] == TX_POWER and calibration["node"] == name

        # A board may not write into another board's directory.
        probe = tmp_path / "probe.csv"
        probe.write_text("x\n")
        denied = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-T", str(probe), "-u", f"a:{passwords['a']}",
                                 f"{server.url}board=b/day={days[0]}/sightings.csv"], capture_output=True, text=True, timeout=30)
        assert denied.stdout == "403"

        # trial report and the DuckDB recipe run on the collected tree as it is, and agree.
        duckdb = pytest.importorskip("duckdb", reason="the pip package duckdb (tools/requirements.txt) is not installed")
        from test_duckdb_recipe import assert_matches_report, recipe
        sightings = sorted(str(p) for p in server.collected.glob("board=*/day=*/sightings.csv"))
        markers = sorted(str(p) for p in server.collected.glob("board=*/day=*/markers.csv"))
        report = tmp_path / "report"
        rep = subprocess.run([str(bin_dir / "gaenctl"), "trial", "report", "--sightings", *sightings, "--keys", *map(str, sorted(keys.glob("*.json"))),
                              "--markers", *markers, "--split", "daily", "--close-contact", "2", "-o", str(report)],
                             capture_output=True, text=True, timeout=300)
        assert rep.returncode == 0, rep.stderr
        attenuation = sorted(report.glob("attenuation/board=*/day=*/attenuation.csv"))
        assert attenuation
        fit, detection = recipe(f"read_csv('{report}/attenuation/*/*/attenuation.csv', header = true, union_by_name = true, all_varchar = true)")
        assert fit["count"] > 0
        assert_matches_report(report, fit, detection)
        con = duckdb.connect()
        counted = dict(con.execute(f"SELECT board, count(*) FROM read_csv('{server.collected}/*/*/sightings.csv', header = true, "
                                   f"hive_partitioning = true, all_varchar = true) GROUP BY board").fetchall())
        assert counted == {name: sum(rows_per_day(server.collected, name).values()) for name in POSITIONS}
    finally:
        server.stop()

