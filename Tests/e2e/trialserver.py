"""The trial server for the tests: Debian's nginx started on 127.0.0.1 (a free port) under a
temporary prefix, with the repository's own configuration (deploy/server/nginx): the shipped
server block and every locations/*.conf, their paths moved into the prefix."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import REPO, wait_for

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
FAKETIME_LIBS = [Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
                 Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1")]
FAKETIME = next((p for p in FAKETIME_LIBS if p.exists()), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_MONOTONIC_TIMERS: Path | None = None


def monotonic_timers() -> Path:
    """faketime/monotonic_timers.c, built once per test run: preloaded before libfaketime so that
    monotonic timers stay real (libfaketime alone moves every absolute timerfd deadline by its
    offset, and Swift's sleeps then wait far too long or never wake)."""
    global _MONOTONIC_TIMERS
    if _MONOTONIC_TIMERS is None:
        out = Path(tempfile.mkdtemp(prefix="gaend-faketime-")) / "monotonic_timers.so"
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(out),
                        str(Path(__file__).parent / "faketime" / "monotonic_timers.c"), "-ldl"], check=True)
        _MONOTONIC_TIMERS = out
    return _MONOTONIC_TIMERS


def faketime_env(offset_file: Path) -> dict:
    """An environment whose wall clock is offset by the seconds in `offset_file` (libfaketime)."""
    return {**os.environ, "LD_PRELOAD": f"{monotonic_timers()} {FAKETIME}", "FAKETIME_TIMESTAMP_FILE": str(offset_file),
            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


class TrialServer:
    def __init__(self, tmp: Path, boards: dict[str, str], env: dict | None = None, extra_locations: str = "") -> None:
        self.prefix = tmp / "nginx"
        self.srv = tmp / "srv"          # /var/lib/gaend-trial
        self.conf = self.prefix / "gaend-trial"  # /etc/nginx/gaend-trial
        for d in (self.prefix / "logs", self.srv / "inbox", self.srv / "www", self.srv / "upload-tmp", self.conf / "locations"):
            d.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.keys_url = self.url + "/keys"
        self.tree = self.srv / "www" / "keys"
        shipped = REPO / "deploy" / "server" / "nginx"

        def moved(text: str) -> str:
            return text.replace("/var/lib/gaend-trial", str(self.srv)).replace("/etc/nginx/gaend-trial", str(self.conf))

        server = moved((shipped / "gaend-trial.conf").read_text())
        lines = []
        for line in server.splitlines():
            s = line.strip()
            if s.startswith("listen "):
                if "[::]" in s:
                    continue
                line = f"    listen 127.0.0.1:{self.port};"
            if s.startswith("ssl_certificate"):
                continue
            lines.append(line)
        (self.conf / "gaend-trial.conf").write_text("\n".join(lines) + "\n")
        for f in (shipped / "locations").glob("*.conf"):
            (self.conf / "locations" / f.name).write_text(moved(f.read_text()))
        if extra_locations:
            (self.conf / "locations" / "zz-test.conf").write_text(extra_locations)
        htpasswd = []
        for user, password in boards.items():
            h = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=password, capture_output=True, text=True, check=True)
            htpasswd.append(f"{user}:{h.stdout.strip()}")
        (self.conf / "boards.htpasswd").write_text("\n".join(htpasswd) + "\n")
        user = "user root;\n" if os.geteuid() == 0 else ""
        # nginx clears its workers' environment but for the variables named here: libfaketime's.
        if env:
            user += "".join(f"env {k};\n" for k in ("LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE", "FAKETIME_NO_CACHE", "FAKETIME_DONT_FAKE_MONOTONIC"))
        temp = self.prefix / "tmp"
        (self.prefix / "nginx.conf").write_text(f"""{user}worker_processes 1;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/logs/error.log info;
events {{ worker_connections 64; }}
http {{
    log_format gaend_test '$connection $status $request_uri';
    access_log {self.prefix}/logs/access.log gaend_test;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    limit_req_zone $binary_remote_addr zone=gaend_test:1m rate=30r/m;
    include {self.conf}/gaend-trial.conf;
}}
""")
        temp.mkdir(exist_ok=True)
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        args = [NGINX, "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf"), "-g", "daemon off;"]
        check = subprocess.run(args[:-2] + ["-t"], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        # libfaketime hides a program's arguments when it is the first process it is preloaded into: one exec between.
        self.proc = subprocess.Popen((["nice", "-n", "0"] if self.env else []) + args, env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(self.prefix / "logs" / "stderr.log", "w"))
        assert wait_for(self._up, 15, 0.1), (self.prefix / "logs" / "error.log").read_text()

    def _up(self) -> bool:
        try:
            urllib.request.urlopen(self.url + "/", timeout=1)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    def reload(self) -> None:
        assert self.proc is not None
        subprocess.run([NGINX, "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf"), "-s", "reload"], check=True,
                       env=self.env, capture_output=True)
        time.sleep(0.5)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def requests(self) -> list[tuple[int, int, str]]:
        """(connection number, status, URI) of every request so far, from the access log."""
        out = []
        for line in (self.prefix / "logs" / "access.log").read_text().splitlines():
            c, status, uri = line.split(" ", 2)
            out.append((int(c), int(status), uri))
        return out

    def put(self, path: str, data: bytes, user: str, password: str) -> int:
        import base64
        req = urllib.request.Request(self.url + path, data=data, method="PUT",
                                     headers={"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()})
        try:
            return urllib.request.urlopen(req, timeout=5).status
        except urllib.error.HTTPError as e:
            return e.code
