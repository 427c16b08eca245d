"""A rehearsed trial answers its own question: was each board's notification right. Three gaend
nodes on the virtual radio (a; b 1 m from it; c 3 km away, hearing nothing), the placement plan
written by `gaenctl trial provision` from the inventory (with a fourth board, d, that never
consented to collection), real nginx with the shipped locations on 127.0.0.1. Only a is
positive: its app uploads its keys; the publisher signs them; every board's app syncs and
computes its risk. Then `gaenctl collect --outcomes` ships each board's keys and app outcomes
(c first without consent: nothing leaves), and `gaenctl trial report --placement --collected`
judges each board: a TN, b TP, c TN, d missing for want of consent.

Server, apps and collection run a day ahead (libfaketime), as in test_key_server_e2e: the
nodes' keys of today have then expired and are published, and today is a closed day."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO
from keyserver import new_signing_key
from test_key_server_e2e import SWISSCOVID_ANY_CONTACT, day_ahead_offset
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (the nodes fixture)
from trialserver import FAKETIME, TrialServer, faketime_env

pytestmark = pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)")

POSITIONS = {"a": 0.0, "b": 1.0, "c": 3000.0}


def inventory(url: str, today: float) -> str:
    day = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    # b's position is a placement with times (a day either side of the test's days), the others' for the whole trial.
    return f"""trial: rehearsal
time_zone: UTC
server:
  name: trial.test
  url: {url}
alerting:
  webhook: http://127.0.0.1:9/hook
defaults:
  outcomes_consent: yes
boards:
  - name: a
    site: lab
    consent: yes
    x: 0
    y: 0
  - name: b
    site: lab
    consent: no
    placements:
      - {{from: "{day(today - 86400)}", to: "{day(today + 3 * 86400)}", x: 1.0, y: 0}}
  - name: c
    site: lab
    consent: no
    x: 3000
    y: 0
  - name: d
    site: lab
    consent: no
    outcomes_consent: no
    x: 0.5
    y: 0
"""


def test_rehearsed_trial_judges_each_board(radio, nodes, bin_dir, tmp_path):
    r = radio([{"name": n, "transport": "tcp-server:127.0.0.1:0", "x": x, "tx_power": TX_POWER} for n, x in POSITIONS.items()],
              channel={"sigma": 0.0, "loss": 0.0})
    offset, fake_now = day_ahead_offset(tmp_path)
    env = faketime_env(offset)
    gaenctl = str(bin_dir / "gaenctl")

    # The placement plan from the inventory, as a trial makes it; the server's users are the boards'.
    trial = tmp_path / "trial-config"
    (tmp_path / "inventory.yml").write_text(inventory("http://127.0.0.1:1", time.time() // 86400 * 86400))
    p = subprocess.run([gaenctl, "trial", "provision", str(tmp_path / "inventory.yml"), "--out", str(trial), "--deploy", str(REPO / "deploy")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    passwords = {n: (trial / "boards" / n / "app-password").read_text().strip() for n in "abcd"}
    assert "OUTCOMES_CONSENT=no" in (trial / "boards" / "d" / "app.env").read_text()
    server = TrialServer(tmp_path, passwords, env=env)
    try:
        _, signing_pem, public_pem = new_signing_key(tmp_path, "trial")
        boards = {}
        for n in POSITIONS:
            boards[n] = nodes(n, r.ready["devices"][n]["connect"])
            boards[n].start()
        for node in boards.values():
            node.wait_scans(8, timeout=90)

        def run(*args, timeout=120):
            # One exec before gaenctl: libfaketime hides a Swift program's arguments otherwise.
            return subprocess.run(["nice", "-n", "0", gaenctl, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)

        def password_file(n: str) -> Path:
            f = tmp_path / f"{n}.password"
            f.write_text(passwords[n] + "\n")
            return f

        # Only a tested positive: its app uploads its keys.
        out = run("--bus", boards["a"].bus.address, "app", "submit", "--server", server.url, "--user", "a",
                  "--password-file", password_file("a"), "--consent", "yes", "--state-dir", tmp_path / "app-a")
        assert out.returncode == 0 and out.stdout.startswith("1 keys uploaded"), out.stdout + out.stderr
        config = tmp_path / "app-config.json"
        config.write_text(json.dumps(SWISSCOVID_ANY_CONTACT))
        pub = subprocess.run([gaenctl, "keys", "publish", "--inbox", str(server.srv / "inbox"), "-o", str(server.tree),
                              "--signing-key", str(signing_pem), "--key-id", "TRIAL", "--key-version", "1", "--country", "DE",
                              "--region", "DE-TRIAL", "--min-keys", "1", "--app-config", str(config), "--now", str(fake_now)],
                             capture_output=True, text=True)
        assert pub.returncode == 0 and pub.stdout.startswith("1 keys published"), pub.stdout + pub.stderr
        for n, node in boards.items():
            sync = run("--bus", node.bus.address, "app", "sync", "--server", server.keys_url, "--country", "DE",
                       "--trust", f"TRIAL:1={public_pem}", "--state-dir", tmp_path / f"app-{n}", "--journal-socket", tmp_path / "no-journal")
            assert sync.returncode == 0, sync.stdout + sync.stderr
        levels = {n: json.loads((tmp_path / f"app-{n}" / "status.json").read_text())["risk"]["level"] for n in POSITIONS}
        assert levels == {"a": "low", "b": "high", "c": "low"}, levels

        def collect(n: str, consent: str):
            return run("collect", "--bus", boards[n].bus.address, "--server", server.url + "/collect/", "--password-file", password_file(n),
                       "--spool", tmp_path / f"spool-{n}", "--outcomes", "--consent", consent, "--app-state", tmp_path / f"app-{n}")

        collected = server.srv / "collect"
        # Without consent nothing of the outcomes leaves the board (its days do).
        out = collect("c", "no")
        assert out.returncode == 0 and "outcomes of c not collected: no consent" in out.stdout, out.stdout + out.stderr
        assert not (collected / "board=c" / "outcomes").exists()
        for n in POSITIONS:
            out = collect(n, "yes")
            assert out.returncode == 0 and f"shipped board={n}/outcomes (4 files)" in out.stdout, out.stdout + out.stderr
        # nginx's rule for outcomes is the days': a board writes its own folder only, and nothing else under board=.
        assert server.put("/collect/board=b/outcomes/app.json", b"{}", "a", passwords["a"]) == 403
        assert server.put("/collect/board=a/elsewhere/app.json", b"{}", "a", passwords["a"]) == 404
        keys_a = json.loads((collected / "board=a" / "outcomes" / "keys.json").read_text())
        app_a = json.loads((collected / "board=a" / "outcomes" / "app.json").read_text())
        assert len(keys_a) >= 1 and app_a["board"] == "a" and app_a["submittedDays"], app_a
        app_b = json.loads((collected / "board=b" / "outcomes" / "app.json").read_text())
        assert app_b["risk"]["level"] == "high" and app_b["submittedDays"] == [] and app_b["windows"] >= 1, app_b

        report = tmp_path / "report"
        out = subprocess.run([gaenctl, "trial", "report", "--collected", str(collected), "--placement", str(trial / "placement.csv"),
                              "-o", str(report)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"notifications (15 min within 1.5 m): TP 1, FP 0, FN 0, TN 2, missing 1; notifications.csv in {report}", out.stdout
        with open(report / "notifications.csv") as f:
            rows = {row["board"]: row for row in csv.DictReader(f)}
        assert {b: row["verdict"] for b, row in rows.items()} == {"a": "TN", "b": "TP", "c": "TN", "d": "missing"}, rows
        assert rows["b"]["contact_board"] == "a" and float(rows["b"]["contact_distance_m"]) == 1.0
        assert float(rows["b"]["contact_minutes"]) >= 15 and rows["b"]["app_high_day"], rows["b"]
        # When b's contact met the criterion, and how long its app took to say so.
        delay = float(rows["b"]["notification_delay_hours"])
        assert rows["b"]["criterion_reached_at"].endswith("Z") and f" h {'before' if delay < 0 else 'after'} the contact reached the criterion" in rows["b"]["reason"], rows["b"]
        assert rows["c"]["criterion_reached_at"] == "" and rows["c"]["notification_delay_hours"] == ""
        assert rows["c"]["contact_distance_m"] == "3000.000" and rows["c"]["notified"] == "false"
        assert rows["d"]["outcomes"] == "no-consent" and rows["d"]["should_notify"] == "true"
        md = (report / "report.md").read_text()
        assert "## Was each board's notification right" in md and "| b | TP |" in md and "1 board missing (not counted)" in md, md
        # Two criteria at once: at 0.5 m b is too far.
        out = subprocess.run([gaenctl, "trial", "report", "--collected", str(collected), "--placement", str(trial / "placement.csv"),
                              "-o", str(report), "--contact-distance", "1.5", "--contact-distance", "0.5"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "notifications (15 min within 0.5 m): TP 0, FP 1, FN 0, TN 2, missing 1" in out.stdout, out.stdout
        # The server's check covers the outcomes as it covers the days; a changed file is named.
        out = subprocess.run([gaenctl, "trial", "verify", "--json", str(collected)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        verified = json.loads(out.stdout)
        assert {"board=a/outcomes", "board=b/outcomes"} <= set(verified["complete"]), verified
        assert not any(d.startswith("board=d/outcomes") for d in verified["complete"] + verified["incomplete"]), verified  # no consent
        app_json = collected / "board=b" / "outcomes" / "app.json"
        app_json.write_text(app_json.read_text().replace('"high"', '"low"'))
        out = subprocess.run([gaenctl, "trial", "verify", str(collected)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and "board=b/outcomes: corrupt" in out.stdout and "app.json" in out.stdout, out.stdout
    finally:
        server.stop()
