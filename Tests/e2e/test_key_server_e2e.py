"""The whole loop of a field trial (docs/key-server.md) with real nginx from Debian on
127.0.0.1 and three gaend nodes on the virtual radio: each board uploads its keys (WebDAV PUT,
per-board basic auth), the publisher builds both layouts, each board's app syncs, provides
and finds the other two boards' windows; gaenctl status shows the app's last sync, packages
and risk; the change to high risk is announced (journal entry, D-Bus signal, hook).

The server and the apps run one day ahead (libfaketime): the nodes' keys of today (trial mode)
have then expired and passed the embargo, so they are published, as they would be tomorrow."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wait_for
from keyserver import new_signing_key, read_package
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (the nodes fixture)
from trialserver import FAKETIME, TrialServer, faketime_env

SWISSCOVID_ANY_CONTACT = {"riskEngine": "swisscovid",
                          "parameters": {"attenuationThresholdLow": 55, "attenuationThresholdMedium": 63, "attenuationFactorLow": 1.0,
                                         "attenuationFactorMedium": 0.5, "minDurationForExposure": 0.01}}


def day_ahead_offset(directory: Path) -> tuple[Path, int]:
    """A libfaketime offset file putting the clock at tomorrow 03:10 UTC, and that moment."""
    now = time.time()
    target = int(now // 86400 * 86400 + 86400 + 3 * 3600 + 600)
    f = directory / "faketime"
    f.write_text(f"+{int(target - now)}\n")
    return f, target


class JournalSink:
    """A datagram socket standing in for journald's native socket."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "journal.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(0.1)

    def entries(self) -> list[dict]:
        out = []
        while True:
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, BlockingIOError):
                return out
            out.append(dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line))


@pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)")
def test_three_boards_the_whole_loop(radio, nodes, bin_dir, tmp_path):
    r = radio([{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER},
               {"name": "b", "transport": "tcp-server:127.0.0.1:0", "x": 1.5, "tx_power": TX_POWER},
               {"name": "c", "transport": "tcp-server:127.0.0.1:0", "x": 3.0, "tx_power": TX_POWER}],
              channel={"sigma": 0.0, "loss": 0.0})
    offset, fake_now = day_ahead_offset(tmp_path)
    env = faketime_env(offset)
    passwords = {f"board-{n}": os.urandom(12).hex() for n in "abc"}
    server = TrialServer(tmp_path, passwords, env=env)
    try:
        signing, signing_pem, public_pem = new_signing_key(tmp_path, "trial")
        boards = {}
        for n in "abc":
            node = nodes(n, r.ready["devices"][n]["connect"])
            node.start()
            boards[n] = node
        for node in boards.values():
            node.wait_scans(8, timeout=90)

        gaenctl = str(bin_dir / "gaenctl")
        # Each board uploads its own keys (consent yes); a wrong password and another board's
        # folder are refused by nginx.
        for n, node in boards.items():
            pw = tmp_path / f"{n}.password"
            pw.write_text(passwords[f"board-{n}"] + "\n")
            out = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "submit", "--server", server.url,
                                  "--user", f"board-{n}", "--password-file", str(pw), "--consent", "yes",
                                  "--state-dir", str(tmp_path / f"app-{n}")], capture_output=True, text=True, env=env, timeout=60)
            assert out.returncode == 0 and out.stdout.startswith("1 keys uploaded"), out.stderr
            again = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "submit", "--server", server.url,
                                    "--user", f"board-{n}", "--password-file", str(pw), "--consent", "yes",
                                    "--state-dir", str(tmp_path / f"app-{n}")], capture_output=True, text=True, env=env, timeout=60)
            assert again.stdout.startswith("0 keys uploaded"), again.stdout
        assert server.put("/inbox/board-a/x.zip", b"PK", "board-a", "wrong") == 401
        assert server.put("/inbox/board-b/x.zip", b"PK", "board-a", passwords["board-a"]) == 403
        uploads = sorted(p.relative_to(server.srv / "inbox") for p in (server.srv / "inbox").rglob("*.zip"))
        assert [str(p.parent) for p in uploads] == ["board-a", "board-b", "board-c"], uploads

        config = tmp_path / "app-config.json"
        config.write_text(json.dumps(SWISSCOVID_ANY_CONTACT))
        pub = subprocess.run([gaenctl, "keys", "publish", "--inbox", str(server.srv / "inbox"), "-o", str(server.tree),
                              "--signing-key", str(signing_pem), "--key-id", "TRIAL", "--key-version", "1", "--country", "DE",
                              "--region", "DE-TRIAL", "--min-keys", "1", "--app-config", str(config), "--now", str(fake_now)],
                             capture_output=True, text=True, check=True)
        assert pub.stdout.startswith("3 keys published"), pub.stdout

        journal = JournalSink(tmp_path)
        # As receivers listen (docs/dbus.md): the app's own name as the sender, so dbus-daemon
        # delivers the signal only from the connection that owns org.gaend.App1 when it sends.
        monitors = {n: subprocess.Popen(["dbus-monitor", "--address", node.bus.address,
                                         "type='signal',sender='org.gaend.App1',interface='org.gaend.App1',member='RiskChanged'"],
                                        stdout=open(tmp_path / f"monitor-{n}.out", "w"), stderr=subprocess.STDOUT)
                    for n, node in boards.items()}
        time.sleep(0.5)
        try:
            for n, node in boards.items():
                layout = ["--region", "DE-TRIAL"] if n == "c" else ["--country", "DE"]
                hook_out = tmp_path / f"hook-{n}.out"
                sync = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "sync", "--server", server.keys_url,
                                       *layout, "--trust", f"TRIAL:1={public_pem}", "--state-dir", str(tmp_path / f"app-{n}"),
                                       "--journal-socket", str(journal.path),
                                       "--hook", f"echo $GAEN_RISK_LEVEL $GAEN_RISK_ENGINE > {hook_out}"],
                                      capture_output=True, text=True, env=env, timeout=120)
                assert sync.returncode == 0, sync.stderr
                assert sync.stdout.strip().splitlines()[-1] == "1 new packages, 1 provided, 0 refused", sync.stdout + sync.stderr
                # The other two boards' keys matched (a board never hears itself).
                assert "3 keys" not in sync.stderr and "2 keys matched" in sync.stderr, sync.stderr
                windows = json.loads(node.ctl("windows", "--json", check=True).stdout)
                assert len(windows) >= 2, windows
                assert hook_out.read_text().split() == ["high", "swisscovid"]
                status = node.ctl("status", "--app-state", tmp_path / f"app-{n}", check=True).stdout
                assert "app last sync:" in status and "1 new, 1 provided, 0 refused" in status, status
                assert "app packages:   1 held, 1 provided, 0 waiting" in status, status
                assert "app risk:       high (swisscovid" in status, status
                js = json.loads(node.ctl("status", "--json", "--app-state", tmp_path / f"app-{n}", check=True).stdout)
                assert js["app"]["riskLevel"] == "high" and js["app"]["packagesHeld"] == 1 and js["app"]["lastSync"]["error"] == ""
                # A second run finds nothing new and announces nothing again.
                again = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "sync", "--server", server.keys_url,
                                        *layout, "--trust", f"TRIAL:1={public_pem}", "--state-dir", str(tmp_path / f"app-{n}"),
                                        "--journal-socket", str(journal.path)], capture_output=True, text=True, env=env, timeout=120)
                assert again.stdout.strip().splitlines()[-1] == "0 new packages, 0 provided, 0 refused", again.stdout + again.stderr
            entries = journal.entries()
            assert len(entries) == 3, entries
            assert all(e["MESSAGE_ID"] == "3f0c8a4e5b7d4c2a9e1f6b0d8c7a5e42" and e["GAEN_RISK_LEVEL"] == "high" for e in entries)
            time.sleep(0.5)
        finally:
            for m in monitors.values():
                m.terminate()
                m.wait(5)
        for n in boards:
            seen = (tmp_path / f"monitor-{n}.out").read_text()
            assert seen.count("member=RiskChanged") == 1 and 'string "high"' in seen, seen
    finally:
        server.stop()


@pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)")
def test_one_board_flooding_within_nginx_limits_stops_no_honest_key(radio, nodes, bin_dir, tmp_path):
    """Issue 29's first chain attack: one authenticated board (board-x) uploads 40 key files of
    18,000 keys each, every one under nginx's 64 KiB body limit (720,000 keys), beside three
    honest boards. The publisher's per-board budget keeps board-x to its 15 keys a day, every
    package stays within what the app and gaend accept, and in the next sync every board's app
    provides everything it fetched, refuses nothing, and matches the other two boards' keys."""
    import re
    import zipfile
    from bench_publisher_flood import _flood

    r = radio([{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER},
               {"name": "b", "transport": "tcp-server:127.0.0.1:0", "x": 1.5, "tx_power": TX_POWER},
               {"name": "c", "transport": "tcp-server:127.0.0.1:0", "x": 3.0, "tx_power": TX_POWER}],
              channel={"sigma": 0.0, "loss": 0.0})
    offset, fake_now = day_ahead_offset(tmp_path)
    env = faketime_env(offset)
    passwords = {f"board-{n}": os.urandom(12).hex() for n in "abcx"}
    server = TrialServer(tmp_path, passwords, env=env)
    try:
        signing, signing_pem, public_pem = new_signing_key(tmp_path, "trial")
        boards = {}
        for n in "abc":
            node = nodes(n, r.ready["devices"][n]["connect"])
            node.start()
            boards[n] = node
        for node in boards.values():
            node.wait_scans(8, timeout=90)
        gaenctl = str(bin_dir / "gaenctl")
        for n, node in boards.items():
            pw = tmp_path / f"{n}.password"
            pw.write_text(passwords[f"board-{n}"] + "\n")
            out = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "submit", "--server", server.url,
                                  "--user", f"board-{n}", "--password-file", str(pw), "--consent", "yes",
                                  "--state-dir", str(tmp_path / f"app-{n}")], capture_output=True, text=True, env=env, timeout=60)
            assert out.returncode == 0 and out.stdout.startswith("1 keys uploaded"), out.stderr
        # The flood, through nginx with board-x's own credentials: every upload accepted.
        staged = tmp_path / "flood-staging"
        files = _flood(staged, 720_000, fake_now)
        assert files == 40
        for i, p in enumerate(sorted(staged.rglob("*.zip"))):
            assert p.stat().st_size < 64 << 10
            code = server.put(f"/inbox/board-x/flood-{i:04}.zip", p.read_bytes(), "board-x", passwords["board-x"])
            assert code in (201, 204), code

        config = tmp_path / "app-config.json"
        config.write_text(json.dumps(SWISSCOVID_ANY_CONTACT))
        pub = subprocess.run([gaenctl, "keys", "publish", "--inbox", str(server.srv / "inbox"), "-o", str(server.tree),
                              "--signing-key", str(signing_pem), "--key-id", "TRIAL", "--key-version", "1", "--country", "DE",
                              "--region", "DE-TRIAL", "--min-keys", "1", "--app-config", str(config), "--now", str(fake_now)],
                             capture_output=True, text=True, timeout=300)
        assert pub.returncode == 0, pub.stderr
        published = int(pub.stdout.split()[0])
        # The three honest keys and at most board-x's budget of a day.
        assert 3 <= published <= 3 + 15, pub.stdout + pub.stderr
        # Every package within what the app (16 MiB) and gaend (32 MiB a file) accept.
        largest = max(zipfile.ZipFile(p).getinfo("export.bin").file_size
                      for p in server.tree.rglob("*") if p.is_file() and p.read_bytes()[:2] == b"PK" and "app_config" not in str(p))
        assert largest < 4 << 20, largest

        for n, node in boards.items():
            layout = ["--region", "DE-TRIAL"] if n == "c" else ["--country", "DE"]
            sync = subprocess.run(["nice", "-n", "0", gaenctl, "--bus", node.bus.address, "app", "sync", "--server", server.keys_url,
                                   *layout, "--trust", f"TRIAL:1={public_pem}", "--state-dir", str(tmp_path / f"app-{n}"),
                                   "--journal-socket", str(tmp_path / "no-journal")],
                                  capture_output=True, text=True, env=env, timeout=180)
            assert sync.returncode == 0, sync.stdout + sync.stderr
            m = re.match(r"(\d+) new packages, (\d+) provided, 0 refused$", sync.stdout.strip().splitlines()[-1])
            assert m and m.group(1) == m.group(2) and int(m.group(1)) >= 1, sync.stdout + sync.stderr
            # The other two boards' keys matched: windows of both.
            windows = json.loads(node.ctl("windows", "--json", check=True).stdout)
            assert len(windows) >= 2, (windows, sync.stderr)
    finally:
        server.stop()
